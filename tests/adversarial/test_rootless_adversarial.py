# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containers_conf, subid_ranges and the rootless_runtimes role against real published files.

Every case copies a file from ``tests/fixtures/containers`` (see its PROVENANCE.md) into a temporary
directory: nothing asked is no change, an edit keeps every comment and every entry of the site, a file
TOML readers refuse (cut short, pasted twice) fails with ``path:line:column`` and keeps its bytes, a v1
registries.conf stays v1, hostile values and keys are refused or read back exactly, and the role's
storage task keeps a site's own driver (btrfs, zfs) while never leaving vfs.
"""

import copy
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from ansible_collections.hpc.gpu_containers.plugins.modules import containers_conf, subid_ranges
from ansible_collections.hpc.gpu_containers.plugins.module_utils._subid import ensure_ranges, parse
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "containers"
ROLE = ROOT / "roles" / "rootless_runtimes"
TOML_FILES = sorted(p.name for p in FIXTURES.glob("*.conf"))
V1_FILES = [n for n in TOML_FILES if n.endswith(".v1.conf")]
V2_FILES = [n for n in TOML_FILES if n.endswith(".v2.conf")]
# Files that set v2 fields (the containers/image one holds only commented examples).
V2_SET = [n for n in V2_FILES if tomllib.loads((FIXTURES / n).read_text())]
SUBID_FILES = sorted(p.name for p in FIXTURES.glob("*__sub[ug]id"))


def copy_fixture(tmp_path, name, into=None):
    target = tmp_path / (into or name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((FIXTURES / name).read_bytes())
    return target


def comments(text):
    return [line for line in text.splitlines() if line.strip().startswith("#")]


# -- nothing asked, nothing changed ------------------------------------------------------------------


@pytest.mark.parametrize("name", TOML_FILES)
def test_real_file_round_trips_byte_identical(tmp_path, capsys, name):
    path = copy_fixture(tmp_path, name)
    before = path.read_bytes()
    doc = tomllib.loads(before.decode())
    # Ask for every top-level scalar the file already holds: no change.
    same = {t: {k: v for k, v in keys.items() if isinstance(v, (str, int, bool, list))}
            for t, keys in doc.items() if isinstance(keys, dict) and all(isinstance(k, str) for k in keys)}
    same = {t: {k: v for k, v in keys.items() if not isinstance(v, dict)} for t, keys in same.items()}
    result = run_module(containers_conf, capsys, path=str(path), settings={t: k for t, k in same.items() if k})
    assert result["changed"] is False and result["changed_keys"] == [] and path.read_bytes() == before


# -- edits keep the site's comments and entries ------------------------------------------------------


def test_storage_conf_edit_keeps_comments_and_other_keys(tmp_path, capsys):
    path = copy_fixture(tmp_path, "containers-storage__storage.conf")
    before = path.read_text()
    result = run_module(containers_conf, capsys, path=str(path),
                        settings={"storage.options.overlay": {"mount_program": "/usr/bin/fuse-overlayfs"}})
    after = path.read_text()
    assert result["changed_keys"] == ["storage.options.overlay.mount_program"]
    assert comments(after) == comments(before)
    expected = tomllib.loads(before)
    expected["storage"]["options"]["overlay"]["mount_program"] = "/usr/bin/fuse-overlayfs"
    assert tomllib.loads(after) == expected
    assert len(after.splitlines()) == len(before.splitlines()) + 1


def test_containers_conf_edit_keeps_comments_and_other_keys(tmp_path, capsys):
    path = copy_fixture(tmp_path, "containers-common__containers.conf")
    before = path.read_text()
    settings = {"containers": {"cgroups": "disabled"}, "engine": {"cgroup_manager": "cgroupfs", "events_logger": "file"}}
    result = run_module(containers_conf, capsys, path=str(path), settings=settings)
    after = path.read_text()
    assert sorted(result["changed_keys"]) == ["containers.cgroups", "engine.cgroup_manager", "engine.events_logger"]
    assert comments(after) == comments(before)
    expected = tomllib.loads(before)
    for table, keys in settings.items():
        expected[table].update(keys)
    assert tomllib.loads(after) == expected
    assert run_module(containers_conf, capsys, path=str(path), settings=settings)["changed"] is False


# -- registries.conf: the file's own syntax ----------------------------------------------------------


@pytest.mark.parametrize("name", V1_FILES)
def test_v1_registries_conf_stays_v1_with_the_sites_lists(tmp_path, capsys, name):
    path = copy_fixture(tmp_path, name)
    before = path.read_text()
    site = tomllib.loads(before)["registries"]
    args = dict(path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    result = run_module(containers_conf, capsys, **args)
    doc = tomllib.loads(path.read_text())
    assert result["registries_syntax"] == "v1" and "registry" not in doc
    assert doc["registries"]["search"] == site["search"] and doc["registries"]["block"] == site["block"]
    assert doc["registries"]["insecure"]["registries"] == site["insecure"]["registries"] + ["head:5000"]
    assert comments(path.read_text()) == comments(before)
    assert run_module(containers_conf, capsys, **args)["changed"] is False


@pytest.mark.parametrize("name", V1_FILES)
def test_v1_registries_conf_converted_whole_when_asked(tmp_path, capsys, name):
    path = copy_fixture(tmp_path, name)
    site = tomllib.loads(path.read_text())["registries"]
    result = run_module(containers_conf, capsys, path=str(path), registries_syntax="v2",
                        registries=[{"location": "head:5000", "insecure": True}])
    doc = tomllib.loads(path.read_text())
    assert result["registries_syntax"] == "v2" and "registries" not in doc
    assert doc["unqualified-search-registries"] == site["search"]["registries"]
    insecure = [r["location"] for r in doc["registry"] if r.get("insecure")]
    assert insecure == site["insecure"]["registries"] + ["head:5000"]
    assert [r["location"] for r in doc["registry"] if r.get("blocked")] == site["block"]["registries"]


@pytest.mark.parametrize("name", V1_FILES)
def test_v1_drop_in_refused_and_kept(tmp_path, capsys, name):
    path = copy_fixture(tmp_path, name, into="registries.conf.d/50-site.conf")
    before = path.read_bytes()
    result = run_module(containers_conf, capsys, path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    assert result["failed"] and "registries_syntax: v2" in result["msg"] and result["msg"].startswith(str(path))
    assert path.read_bytes() == before


@pytest.mark.parametrize("v1, v2", [(a, b) for a in V1_FILES for b in V2_SET])
def test_mixed_file_refused_and_kept(tmp_path, capsys, v1, v2):
    path = tmp_path / "registries.conf"
    path.write_bytes((FIXTURES / v2).read_bytes() + b"\n" + (FIXTURES / v1).read_bytes())
    before = path.read_bytes()
    result = run_module(containers_conf, capsys, path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    assert result["failed"] and "mixes the v1 syntax" in result["msg"] and path.read_bytes() == before


@pytest.mark.parametrize("name", V2_FILES)
def test_v2_registries_conf_keeps_the_sites_entries(tmp_path, capsys, name):
    path = copy_fixture(tmp_path, name)
    before = path.read_text()
    site = tomllib.loads(before)
    result = run_module(containers_conf, capsys, path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    doc = tomllib.loads(path.read_text())
    assert result["registries_syntax"] == "v2"
    assert doc["registry"] == site.get("registry", []) + [{"location": "head:5000", "insecure": True}]
    assert {k: v for k, v in doc.items() if k != "registry"} == {k: v for k, v in site.items() if k != "registry"}
    assert comments(path.read_text()) == comments(before)


def test_a_second_entry_for_a_prefix_is_refused(tmp_path, capsys):
    path = copy_fixture(tmp_path, "containers-common-testdata__registries.v2.conf")
    before = path.read_bytes()
    result = run_module(containers_conf, capsys, path=str(path), registries=[{"location": "docker.io", "insecure": True}])
    assert result["failed"] and "mirror.gcr.io" in result["msg"] and path.read_bytes() == before


# -- files TOML readers refuse: path:line:column, bytes kept -----------------------------------------


def malformed(text):
    """Cut short inside the first multi-line array (or the first value), the file pasted twice, and a last
    line cut inside its string (a copy that stopped short)."""
    cases = {}
    match = re.search(r"=\s*\[\s*\n", text)
    cut = match.end() if match else text.index("=") + 1
    cases["cut short"] = text[:cut]
    cases["pasted twice"] = text + "\n" + text
    cases["cut in a string"] = text + 'location = "head:50'
    return {k: v for k, v in cases.items() if not _reads(v)}


def _reads(text):
    try:
        tomllib.loads(text)
        return True
    except tomllib.TOMLDecodeError:
        return False


@pytest.mark.parametrize("name", TOML_FILES)
def test_malformed_real_files_refused_with_line_and_column(tmp_path, capsys, name):
    cases = malformed((FIXTURES / name).read_text())
    assert cases, "no malformed case could be built from %s" % name
    for label, text in cases.items():
        path = tmp_path / ("%s-%s" % (label.replace(" ", "-"), name))
        path.write_text(text)
        before = path.read_bytes()
        result = run_module(containers_conf, capsys, path=str(path), settings={"engine": {"events_logger": "file"}},
                            registries=[{"location": "head:5000", "insecure": True}])
        assert result.get("failed"), label
        assert re.match(re.escape(str(path)) + r":\d+:\d+: not TOML: ", result["msg"]), result["msg"]
        assert path.read_bytes() == before, label


# -- hostile values and keys -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a\x7fb", "a\u2028[engine]\nx = 1", "a\u2029b", "a\x85b", "a\nb", "a\x00b", "a\ud800b"])
def test_hostile_values_refused_file_kept(tmp_path, capsys, value):
    path = copy_fixture(tmp_path, "containers-common__containers.conf")
    before = path.read_bytes()
    try:
        result = run_module(containers_conf, capsys, path=str(path), settings={"engine": {"events_logger": value}})
    except Exception as exc:  # noqa: BLE001 - Ansible's own parameter decoder, where it checks the encoding
        # A lone surrogate is no UTF-8: where Ansible checks the arguments' encoding it refuses them before the
        # module runs (the model's own refusal: tests/unit/.../test_containers_conf.py).
        assert "\ud800" in value and "decode" in str(exc)
    else:
        assert result["failed"] and result["msg"].startswith(str(path))
    assert path.read_bytes() == before


@pytest.mark.parametrize("key", ['x"]\n[containers]\ny', 'a"b', "a'b", "a.b", "é ü", "a\\b"])
def test_hostile_but_printable_keys_read_back(tmp_path, capsys, key):
    path = copy_fixture(tmp_path, "containers-storage__storage.conf")
    args = dict(path=str(path), settings={"storage.options": {key: "v\"'\\]#"}})
    result = run_module(containers_conf, capsys, **args)
    if "\n" in key:
        assert result["failed"]
        return
    doc = tomllib.loads(path.read_text())
    assert doc["storage"]["options"][key] == "v\"'\\]#"
    assert run_module(containers_conf, capsys, **args)["changed"] is False


# -- the role's storage task: a site's driver kept, vfs never ----------------------------------------


def _role_task(name):
    for task in yaml.safe_load((ROLE / "tasks" / "podman.yml").read_text()):
        if task.get("name") == name:
            return copy.deepcopy(task)
    raise AssertionError("podman.yml has no task %r" % name)


STORAGE_TASK = "Storage on overlay (fuse-overlayfs for rootless users), never vfs"
REGISTRY_TASK = "Trust the cluster registry (plain HTTP)"


def run_role_task(tmp_path, task_name, path, extra_vars=None):
    """The role's task ``task_name`` from podman.yml with its ``path`` pointed at ``path``, run by
    ansible-playbook with the role's defaults and ``extra_vars`` (as -e, like an inventory's)."""
    task = _role_task(task_name)
    task["hpc.gpu_containers.containers_conf"]["path"] = str(path)
    play = [{"hosts": "localhost", "gather_facts": False, "vars": extra_vars or {}, "tasks": [task]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "@%s" % (ROLE / "defaults" / "main.yml")]
    for key, value in (extra_vars or {}).items():
        cmd += ["-e", "%s=%s" % (key, value)]
    proc = subprocess.run(cmd + [str(playbook)], env=env, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.mark.parametrize("site, inventory, expected", [
    ("btrfs", None, "btrfs"), ("zfs", None, "zfs"), ("overlay", None, "overlay"),
    ("vfs", None, "overlay"), ("", None, "overlay"), ("btrfs", "overlay", "overlay"),
])
def test_role_keeps_a_sites_own_storage_driver_but_never_vfs(tmp_path, site, inventory, expected):
    path = copy_fixture(tmp_path, "containers-storage__storage.conf")
    path.write_text(path.read_text().replace('driver = "overlay"', 'driver = "%s"' % site, 1))
    run_role_task(tmp_path, STORAGE_TASK, path, {"rootless_runtimes_storage_driver": inventory} if inventory else None)
    doc = tomllib.loads(path.read_text())
    assert doc["storage"]["driver"] == expected
    assert doc["storage"]["options"]["overlay"]["mount_program"] == "/usr/bin/fuse-overlayfs"


@pytest.mark.parametrize("name", V1_FILES)
def test_role_registry_task_keeps_a_v1_file_in_v1(tmp_path, name):
    path = copy_fixture(tmp_path, name)
    site = tomllib.loads(path.read_text())["registries"]
    run_role_task(tmp_path, REGISTRY_TASK, path,
                  {"rootless_runtimes_registry": "head:5000", "rootless_runtimes_registry_insecure": "true"})
    doc = tomllib.loads(path.read_text())
    assert "registry" not in doc
    assert doc["registries"]["insecure"]["registries"] == site["insecure"]["registries"] + ["head:5000"]


# -- subuid / subgid ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SUBID_FILES)
def test_real_subid_files_keep_every_range(tmp_path, capsys, name):
    path = copy_fixture(tmp_path, name)
    before = path.read_text()
    users = [n for _line, n, _s, _c in parse(before)]
    assert run_module(subid_ranges, capsys, path=str(path), users=users)["changed"] is False
    assert path.read_text() == before
    result = run_module(subid_ranges, capsys, path=str(path), users=users + ["newjobuser"])
    after = path.read_text()
    assert after.startswith(before) and after.count("\n") == before.count("\n") + 1
    start, count = result["ranges"]["newjobuser"]["start"], result["ranges"]["newjobuser"]["count"]
    assert all(start + count <= s or s + c <= start for _l, _n, s, c in parse(before))


@pytest.mark.parametrize("name, expected", [
    ("netpoint-configurations__subgid", ["ranges of lxd (line 1) and root (line 2) overlap"]),
    ("docker-user-namespaces__subgid", ["ranges of dockerspace (line 1) and dockeruser (line 2) overlap"]),
])
def test_real_overlapping_ranges_are_reported(name, expected):
    assert ensure_ranges((FIXTURES / name).read_text(), [])[2] == expected
