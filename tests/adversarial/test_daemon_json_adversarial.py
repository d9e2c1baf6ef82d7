# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adversarial tests of the daemon.json path: the model (_daemon_json.py) through the
file-edit transaction, and the docker_daemon_config module.

Real files in tmp_path: malformed files (refused with file:line:col, byte-identical
afterwards), hostile settings (refused naming settings.<key>), hostile values that are
valid JSON (written so that a strict reader takes them back), the file's own layout,
check mode, 20 concurrent writers, killed writers, deletions on a host without the file.
"""

import difflib
import json
import multiprocessing
import os
import signal
import stat
import time
from datetime import date
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _daemon_json as dj
from ansible_collections.hpc.gpu_containers.plugins.module_utils import _file_edit
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import (
    STALE_TEMP_AGE,
    FileEditError,
    edit_file,
)
from ansible_collections.hpc.gpu_containers.plugins.modules import docker_daemon_config
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules import module_runner

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "daemon_json"
FORK = multiprocessing.get_context("fork")
NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}, "default-runtime": "nvidia"}


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def merge_into(path, settings, remove=None, list_merge="append", **kwargs):
    """What docker_daemon_config does, without Ansible: one transaction on ``path``."""
    def compute(text):
        new_text, _merged, _changed, warnings = dj.compute(text, settings, list_merge, str(path), remove)
        return new_text, warnings
    return edit_file(str(path), compute, create=True, **kwargs)


def run_module(capsys, **args):
    args.setdefault("validate", "never")
    return module_runner.run_module(docker_daemon_config, capsys, **args)


def _state(directory):
    """Names, inodes, mtimes and bytes of everything in ``directory``."""
    out = {}
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        st = os.lstat(path)
        data = None
        if stat.S_ISREG(st.st_mode):
            with open(path, "rb") as handle:
                data = handle.read()
        out[name] = (st.st_ino, st.st_mtime_ns, data)
    return out


# --- malformed files: file:line:col, byte-identical afterwards ----------------------------

_DEEP_OBJECT = '{"a":' * 64 + "{}" + "}" * 64
MALFORMED = [
    ("trailing-comma-in-list", fixture("malformed-trailing-comma.json"), (5, 5), "malformed JSON: "),
    ("trailing-comma-in-object", '{\n  "debug": true,\n}\n', (3, 1), "malformed JSON: "),
    ("missing-comma", '{"debug": true\n "live-restore": true}\n', (2, 2), "malformed JSON: "),
    ("single-quotes", "{'debug': true}\n", (1, 2), "malformed JSON: "),
    ("line-comment", '{\n  // set by hand\n  "debug": true\n}\n', (2, 3), "malformed JSON: "),
    ("block-comment", '{"debug": true /* why */}\n', (1, 16), "malformed JSON: "),
    ("unterminated-string", '{"data-root": "/var/lib\n}\n', (1, 24), "malformed JSON: "),
    ("unterminated-object", '{"debug": true', (1, 15), "malformed JSON: "),
    ("two-documents", '{}\n{"debug": true}\n', (2, 1), "malformed JSON: Extra data"),
    ("raw-tab-in-string", '{"data-root": "/var/\tlib"}', (1, 21), "malformed JSON: "),
    ("bad-escape", '{"data-root": "C:\\docker"}', (1, 18), "malformed JSON: "),
    ("utf8-bom", '\ufeff{"debug": true}', (1, 1), "malformed JSON: "),
    ("leading-zero", '{"shutdown-timeout": 015}', (1, 23), "malformed JSON: "),
    ("hex-number", '{"shutdown-timeout": 0x1f}', (1, 23), "malformed JSON: "),
    ("unquoted-key", "{debug: true}", (1, 2), "malformed JSON: "),
    ("lone-brace", "}", (1, 1), "malformed JSON: "),
    ("nul-after-document", '{"debug": true}\x00', (1, 16), "malformed JSON: Extra data"),
    ("python-true", '{"debug": True}', (1, 11), "malformed JSON: "),
    ("nan", '{\n  "max-concurrent-downloads": NaN\n}\n', (2, 31), "NaN is not a JSON number"),
    ("infinity", '{"log-opts": {"max-size": Infinity}}', (1, 27), "Infinity is not a JSON number"),
    ("minus-infinity-in-list", '{"x": [1, 2, -Infinity]}', (1, 14), "-Infinity is not a JSON number"),
    ("float-overflow", '{"shutdown-timeout": 1e400}', (1, 22), "number 1e400 is out of range"),
    ("negative-float-overflow", '{"a": [0, -2.5e999]}', (1, 11), "number -2.5e999 is out of range"),
    ("huge-integer", '{\n"a": %s}' % ("7" * 5000), (2, 6), "number with 5000 digits is too long"),
    ("nested-65-objects", '{"a":' + _DEEP_OBJECT + "}", (1, 64 * 5 + 1), "nested deeper than 64 levels"),
    ("nested-100000-arrays", "[" * 100000 + "]" * 100000, (1, 65), "nested deeper than 64 levels"),
    ("nested-arrays-in-object", '{"a": ' + "[" * 70 + "]" * 70 + "}", (1, 70), "nested deeper than 64 levels"),
    ("top-level-list", fixture("top-level-list.json"), (1, 1), "top level must be a JSON object, found an array"),
    ("top-level-string", '"debug"\n', (1, 1), "top level must be a JSON object, found a string"),
    ("top-level-null", "null", (1, 1), "top level must be a JSON object, found null"),
    ("top-level-number", "42\n", (1, 1), "top level must be a JSON object, found a number"),
]


@pytest.mark.parametrize("text, where, message", [case[1:] for case in MALFORMED], ids=[case[0] for case in MALFORMED])
def test_malformed_file_is_refused_with_location_and_left_byte_identical(tmp_path, text, where, message):
    path = tmp_path / "daemon.json"
    path.write_bytes(text.encode("utf-8"))
    os.chmod(path, 0o640)
    before = _state(tmp_path)

    with pytest.raises(FileEditError) as err:
        merge_into(path, NVIDIA, backup=True)

    assert str(err.value).startswith("%s:%d:%d: %s" % ((path,) + where + (message,)))
    assert _state(tmp_path) == before


def test_deep_but_allowed_file_is_merged(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"labels": ' + "[" * 63 + "]" * 63 + "}\n")
    assert merge_into(path, {"debug": True}).changed is True
    assert json.loads(path.read_text())["debug"] is True


@pytest.mark.parametrize("size, ok", [(dj.MAX_SIZE, True), (dj.MAX_SIZE + 1, False)])
def test_size_limit_is_exact(tmp_path, size, ok):
    path = tmp_path / "daemon.json"
    head = '{"labels": ["'
    text = head + "x" * (size - len(head) - 4) + '"]}\n'
    assert len(text.encode()) == size
    path.write_text(text)
    if ok:
        assert dj.parse(text)
        return
    before = _state(tmp_path)
    with pytest.raises(FileEditError) as err:
        merge_into(path, {"debug": True})
    assert str(err.value) == "%s: file is %d bytes, more than the 1048576-byte limit" % (path, size)
    assert _state(tmp_path) == before


def test_invalid_utf8_file_is_refused_untouched(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_bytes(b'{"data-root": "/srv/d\xf6cker"}\n')
    before = _state(tmp_path)
    with pytest.raises(FileEditError) as err:
        merge_into(path, {"debug": True})
    assert str(err.value) == "%s: file is not valid UTF-8 (byte offset 21)" % path
    assert _state(tmp_path) == before


# --- hostile settings: refused, naming the key -----------------------------------------------

class _Opaque:
    pass


_DEEP_SETTINGS = current = {}
for _level in range(64):
    current["k"] = {}
    current = current["k"]

HOSTILE_SETTINGS = [
    ("nan", {"max-concurrent-uploads": float("nan")}, None, "settings.max-concurrent-uploads: NaN is not a JSON number"),
    ("infinity", {"log-opts": {"max-size": float("inf")}}, None, "settings.log-opts.max-size: Infinity is not a JSON number"),
    ("minus-infinity", {"x": -float("inf")}, None, "settings.x: -Infinity is not a JSON number"),
    ("nan-in-list", {"dns": ["1.1.1.1", float("nan")]}, None, "settings.dns[1]: NaN is not a JSON number"),
    ("nan-deep-in-list", {"a": [{"b": [0, {"c": float("nan")}]}]}, None, "settings.a[0].b[1].c: NaN is not a JSON number"),
    ("set", {"dns": {"1.1.1.1"}}, None, "settings.dns: a set is not a JSON value"),
    ("bytes", {"data-root": b"/var/lib/docker"}, None, "settings.data-root: a bytes is not a JSON value"),
    ("date", {"labels": [date(2024, 1, 1)]}, None, "settings.labels[0]: a date is not a JSON value"),
    ("object", {"x": _Opaque()}, None, "settings.x: a _Opaque is not a JSON value"),
    ("integer-key", {"log-opts": {3: "x"}}, None, "settings.log-opts: key 3 is not a string"),
    ("none-key", {None: 1}, None, "settings: key None is not a string"),
    ("tuple-key", {("a", "b"): 1}, None, "settings: key ('a', 'b') is not a string"),
    ("huge-integer", {"x": 10 ** 5000}, None, "settings.x: number with more than 4300 digits is too long"),
    ("nested-65-levels", _DEEP_SETTINGS, None, "settings" + ".k" * 64 + ": nested deeper than 64 levels"),
    ("settings-not-an-object", ["debug"], None, "settings: must be an object"),
    ("remove-string", {}, {"insecure-registries": "head01:5000"},
     "remove.insecure-registries: must be a list of items to remove or an object"),
    ("remove-null", {}, {"insecure-registries": None}, "remove.insecure-registries: must be a list of items to remove or an object"),
    ("remove-number", {}, {"a": {"b": 5}}, "remove.a.b: must be a list of items to remove or an object"),
    ("remove-nan-item", {}, {"dns": [float("nan")]}, "remove.dns[0]: NaN is not a JSON number"),
    ("remove-integer-key", {}, {1: ["x"]}, "remove: key 1 is not a string"),
    ("remove-not-an-object", {}, ["insecure-registries"], "remove: must be an object"),
    ("add-and-remove-same-item", {"insecure-registries": ["a:5000", "b:5000"]}, {"insecure-registries": ["b:5000"]},
     "remove.insecure-registries: b:5000 is also in settings.insecure-registries"),
    ("add-and-remove-same-nested-item", {"runtimes": {"nvidia": {"runtimeArgs": [{"x": 1}]}}},
     {"runtimes": {"nvidia": {"runtimeArgs": [{"x": 1.0}]}}},
     'remove.runtimes.nvidia.runtimeArgs: {"x": 1.0} is also in settings.runtimes.nvidia.runtimeArgs'),
]


@pytest.mark.parametrize("settings, remove, message", [case[1:] for case in HOSTILE_SETTINGS], ids=[case[0] for case in HOSTILE_SETTINGS])
def test_hostile_settings_are_refused_naming_the_key(tmp_path, settings, remove, message):
    path = tmp_path / "daemon.json"
    path.write_text(fixture("nvidia-docker2-2.0.3.json"))
    before = _state(tmp_path)
    with pytest.raises(FileEditError) as err:
        merge_into(path, settings, remove)
    assert str(err.value) == message
    assert _state(tmp_path) == before


def test_settings_that_would_grow_the_file_past_the_limit_are_refused(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(fixture("nvidia-docker2-2.0.3.json"))
    before = _state(tmp_path)
    with pytest.raises(FileEditError) as err:
        merge_into(path, {"labels": ["x" * (600 << 10), "y" * (600 << 10)]})
    assert str(err.value).startswith("%s: the merged file would be " % path)
    assert str(err.value).endswith(" bytes, more than the 1048576-byte limit")
    assert _state(tmp_path) == before


def test_hostile_settings_fail_the_module_cleanly(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    res = run_module(capsys, path=str(path), settings={"log-opts": {"max-size": float("inf")}})
    assert res["failed"] is True
    assert res["msg"] == "settings.log-opts.max-size: Infinity is not a JSON number"
    assert os.listdir(tmp_path) == []


# --- hostile values that are valid JSON: written so a strict reader takes them back --------

HOSTILE_VALUES = [
    ("quote-in-key", {'lab"el': "x"}),
    ("newline-in-key", {"a\nb": "x"}),
    ("backslash-in-key", {"C:\\docker": "x"}),
    ("empty-key", {"": "x"}),
    ("dotted-key", {"log-opts": {"a.b": "x"}}),
    ("proto-key", {"__proto__": {"polluted": True}}),
    ("non-ascii-key-and-value", {"ключ": "значение", "emoji": "\U0001f433"}),
    ("control-characters", {"labels": ["\x00", "\x1f", "\x7f", "\u2028"]}),
    ("lone-surrogate", {"labels": ["\ud800", "x\udfffy"]}),
    ("long-string", {"labels": ["z" * (200 << 10)]}),
    ("longest-integer", {"x": int("9" * 4300)}),
    ("extreme-floats", {"x": [1e308, -1e308, 5e-324, -0.0]}),
    ("many-items", {"dns": ["10.%d.%d.1" % (i // 250, i % 250) for i in range(5000)]}),
    ("deep-but-allowed", {"a": json.loads("[" * 62 + "]" * 62)}),
    ("json-in-a-string", {"x": '{"injected": true}'}),
    ("closing-brace-in-string", {"x": "}\n]\n"}),
]


@pytest.mark.parametrize("settings", [case[1] for case in HOSTILE_VALUES], ids=[case[0] for case in HOSTILE_VALUES])
def test_hostile_values_round_trip_through_a_strict_reader(tmp_path, settings):
    path = tmp_path / "daemon.json"
    original = fixture("nvidia-docker2-2.0.3.json")
    path.write_text(original)

    result = merge_into(path, settings)

    assert result.changed is True
    raw = path.read_bytes()
    text = raw.decode("utf-8")  # valid UTF-8, no lone surrogate
    doc = json.loads(text, parse_constant=lambda name: pytest.fail("non-finite number %s written" % name))
    merged = dj.merge(json.loads(original), settings)[0]
    assert dj.json_equal(doc, merged)
    assert text.startswith(original[:original.rindex("\n}")])  # the original lines are untouched
    assert merge_into(path, settings).changed is False  # and a rerun agrees


# --- the file's own layout ----------------------------------------------------------------------

def _changed_lines(before, after):
    """Lines of ``before`` that are not in ``after`` (replaced or deleted)."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(True), after.splitlines(True), autojunk=False)
    return sum(i2 - i1 for tag, i1, i2, _j1, _j2 in matcher.get_opcodes() if tag in ("replace", "delete"))


def _restyle(name, **dumps):
    return json.dumps(json.loads(fixture(name)), **dumps) + "\n"


LAYOUTS = [
    ("4-spaces-add", fixture("nvidia-docker2-2.0.3.json"), {"default-runtime": "nvidia"}, None, 1),
    ("2-spaces-add", _restyle("nvidia-docker2-2.0.3.json", indent=2), {"default-runtime": "nvidia"}, None, 1),
    ("tabs-add", _restyle("nvidia-docker2-2.0.3.json", indent="\t"), {"default-runtime": "nvidia"}, None, 1),
    ("crlf-add", fixture("nvidia-docker2-2.0.3.json").replace("\n", "\r\n"), {"default-runtime": "nvidia"}, None, 1),
    ("no-final-newline-add", fixture("nvidia-ctk-set-as-default-cdi.json"), {"live-restore": True}, None, 1),
    ("change-nested-value", fixture("nvidia-docker2-2.0.3.json"),
     {"runtimes": {"nvidia": {"path": "/usr/local/bin/nvidia-container-runtime"}}}, None, 1),
    ("delete-middle-key", fixture("nvidia-ctk-set-as-default-cdi.json"), {"features": None}, None, 3),
    ("remove-list-item", '{\n  "insecure-registries": [\n    "10.0.0.0/8",\n    "head01:5000"\n  ],\n  "debug": true\n}\n',
     {}, {"insecure-registries": ["head01:5000"]}, 2),
    ("compact-add", fixture("site-compact.json"), {"debug": True}, None, 1),
    ("compact-remove-last-item", fixture("site-compact.json"), {}, {"insecure-registries": ["10.0.0.0/8"]}, 1),
]


@pytest.mark.parametrize("original, settings, remove, most", [case[1:] for case in LAYOUTS], ids=[case[0] for case in LAYOUTS])
def test_a_change_touches_only_the_lines_it_must(tmp_path, original, settings, remove, most):
    path = tmp_path / "daemon.json"
    path.write_bytes(original.encode())
    result = merge_into(path, settings, remove)
    after = path.read_bytes().decode()
    assert result.changed is True
    assert _changed_lines(original, after) <= most
    assert after.endswith("\n") == original.endswith("\n")
    if "\r\n" in original:
        assert "\n" not in after.replace("\r\n", "")  # no bare newline in a CRLF file
    if original.count("\n") <= 1:
        assert after.count("\n") == original.count("\n")  # a one-line file stays one line
    assert dj.json_equal(json.loads(after), dj.remove_items(dj.merge(json.loads(original), settings)[0], remove or {})[0])


# --- check mode predicts the real run exactly and writes nothing ----------------------------

CHECK_SCENARIOS = [
    ("add-to-existing", fixture("nvidia-docker2-2.0.3.json"), {"settings": {"default-runtime": "nvidia"}}, True),
    ("create-absent", None, {"settings": NVIDIA}, True),
    ("delete-only-on-absent", None, {"settings": {"experimental": None}}, False),
    ("remove-on-absent", None, {"remove": {"insecure-registries": ["head01:5000"]}}, False),
    ("remove-item", '{"insecure-registries": ["a:5000", "head01:5000"]}\n', {"remove": {"insecure-registries": ["head01:5000"]}}, True),
    ("equal-json-other-layout", fixture("nvidia-ctk-set-as-default-cdi.json"),
     {"settings": {"features": {"cdi": True}, "default-runtime": "nvidia"}}, False),
    ("change-compact", fixture("site-compact.json"), {"settings": {"log-opts": {"max-file": "5"}}}, True),
]


@pytest.mark.parametrize("original, args, changes", [case[1:] for case in CHECK_SCENARIOS], ids=[case[0] for case in CHECK_SCENARIOS])
def test_check_mode_predicts_exactly_and_writes_nothing(tmp_path, capsys, original, args, changes):
    path = tmp_path / "daemon.json"
    if original is not None:
        path.write_text(original)
    before = _state(tmp_path)
    tmp_mtime = os.stat(tmp_path).st_mtime_ns

    check = run_module(capsys, path=str(path), _ansible_check_mode=True, _ansible_diff=True, **args)

    assert _state(tmp_path) == before and os.stat(tmp_path).st_mtime_ns == tmp_mtime
    assert check["changed"] is changes and check["restart_required"] is changes
    real = run_module(capsys, path=str(path), _ansible_diff=True, **args)
    assert real["changed"] is changes
    assert (real["changed_keys"], real["config"]) == (check["changed_keys"], check["config"])
    if changes:
        assert path.read_text() == check["diff"]["after"] == real["diff"]["after"]
    else:
        assert _state(tmp_path) == before


# --- deletions on a host without daemon.json: no file, no restart ----------------------------

@pytest.mark.parametrize("settings, remove", [
    ({"experimental": None}, None),
    ({"log-opts": {"max-size": None}, "debug": None}, None),
    ({}, {"insecure-registries": ["head01:5000"]}),
    ({"runtimes": {"nvidia": None}}, {"runtimes": {"nvidia": {"runtimeArgs": ["--debug"]}}}),
])
def test_deletions_on_an_absent_file_create_nothing(tmp_path, settings, remove):
    path = tmp_path / "daemon.json"
    result = merge_into(path, settings, remove)
    assert result.changed is False and result.created is False
    assert os.listdir(tmp_path) == []


def test_deleting_an_absent_key_leaves_the_file_untouched(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(fixture("site-compact.json"))
    before = _state(tmp_path)
    assert merge_into(path, {"experimental": None, "log-opts": {"labels": None}}).changed is False
    assert _state(tmp_path) == before


# --- 20 concurrent writers -------------------------------------------------------------------

def _merge_in_child(path, settings, barrier):
    barrier.wait(30)
    merge_into(path, settings, lock_timeout=120)
    os._exit(0)


@pytest.mark.parametrize("scenario", ["existing-file", "absent-file", "same-list"])
def test_twenty_concurrent_writers_lose_no_update(tmp_path, scenario):
    path = tmp_path / "daemon.json"
    if scenario != "absent-file":
        path.write_text(fixture("nvidia-ctk-set-as-default-cdi.json"))
    writers = 20
    if scenario == "same-list":
        wanted = [{"insecure-registries": ["reg%02d:5000" % i]} for i in range(writers)]
    else:
        wanted = [{"key-%02d" % i: {"writer": i}} for i in range(writers)]
    barrier = FORK.Barrier(writers)
    procs = [FORK.Process(target=_merge_in_child, args=(str(path), wanted[i], barrier)) for i in range(writers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(180)
    assert [proc.exitcode for proc in procs] == [0] * writers
    doc = json.loads(path.read_text())
    if scenario == "same-list":
        assert sorted(doc["insecure-registries"]) == ["reg%02d:5000" % i for i in range(writers)]
    else:
        assert all(doc["key-%02d" % i] == {"writer": i} for i in range(writers))
    if scenario != "absent-file":
        assert doc["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"  # the other tool's keys survive
    assert os.listdir(tmp_path) == ["daemon.json"]


# --- killed writers -----------------------------------------------------------------------------

def _merge_and_die(path):
    _file_edit._before_rename = lambda tmp_path, dest: os.kill(os.getpid(), signal.SIGKILL)
    merge_into(path, NVIDIA)
    os._exit(0)  # not reached


def test_writer_killed_before_the_rename_leaves_the_old_file_and_the_next_run_cleans_up(tmp_path):
    path = tmp_path / "daemon.json"
    original = fixture("site-compact.json")
    path.write_text(original)
    child = FORK.Process(target=_merge_and_die, args=(str(path),))
    child.start()
    child.join(30)
    assert child.exitcode == -signal.SIGKILL
    assert path.read_text() == original
    (temp,) = [name for name in os.listdir(tmp_path) if name != "daemon.json"]
    assert temp.startswith(".daemon.json.") and temp.endswith(".tmp")
    os.utime(tmp_path / temp, (time.time() - 2 * STALE_TEMP_AGE,) * 2)
    result = merge_into(path, NVIDIA)
    assert result.changed is True and result.warnings == ["%s: removed %s, left by an interrupted run" % (path, tmp_path / temp)]
    assert os.listdir(tmp_path) == ["daemon.json"]
    assert dj.json_equal(json.loads(path.read_text()), dj.merge(json.loads(original), NVIDIA)[0])


def _toggle_forever(path):
    while True:
        doc = json.loads(Path(path).read_text())
        merge_into(path, {"debug": not doc.get("debug", False)})


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.1])
def test_writer_killed_at_a_random_moment_leaves_valid_json(tmp_path, delay):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"labels": ["l%06d" % i for i in range(60000)], "debug": False}, indent=2) + "\n")
    child = FORK.Process(target=_toggle_forever, args=(str(path),))
    child.start()
    time.sleep(delay)
    child.kill()
    child.join(10)
    doc = json.loads(path.read_text())
    assert len(doc["labels"]) == 60000 and isinstance(doc["debug"], bool)


# --- targets that are not regular files, through the module --------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "char-device"])
def test_daemon_json_linked_to_a_non_regular_file_is_refused(tmp_path, capsys, kind):
    node = tmp_path / "node"
    if kind == "fifo":
        os.mkfifo(node)
        name = "FIFO"
    else:
        try:
            os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a private null device
        except OSError as err:
            pytest.skip("cannot create a device node here: %s" % err.strerror)
        name = "character device"
    path = tmp_path / "daemon.json"
    path.symlink_to(node)
    res = run_module(capsys, path=str(path), settings=NVIDIA, backup=True)
    assert res["failed"] is True
    assert res["msg"] == "%s: not a regular file (%s %s)" % (path, name, node)
    assert sorted(os.listdir(tmp_path)) == ["daemon.json", "node"]
    assert stat.S_IFMT(os.lstat(node).st_mode) == (stat.S_IFIFO if kind == "fifo" else stat.S_IFCHR)
