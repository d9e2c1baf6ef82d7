# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The daemon.json model: parse errors, deep merge, semantic no-op."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings as hyp_settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _daemon_json as dj
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "daemon_json"

NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}}


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_absent_file_becomes_the_settings_rendered_with_four_spaces_and_newline():
    text, merged, changed, warnings = dj.compute(None, NVIDIA)
    assert text == ('{\n    "runtimes": {\n        "nvidia": {\n            "path": "nvidia-container-runtime",\n'
                    '            "runtimeArgs": []\n        }\n    }\n}\n')
    assert merged == NVIDIA
    assert changed == ["runtimes"]
    assert warnings == []


def test_blank_file_is_an_empty_object():
    assert dj.parse("  \n") == {}
    text, _m, changed, _w = dj.compute("\n", {"live-restore": True})
    assert json.loads(text) == {"live-restore": True}
    assert changed == ["live-restore"]


def test_nvidia_ctk_output_is_not_rewritten_when_equal_as_json():
    original = fixture("nvidia-ctk-set-as-default-cdi.json")
    assert not original.endswith("\n")
    wanted = {"default-runtime": "nvidia", "features": {"cdi": True},
              "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}
    text, merged, changed, _w = dj.compute(original, wanted)
    assert text is original
    assert changed == []
    assert merged == json.loads(original)


def test_compact_site_file_untouched_on_rerun_but_merged_when_needed():
    original = fixture("site-compact.json")
    same = {"live-restore": True, "log-opts": {"max-file": "3"}, "insecure-registries": ["10.0.0.0/8"]}
    assert dj.compute(original, same)[0] is original
    text, merged, changed, _w = dj.compute(original, {"insecure-registries": ["head01:5000"], **NVIDIA})
    assert merged["insecure-registries"] == ["10.0.0.0/8", "head01:5000"]
    assert changed == ["insecure-registries", "runtimes"]
    # every key nobody asked about survives, in its original order
    assert list(merged)[:5] == ["data-root", "insecure-registries", "log-driver", "log-opts", "live-restore"]
    assert merged["log-opts"] == {"max-size": "100m", "max-file": "3"}
    # a compact file stays one compact line
    assert text == json.dumps(merged, separators=(",", ":")) + "\n"


def test_merge_into_nvidia_ctk_file_keeps_other_runtimes_and_features():
    original = json.loads(fixture("nvidia-ctk-set-as-default-cdi.json"))
    original["runtimes"]["crun"] = {"path": "/usr/bin/crun"}
    merged, changed = dj.merge(original, {"runtimes": {"nvidia": {"runtimeArgs": [], "args": None}}})
    assert merged["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "runtimeArgs": []}
    assert merged["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert merged["features"] == {"cdi": True}
    assert changed == ["runtimes.nvidia.runtimeArgs", "runtimes.nvidia.args"]


def test_null_deletes_at_any_depth_and_absent_null_is_no_change():
    current = {"a": {"b": {"c": 1, "d": 2}}, "e": 3}
    merged, changed = dj.merge(current, {"a": {"b": {"c": None}}, "e": None, "zz": None})
    assert merged == {"a": {"b": {"d": 2}}}
    assert changed == ["a.b.c", "e"]
    assert current == {"a": {"b": {"c": 1, "d": 2}}, "e": 3}  # input not mutated


def test_new_object_drops_its_null_leaves():
    merged, changed = dj.merge({}, {"log-opts": {"max-size": "10m", "labels": None}})
    assert merged == {"log-opts": {"max-size": "10m"}}
    assert changed == ["log-opts"]


def test_list_union_keeps_order_and_dedups_and_replace_replaces():
    current = {"insecure-registries": ["a:5000", "b:5000"]}
    merged, changed = dj.merge(current, {"insecure-registries": ["b:5000", "c:5000", "c:5000"]})
    assert merged["insecure-registries"] == ["a:5000", "b:5000", "c:5000"]
    assert changed == ["insecure-registries"]
    merged, changed = dj.merge(current, {"insecure-registries": ["b:5000"]})
    assert merged == current and changed == []
    merged, changed = dj.merge(current, {"insecure-registries": ["c:5000"]}, list_merge="replace")
    assert merged["insecure-registries"] == ["c:5000"]
    assert changed == ["insecure-registries"]


def test_scalar_replaced_by_object_and_object_by_scalar():
    merged, changed = dj.merge({"features": True}, {"features": {"cdi": True}})
    assert merged == {"features": {"cdi": True}} and changed == ["features"]
    merged, changed = dj.merge({"features": {"cdi": True}}, {"features": False})
    assert merged == {"features": False} and changed == ["features"]


def test_true_is_not_one_and_one_is_one_point_zero():
    assert not dj.json_equal(True, 1)
    assert not dj.json_equal({"a": [1]}, {"a": [True]})
    assert dj.json_equal(1, 1.0)
    assert not dj.json_equal("1", 1)
    merged, changed = dj.merge({"debug": 1}, {"debug": True})
    assert changed == ["debug"] and merged["debug"] is True


def test_malformed_file_reports_path_line_column():
    with pytest.raises(FileEditError) as err:
        dj.compute(fixture("malformed-trailing-comma.json"), NVIDIA, path="/etc/docker/daemon.json")
    assert str(err.value).startswith("/etc/docker/daemon.json:5:5: malformed JSON: Expecting value")


def test_top_level_must_be_an_object():
    with pytest.raises(FileEditError, match="top level must be a JSON object, found an array"):
        dj.parse(fixture("top-level-list.json"), "x.json")


def test_duplicate_keys_warn_and_last_wins():
    warnings = []
    doc = dj.parse('{"debug": false, "debug": true}', "d.json", warnings)
    assert doc == {"debug": True}
    assert warnings == ["d.json: key 'debug' appears more than once; the last one wins"]


def test_bad_list_merge_mode():
    with pytest.raises(ValueError):
        dj.merge({}, {}, list_merge="union")


_json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", min_size=1, max_size=2), inner, max_size=3),
    max_leaves=8)
_docs = st.dictionaries(st.text("abc", min_size=1, max_size=2), _json, max_size=4)


@hyp_settings(max_examples=300, deadline=None)
@given(current=_docs, wanted=_docs, mode=st.sampled_from(["append", "replace"]))
def test_merge_is_idempotent_and_reports_exactly_when_it_changes(current, wanted, mode):
    text = dj.render(current)
    new_text, merged, changed, _w = dj.compute(text, wanted, mode)
    assert json.loads(new_text) == merged or dj.json_equal(json.loads(new_text), merged)
    assert (new_text is text) == (changed == [])
    # a second run with the same settings changes nothing
    again, merged2, changed2, _w = dj.compute(new_text, wanted, mode)
    assert again is new_text and changed2 == []
    assert dj.json_equal(merged2, merged)


# --- delete-only settings on an absent file -------------------------------------

@pytest.mark.parametrize("settings", [{"foo": None}, {"log-opts": {"max-size": None}}, {"a": {"b": {"c": None}}, "d": None}])
def test_delete_only_settings_on_absent_file_write_nothing(settings):
    text, merged, changed, _w = dj.compute(None, settings)
    assert text is None and merged == {} and changed == []


def test_deleting_below_a_key_that_is_absent_or_not_an_object_is_no_change():
    merged, changed = dj.merge({"features": True}, {"features": {"cdi": None}, "log-opts": {"max-size": None}})
    assert merged == {"features": True} and changed == []


# --- the file keeps its own layout ----------------------------------------------

def _restyle(name, **dumps):
    return json.dumps(json.loads(fixture(name)), **dumps) + "\n"


@pytest.mark.parametrize("dumps", [
    {"indent": 2}, {"indent": 4}, {"indent": "\t"}, {"indent": 3},
    {"separators": (",", ":")}, {"separators": (", ", ": ")},
], ids=["2-spaces", "4-spaces", "tabs", "3-spaces", "compact", "compact-spaced"])
@pytest.mark.parametrize("name", ["nvidia-docker2-2.0.3.json", "site-compact.json", "nvidia-ctk-set-as-default-cdi.json"])
def test_a_change_keeps_the_files_indentation_and_separators(name, dumps):
    original = _restyle(name, **dumps)
    wanted = {"insecure-registries": ["head01:5000"], "runtimes": {"nvidia": {"runtimeArgs": ["--debug"]}}}
    text, merged, changed, _w = dj.compute(original, wanted)
    assert changed
    assert text == json.dumps(merged, **dumps) + "\n"


def test_unchanged_lines_stay_byte_identical_in_a_hand_formatted_file():
    original = ('{\n'
                '  "data-root": "/scratch/docker",\n'
                '  "insecure-registries": ["10.0.0.0/8", "head01:5000"],\n'
                '  "log-opts": {"max-size": "100m", "max-file": "3"},\n'
                '  "shutdown-timeout": 1.50\n'
                '}\n')
    text, merged, changed, _w = dj.compute(original, {"live-restore": True, "log-opts": {"max-file": "5"},
                                                      "insecure-registries": ["reg:5000"]})
    assert changed == ["live-restore", "log-opts.max-file", "insecure-registries"]
    assert text == ('{\n'
                    '  "data-root": "/scratch/docker",\n'
                    '  "insecure-registries": ["10.0.0.0/8", "head01:5000", "reg:5000"],\n'
                    '  "log-opts": {"max-size": "100m", "max-file": "5"},\n'
                    '  "shutdown-timeout": 1.50,\n'
                    '  "live-restore": true\n'
                    '}\n')
    assert json.loads(text) == merged


def test_missing_final_newline_and_ascii_escapes_are_kept():
    original = fixture("nvidia-ctk-set-as-default-cdi.json").replace('"nvidia",', '"nvidia",\n    "labels": ["caf\\u00e9"],')
    text, merged, _c, _w = dj.compute(original, {"labels": ["th\u00e9"]})
    assert not text.endswith("\n")
    assert '\n    "labels": ["caf\\u00e9", "th\\u00e9"],\n' in text
    assert merged["labels"] == ["caf\u00e9", "th\u00e9"]


def test_removing_the_last_member_keeps_the_rest_verbatim():
    original = fixture("nvidia-ctk-set-as-default-cdi.json")
    text, _m, changed, _w = dj.compute(original, {"runtimes": None})
    assert changed == ["runtimes"]
    assert text == '{\n    "default-runtime": "nvidia",\n    "features": {\n        "cdi": true\n    }\n}'


# --- hostile JSON: non-finite numbers, depth, size ------------------------------

@pytest.mark.parametrize("text, where, what", [
    ('{\n  "a": NaN\n}', "2:8", "NaN is not a JSON number"),
    ('{\n  "a": [1, Infinity]\n}', "2:12", "Infinity is not a JSON number"),
    ('{"a": {"b": -Infinity}}', "1:13", "-Infinity is not a JSON number"),
    ('{"a": 1e999}', "1:7", "number 1e999 is out of range"),
    ('{"a": %s}' % ("9" * 5000), "1:7", "number with 5000 digits is too long"),
])
def test_non_finite_and_oversized_numbers_are_refused_with_location(text, where, what):
    with pytest.raises(FileEditError) as err:
        dj.parse(text, "/etc/docker/daemon.json")
    assert str(err.value) == "/etc/docker/daemon.json:%s: %s" % (where, what)


@pytest.mark.parametrize("depth, ok", [(64, True), (65, False), (100000, False)])
def test_nesting_is_limited_to_64_levels(depth, ok):
    text = '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)
    if ok:
        assert dj.parse(text, "d.json")
        return
    with pytest.raises(FileEditError) as err:
        dj.parse(text, "d.json")
    assert str(err.value) == "d.json:1:%d: nested deeper than 64 levels" % (64 * 5 + 1)


def test_files_larger_than_one_mebibyte_are_refused():
    text = '{"labels": ["%s"]}' % ("x" * (1 << 20))
    with pytest.raises(FileEditError) as err:
        dj.parse(text, "d.json")
    assert str(err.value) == "d.json: file is %d bytes, more than the 1048576-byte limit" % len(text)


@pytest.mark.parametrize("settings, message", [
    ({"a": float("nan")}, "settings.a: NaN is not a JSON number"),
    ({"a": {"b": [1, float("inf")]}}, "settings.a.b[1]: Infinity is not a JSON number"),
    ({"a": -float("inf")}, "settings.a: -Infinity is not a JSON number"),
    ({"a": {1: "x"}}, "settings.a: key 1 is not a string"),
    ({"a": {"b": {1, 2}}}, "settings.a.b: a set is not a JSON value"),
    ({"a": 10 ** 5000}, "settings.a: number with more than 4300 digits is too long"),
])
def test_hostile_settings_are_refused_with_the_key(settings, message):
    with pytest.raises(FileEditError) as err:
        dj.compute("{}\n", settings)
    assert str(err.value) == message


def test_settings_nesting_and_merged_size_are_limited():
    deep = {}
    node = deep
    for dummy in range(64):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(FileEditError, match=r"^settings\.k(\.k)*: nested deeper than 64 levels$"):
        dj.compute("{}\n", deep)
    with pytest.raises(FileEditError) as err:
        dj.compute("{}\n", {"labels": ["x" * (1 << 20)]}, path="d.json")
    assert str(err.value).startswith("d.json: the merged file would be ")
    assert str(err.value).endswith(" bytes, more than the 1048576-byte limit")


def test_lone_surrogates_are_written_as_escapes():
    text, merged, _c, _w = dj.compute('{"a": "\\ud800"}\n', {"b": "\ud800x"})
    text.encode("utf-8")
    assert json.loads(text) == merged == {"a": "\ud800", "b": "\ud800x"}


# --- removing list items ----------------------------------------------------------

def test_remove_takes_items_out_and_keeps_other_tools_entries():
    original = fixture("site-compact.json").replace('["10.0.0.0/8"]', '["10.0.0.0/8", "head01:5000"]')
    text, merged, changed, _w = dj.compute(original, {}, remove={"insecure-registries": ["head01:5000", "gone:1"]})
    assert merged["insecure-registries"] == ["10.0.0.0/8"]
    assert changed == ["insecure-registries"]
    assert text == fixture("site-compact.json")
    assert dj.compute(text, {}, remove={"insecure-registries": ["head01:5000"]})[0] is text


def test_remove_that_empties_a_list_drops_the_key_and_absent_keys_are_no_change():
    text, merged, changed, _w = dj.compute('{"insecure-registries": ["head01:5000"], "debug": true}\n', {},
                                           remove={"insecure-registries": ["head01:5000"], "registry-mirrors": ["x"],
                                                   "debug": ["true"], "runtimes": {"nvidia": {"runtimeArgs": ["-x"]}}})
    assert merged == {"debug": True} and changed == ["insecure-registries"]
    assert text == '{"debug": true}\n'
    assert dj.compute(None, {}, remove={"insecure-registries": ["head01:5000"]})[0] is None


def test_remove_reaches_nested_lists():
    current = {"runtimes": {"nvidia": {"path": "x", "runtimeArgs": ["--debug", "--quiet"]}}}
    merged, changed = dj.remove_items(current, {"runtimes": {"nvidia": {"runtimeArgs": ["--debug"]}}})
    assert merged == {"runtimes": {"nvidia": {"path": "x", "runtimeArgs": ["--quiet"]}}}
    assert changed == ["runtimes.nvidia.runtimeArgs"]


@pytest.mark.parametrize("remove, message", [
    ({"insecure-registries": "head01:5000"}, "remove.insecure-registries: must be a list of items to remove or an object"),
    ({"a": {"b": None}}, "remove.a.b: must be a list of items to remove or an object"),
    ({"insecure-registries": ["head01:5000"]}, "remove.insecure-registries: head01:5000 is also in settings.insecure-registries"),
])
def test_bad_remove_is_refused(remove, message):
    with pytest.raises(FileEditError) as err:
        dj.compute("{}\n", {"insecure-registries": ["head01:5000"]}, remove=remove)
    assert str(err.value) == message


_STYLES = [{"indent": 2}, {"indent": 4}, {"indent": "\t"}, {"separators": (",", ":")}, {"separators": (", ", ": ")}]


@hyp_settings(max_examples=300, deadline=None)
@given(current=_docs.filter(bool), wanted=_docs, removed=_docs, mode=st.sampled_from(["append", "replace"]),
       style=st.sampled_from(_STYLES), newline=st.sampled_from(["\n", ""]))
def test_a_spliced_change_equals_a_full_render_in_the_files_style(current, wanted, removed, mode, style, newline):
    """For a file in a standard layout, splicing the change in gives exactly what
    rendering the merged document in that layout gives."""
    text = json.dumps(current, **style) + newline
    remove = {key: value for key, value in removed.items() if isinstance(value, list) and key not in wanted}
    new_text, merged, changed, _w = dj.compute(text, wanted, mode, remove=remove)
    if changed:
        assert new_text == json.dumps(merged, **style) + newline
    else:
        assert new_text is text


_blank = st.sampled_from(["", " ", "\n", "\n  ", "\t", "  \n\t "])


@hyp_settings(max_examples=200, deadline=None)
@given(current=_docs, wanted=_docs, mode=st.sampled_from(["append", "replace"]), data=st.data())
def test_a_change_to_a_hand_formatted_file_is_valid_and_idempotent(current, wanted, mode, data):
    """Arbitrary whitespace between tokens: the result is the merged document and a rerun is a no-op."""
    pieces = []
    for token in re.findall(r'"(?:[^"\\]|\\.)*"|[^\s"]+|\s+', json.dumps(current)):
        pieces.append(token if token.startswith('"') else token.strip())
        pieces.append(data.draw(_blank))
    text = "".join(pieces) or "{}"
    new_text, merged, _c, _w = dj.compute(text, wanted, mode)
    assert dj.json_equal(json.loads(new_text), merged)
    again, _m, changed, _w = dj.compute(new_text, wanted, mode)
    assert again is new_text and changed == []


@pytest.mark.parametrize("text, found", [("[]", "an array"), ('"x"', "a string"), ("null", "null"), ("true", "a boolean"), ("1.5", "a number")])
def test_top_level_that_is_not_an_object_is_named_in_json_terms(text, found):
    with pytest.raises(FileEditError) as err:
        dj.parse(text, "d.json")
    assert str(err.value) == "d.json:1:1: top level must be a JSON object, found %s" % found


def test_crlf_line_endings_are_kept():
    original = '{\r\n  "debug": true,\r\n  "runtimes": {}\r\n}\r\n'
    text, _m, _c, _w = dj.compute(original, {"runtimes": {"nvidia": {"path": "x"}}})
    assert text == '{\r\n  "debug": true,\r\n  "runtimes": {\r\n    "nvidia": {\r\n      "path": "x"\r\n    }\r\n  }\r\n}\r\n'


def test_restart_kind():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._daemon_json import restart_kind
    reload_keys = ["runtimes", "insecure-registries", "features"]
    clears = ["features"]
    assert restart_kind(True, ["runtimes.nvidia"], [], [], reload_keys, clears) == "reload"
    assert restart_kind(False, ["runtimes.nvidia"], [], [], reload_keys, clears) == "restart"
    assert restart_kind(True, ["runtimes.nvidia", "data-root"], [], [], reload_keys, clears) == "restart"
    assert restart_kind(True, ["runtimes"], [], ["docker.io"], reload_keys, clears) == "restart"
    assert restart_kind(True, [], [], [], reload_keys, clears) == "restart"
    # A registry taken out of insecure-registries stays insecure after a reload: a restart.
    assert restart_kind(True, ["insecure-registries"], ["insecure-registries"], [], reload_keys, clears) == "restart"
    assert restart_kind(True, ["features"], ["features"], [], reload_keys, clears) == "reload"
    # A key removed inside a kept one (runtimes.old) is that key's change.
    assert restart_kind(True, ["runtimes"], ["runtimes.old"], [], reload_keys, clears) == "reload"


def test_its_own_error_type_is_a_file_edit_error():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._daemon_json import DaemonJsonError, parse
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError
    with pytest.raises(DaemonJsonError) as caught:
        parse('{"a": 1,\n "a": }', "/etc/docker/daemon.json")
    assert isinstance(caught.value, FileEditError) and caught.value.line == 2
