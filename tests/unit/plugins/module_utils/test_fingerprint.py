# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import grp
import os
import threading

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _fingerprint as fp


def _no_commands(argv):
    return None, "", ""


def test_items_are_checked_merged_and_canonical():
    assert fp.canonical_items({"paths": ["/b", "/a/../a", "/b"], "packages": [], "node": True, "gpus": False}) == {
        "paths": ["/a", "/b"], "node": True}
    merged = fp.canonical_items([{"paths": ["/etc/docker/daemon.json"], "services": ["docker"], "node": True},
                                 {"paths": ["/etc/docker/daemon.json", "/etc/cdi"], "gpus": True}])
    assert merged == {"paths": ["/etc/cdi", "/etc/docker/daemon.json"], "services": ["docker"], "node": True,
                      "gpus": True}
    keyed = fp.canonical_items([{"json_keys": {"/etc/docker/../docker/daemon.json": ["log-opts", "log-driver"]}},
                                {"json_keys": {"/etc/docker/daemon.json": ["runtimes", "log-driver"]}}])
    assert keyed == {"json_keys": {"/etc/docker/daemon.json": ["log-driver", "log-opts", "runtimes"]}}


def test_each_owner_owns_the_keys_its_items_give_and_shares_those_another_names():
    owned = {"docker_engine": {"paths": ["/etc/docker/daemon.json"], "groups": ["docker"],
                               "members": {"docker": ["lsfadmin"]}, "json_keys": {"/etc/docker/daemon.json": ["a"]},
                               "node": True},
             "nvidia_container_runtime": {"paths": ["/etc/docker/daemon.json"], "gpus": True}}
    assert fp.owners(owned) == {
        "path:/etc/docker/daemon.json": ["docker_engine", "nvidia_container_runtime"],
        "json:/etc/docker/daemon.json#a": ["docker_engine"], "group:docker": ["docker_engine"],
        "members:docker": ["docker_engine"], "node": ["docker_engine"], "gpus": ["nvidia_container_runtime"]}
    record = {"owned_items": fp.canonical_owned(owned)}
    assert fp.owners_of(record, []) == []
    assert fp.owners_of(record, ["members:docker (not named by the inventory: mallory)"]) == ["docker_engine"]
    assert fp.owners_of(record, ["json:/etc/docker/daemon.json#a", "group:docker"]) == ["docker_engine"]
    for found in (["node"], ["gpus"], ["inputs"], ["no record"], ["path:/etc/other"]):
        assert fp.owners_of(record, found) is None, found
    assert fp.owners_of({}, ["group:docker"]) is None and fp.owners_of(None, []) == []


def test_json_keys_digest_each_key_and_leave_the_file_its_metadata(tmp_path):
    daemon = tmp_path / "daemon.json"
    daemon.write_text('{"a": 1, "b": {"x": [1, 2]}}')
    items = fp.canonical_items({"paths": [str(daemon)], "json_keys": {str(daemon): ["a", "b", "c"]}})
    before = fp.compute(items, _no_commands)
    assert sorted(before) == ["json:%s#%s" % (daemon, key) for key in "abc"] + ["path:" + str(daemon)]
    daemon.write_text('{\n  "b": {"x": [1, 2]},\n  "a": 1, "site": true}\n')  # same keys' values, reformatted
    assert fp.compute(items, _no_commands) == before
    daemon.write_text('{"a": 2, "b": {"x": [1, 2]}, "c": null}')
    after = fp.compute(items, _no_commands)
    assert [key for key in sorted(before) if before[key] != after[key]] == [
        "json:%s#a" % daemon, "json:%s#c" % daemon]
    for text in ("[1, 2]", "{broken"):
        daemon.write_text(text)
        after = fp.compute(items, _no_commands)
        assert [key for key in sorted(before) if before[key] != after[key]] == [
            "json:%s#%s" % (daemon, key) for key in "abc"], text


@pytest.mark.parametrize("items, message", [
    ({"files": ["/a"]}, "unknown item kind\\(s\\) files; the kinds are paths, packages"),
    ({"paths": "/a"}, "items.paths must be a list of names"),
    ({"paths": ["etc/docker"]}, "items.paths must be absolute: etc/docker"),
    ({"json_keys": {"daemon.json": ["a"]}}, "items.json_keys must name absolute paths: daemon.json"),
    ({"json_keys": {"/d.json": "a"}}, "items.json_keys./d.json must be a list of top-level keys"),
    ({"json_keys": ["/d.json"]}, "items.json_keys must map each JSON file to a list of top-level keys"),
    (["/a"], "items must be a mapping of kinds"),
])
def test_bad_items_are_refused_by_name(items, message):
    with pytest.raises(fp.FingerprintError, match=message):
        fp.canonical_items(items)


def test_a_path_digest_covers_content_mode_and_everything_below_a_directory(tmp_path):
    tree = tmp_path / "etc"
    (tree / "certs.d" / "head:5000").mkdir(parents=True)
    (tree / "daemon.json").write_text('{"a": 1}\n')
    (tree / "certs.d" / "head:5000" / "ca.crt").write_text("CA\n")
    os.symlink("daemon.json", tree / "link")
    seen = {fp.path_digest(str(tree))}
    (tree / "certs.d" / "head:5000" / "ca.crt").write_text("other CA\n")  # deep content
    seen.add(fp.path_digest(str(tree)))
    os.chmod(tree / "daemon.json", 0o600)  # mode
    seen.add(fp.path_digest(str(tree)))
    os.unlink(tree / "link")
    os.symlink("certs.d", tree / "link")  # link target
    seen.add(fp.path_digest(str(tree)))
    (tree / "new").write_text("")  # a new entry
    seen.add(fp.path_digest(str(tree)))
    assert len(seen) == 5
    file_digest = fp.path_digest(str(tree / "daemon.json"))
    assert file_digest == fp.path_digest(str(tree / "daemon.json"))
    (tree / "daemon.json").write_text('{"a": 2}\n')
    assert fp.path_digest(str(tree / "daemon.json")) != file_digest
    assert fp.path_digest(str(tmp_path / "missing")) == "absent"


def test_packages_services_images_from_one_call_each():
    calls = []

    def run(argv):
        calls.append(argv[0])
        if argv[0] == "dpkg-query":
            return 1, "docker.io\t20.10.24+dfsg1-1\tinstalled\nrunc\t1.1\tconfig-files\n", ""
        if argv[0] == "systemctl":
            return 0, "Id=docker.service\nActiveState=active\nSubState=running\nUnitFileState=enabled\n\n" \
                      "Id=nope.service\nActiveState=inactive\nSubState=dead\nUnitFileState=\n", ""
        if argv[0] == "docker":
            return (0, "sha256:abc\n", "") if argv[-1] == "head:5000/hpc/verify:1" else (1, "", "No such image")
        raise AssertionError(argv)

    items = fp.canonical_items({"packages": ["docker.io", "runc", "containerd"], "services": ["docker", "nope"],
                                "images": ["head:5000/hpc/verify:1", "head:5000/gone:1"]})
    state = fp.compute(items, run)
    again = fp.compute(items, run)
    assert state == again
    assert calls.count("dpkg-query") == 2 and calls.count("systemctl") == 2
    # a removed package (config-files), a missing one and a missing image are "absent"
    absent = fp._sha256(b"absent")
    assert state["package:runc"] == absent and state["package:containerd"] == absent
    assert state["package:docker.io"] != absent
    assert state["image:head:5000/gone:1"] == absent and state["image:head:5000/hpc/verify:1"] != absent
    assert state["service:docker"] != state["service:nope"]


def test_groups_members_and_switches():
    root = grp.getgrgid(0).gr_name
    state = fp.compute({"groups": [root, "no-such-group-here"], "node": True, "gpus": True}, _no_commands,
                       gpu_facts=lambda: {"present": True, "gpus": [{"uuid": "GPU-1"}]})
    assert state["group:no-such-group-here"] == fp._sha256(b"absent")
    assert set(state) == {"group:" + root, "group:no-such-group-here", "node", "gpus"}
    other = fp.compute({"gpus": True}, _no_commands, gpu_facts=lambda: {"present": True, "gpus": [{"uuid": "GPU-2"}]})
    assert other["gpus"] != state["gpus"]


def test_manifests_ask_the_registry_through_the_callback():
    seen = []

    def digest(reference):
        seen.append(reference)
        return "sha256:1"

    state = fp.compute({"manifests": ["head:5000/hpc/deeplearning:variants"]}, _no_commands, manifest_digest=digest)
    assert seen == ["head:5000/hpc/deeplearning:variants"]
    assert state == {"manifest:head:5000/hpc/deeplearning:variants": fp._sha256(b"sha256:1")}


def test_manifests_are_asked_all_at_once_each_answer_under_its_reference():
    references = ["head:5000/hpc/a:%d" % i for i in range(4)]
    # Each request waits until all four are in flight: this passes only when they are asked at once.
    together = threading.Barrier(len(references), timeout=10)

    def digest(reference):
        together.wait()
        return "sha256:" + reference[-1]

    state = fp.compute({"manifests": references, "groups": ["root"]}, _no_commands, manifest_digest=digest)
    assert {key: value for key, value in state.items() if key.startswith("manifest:")} == {
        "manifest:" + ref: fp._sha256(("sha256:" + ref[-1]).encode()) for ref in references}
    assert "group:root" in state


def test_differences_name_keys_never_values():
    record = fp.load_record(fp.record_text({"paths": ["/a"]}, "in-1", {"path:/a": "d1", "service:docker": "s1"}))
    assert fp.differences(record, "in-1", {"path:/a": "d1", "service:docker": "s1"}) == []
    assert fp.differences(record, "in-2", {"path:/a": "d2", "service:docker": "s1"}) == ["inputs", "path:/a"]
    assert fp.differences(record, "in-1", {"path:/a": "d1"}) == ["service:docker"]
    assert fp.differences(None, "in-1", {}) == ["no record"]
    for text in ("", "not json", '{"version": 0, "items": {}, "state": {}}', '{"version": 1, "items": []}'):
        assert fp.load_record(text) is None
