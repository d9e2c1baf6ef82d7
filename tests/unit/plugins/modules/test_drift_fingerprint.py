# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import base64
import json
import os
import stat

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import drift_fingerprint
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

# the registry of the registry_image_index tests: a real HTTP server speaking the registry API
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules import test_registry_image_index as registry_tests

REPO = registry_tests.REPO
registry = registry_tests.registry


def run(capsys, **args):
    return run_module(drift_fingerprint, capsys, invocation=False, **args)


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A node's files in tmp_path; the GPU facts of a stand-in; no registry login."""
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "daemon.json").write_text('{"log-driver": "json-file"}\n')
    monkeypatch.setattr(drift_fingerprint, "_gpu_facts", lambda: {"present": True, "gpus": [{"uuid": "GPU-1"}]})
    monkeypatch.setattr(drift_fingerprint, "DOCKER_CONFIG", str(tmp_path / "config.json"))
    monkeypatch.setattr(drift_fingerprint, "DAEMON_JSON", str(tmp_path / "docker" / "daemon.json"))
    monkeypatch.setattr(drift_fingerprint, "CERTS_D", str(tmp_path / "certs.d"))
    return tmp_path


def test_record_then_check_is_clean_and_a_second_record_changes_nothing(node, capsys):
    record = str(node / "state" / "fingerprint.json")
    items = [{"paths": [str(node / "docker")], "gpus": True}, {"paths": [str(node / "docker" / "daemon.json")]}]
    first = run(capsys, path=record, state="record", inputs="in-1", items=items)
    assert first["changed"] and first["differences"] == ["no record"] and first["compared"] == 3
    assert stat.S_IMODE(os.stat(record).st_mode) == 0o600
    assert "diff" not in first
    assert not run(capsys, path=record, state="record", inputs="in-1", items=items)["changed"]
    check = run(capsys, path=record, inputs="in-1")
    assert check == {"changed": False, "clean": True, "inputs_clean": True, "differences": [], "owners": [],
                     "compared": 3, "forgotten": False}


def test_each_change_is_named_and_the_check_changes_nothing(node, capsys, monkeypatch):
    record = str(node / "fingerprint.json")
    run(capsys, path=record, state="record", inputs="in-1", items={"paths": [str(node / "docker")], "gpus": True})
    saved = open(record, encoding="utf-8").read()
    (node / "docker" / "daemon.json").write_text("{}\n")
    monkeypatch.setattr(drift_fingerprint, "_gpu_facts", lambda: {"present": True, "gpus": [{"uuid": "GPU-2"}]})
    check = run(capsys, path=record, inputs="in-2")
    assert not check["clean"] and check["differences"] == ["inputs", "gpus", "path:%s" % (node / "docker")]
    assert not check["inputs_clean"]
    assert open(record, encoding="utf-8").read() == saved


def test_a_node_that_differs_only_in_what_its_roles_manage_keeps_its_inputs_clean(node, capsys, monkeypatch):
    """The LSF master is left out of a run whose nodes all say inputs_clean: it must be false for anything the
    master reads about a node (its facts, its variables) and true only for what the node's roles manage."""
    record = str(node / "fingerprint.json")
    run(capsys, path=record, state="record", inputs="in-1",
        items={"paths": [str(node / "docker")], "gpus": True, "node": True})
    (node / "docker" / "daemon.json").write_text("{}\n")
    check = run(capsys, path=record, inputs="in-1")
    assert check["differences"] == ["path:%s" % (node / "docker")] and not check["clean"] and check["inputs_clean"]
    assert not run(capsys, path=record, inputs="in-2")["inputs_clean"]
    monkeypatch.setattr(drift_fingerprint, "_gpu_facts", lambda: {"present": True, "gpus": [{"uuid": "GPU-2"}]})
    check = run(capsys, path=record, inputs="in-1")
    assert "gpus" in check["differences"] and not check["inputs_clean"]
    monkeypatch.setattr(drift_fingerprint, "_gpu_facts", lambda: {"present": True, "gpus": [{"uuid": "GPU-1"}]})
    monkeypatch.setattr(drift_fingerprint._fingerprint.platform, "node", lambda: "another-name")
    check = run(capsys, path=record, inputs="in-1")
    assert "node" in check["differences"] and not check["inputs_clean"]


def test_a_check_names_the_owners_of_what_differs_and_none_for_what_no_role_puts_back(node, capsys, monkeypatch):
    """site.yml's drift check runs only the roles a check names; a key of daemon.json names the role that sets
    it, not the other two that write the file; a difference no owner recorded (inputs, facts, an unowned item,
    a record without owners) must say null, the full check."""
    record, daemon = str(node / "fingerprint.json"), node / "docker" / "daemon.json"
    daemon.write_text(json.dumps({"log-driver": "json-file", "runtimes": {"nvidia": {}}, "site-own": 1}) + "\n")
    extra = node / "extra.conf"
    extra.write_text("x\n")
    owned = {"docker_engine": {"paths": [str(daemon)], "json_keys": {str(daemon): ["log-driver"]}, "node": True},
             "nvidia_container_runtime": {"paths": [str(daemon)], "json_keys": {str(daemon): ["runtimes"]},
                                          "gpus": True},
             "container_registry": {"json_keys": {str(daemon): ["insecure-registries"]}}}
    first = run(capsys, path=record, state="record", inputs="in-1", owned_items=owned, items={"paths": [str(extra)]})
    assert first["changed"] and first["owners"] is None and first["compared"] == 7
    assert run(capsys, path=record, inputs="in-1")["owners"] == []

    def check(document):
        daemon.write_text(json.dumps(document) + "\n")
        return run(capsys, path=record, inputs="in-1")

    result = check({"runtimes": {"nvidia": {}}, "site-own": 1})  # log-driver removed
    assert result["differences"] == ["json:%s#log-driver" % daemon] and result["owners"] == ["docker_engine"]
    assert result["inputs_clean"] and not result["clean"]
    # a key nobody of the collection sets: no drift at all (the full check keeps it too)
    assert check({"log-driver": "json-file", "runtimes": {"nvidia": {}}, "site-own": 2})["clean"]
    result = check({"log-driver": "json-file", "runtimes": {}, "site-own": 1, "insecure-registries": ["r:5000"]})
    assert result["owners"] == ["container_registry", "nvidia_container_runtime"]
    # the file itself (mode, or gone): both roles that name it, and every key's owner
    assert check({"log-driver": "json-file", "runtimes": {"nvidia": {}}, "site-own": 1})["clean"]
    os.chmod(daemon, 0o600)
    assert run(capsys, path=record, inputs="in-1")["owners"] == ["docker_engine", "nvidia_container_runtime"]
    daemon.unlink()
    assert run(capsys, path=record, inputs="in-1")["owners"] == ["container_registry", "docker_engine",
                                                                 "nvidia_container_runtime"]
    daemon.write_text("{not json")
    assert run(capsys, path=record, inputs="in-1")["owners"] == ["container_registry", "docker_engine",
                                                                 "nvidia_container_runtime"]
    daemon.write_text(json.dumps({"log-driver": "json-file", "runtimes": {"nvidia": {}}, "site-own": 1}) + "\n")
    os.chmod(daemon, 0o644)
    assert run(capsys, path=record, inputs="in-1")["clean"]
    # what no owner put back alone: the full check
    extra.write_text("y\n")
    assert run(capsys, path=record, inputs="in-1")["owners"] is None
    extra.write_text("x\n")
    assert run(capsys, path=record, inputs="in-2")["owners"] is None
    monkeypatch.setattr(drift_fingerprint, "_gpu_facts", lambda: {"present": True, "gpus": [{"uuid": "GPU-2"}]})
    assert run(capsys, path=record, inputs="in-1")["owners"] is None
    monkeypatch.setattr(drift_fingerprint, "_gpu_facts", lambda: {"present": True, "gpus": [{"uuid": "GPU-1"}]})
    # a record written without owners (items only): any difference is a full check
    run(capsys, path=record, state="record", inputs="in-1", items=list(owned.values()))
    daemon.write_text(json.dumps({"runtimes": {"nvidia": {}}, "site-own": 1}) + "\n")
    assert run(capsys, path=record, inputs="in-1")["owners"] is None


def test_check_mode_records_nothing_and_no_record_is_never_clean(node, capsys):
    record = node / "fingerprint.json"
    result = run(capsys, check=True, path=str(record), state="record", inputs="x", items={"node": True})
    assert result["changed"] and not record.exists()
    assert run(capsys, path=str(record), inputs="x") == {"changed": False, "clean": False, "inputs_clean": False,
                                                         "differences": ["no record"], "owners": None,
                                                         "compared": 0, "forgotten": False}
    record.write_text("{broken")
    assert run(capsys, path=str(record), inputs="x")["differences"] == ["no record"]


def test_forget_deletes_the_record_of_a_node_that_differs_and_only_then(node, capsys):
    record = node / "fingerprint.json"
    items = {"paths": [str(node / "docker")]}
    run(capsys, path=str(record), state="record", inputs="in-1", items=items)
    # clean: the record stays, whatever forget says
    assert run(capsys, path=str(record), inputs="in-1", forget=True)["forgotten"] is False and record.exists()
    # differs, but check mode (the drift check) or forget not asked: the record stays
    assert run(capsys, check=True, path=str(record), inputs="in-2", forget=True)["forgotten"] is False
    assert run(capsys, path=str(record), inputs="in-2")["forgotten"] is False and record.exists()
    # differs in a converge: gone, and the node is not clean until the next record
    result = run(capsys, path=str(record), inputs="in-2", forget=True)
    assert result["forgotten"] is True and not result["changed"] and not record.exists()
    result = run(capsys, path=str(record), inputs="in-1", forget=True)
    assert result["differences"] == ["no record"] and result["forgotten"] is False


def test_bad_items_fail_by_name(node, capsys):
    result = run(capsys, path=str(node / "f.json"), state="record", inputs="x", items={"paths": ["relative/path"]})
    assert result["failed"] and result["msg"] == "items: items.paths must be absolute: relative/path"
    assert not (node / "f.json").exists()


def _recorded_manifest(node, registry, capsys):  # pylint: disable=redefined-outer-name
    """A node logged in to the test registry, with one image's manifest recorded; its record and reference."""
    registry.push_image("v1", "amd64")
    (node / "config.json").write_text(json.dumps({"auths": {registry.address: {
        "auth": base64.b64encode(b"hpcadmin:s3cret-pw").decode()}}}))
    (node / "docker" / "daemon.json").write_text(json.dumps({"insecure-registries": [registry.address]}))
    record = str(node / "fingerprint.json")
    reference = "%s/%s:v1" % (registry.address, REPO)
    run(capsys, path=record, state="record", inputs="x", items={"manifests": [reference]})
    return record, reference


def test_a_manifest_replaced_in_the_registry_is_a_difference(node, registry, capsys):  # pylint: disable=redefined-outer-name
    record, reference = _recorded_manifest(node, registry, capsys)
    assert run(capsys, path=record, inputs="x")["clean"]
    registry.push_image("v1", "amd64", salt="replaced")
    assert run(capsys, path=record, inputs="x")["differences"] == ["manifest:" + reference]
    # without the login the registry refuses: not clean either, and no password in the answer
    (node / "config.json").write_text("{}")
    result = run(capsys, path=record, inputs="x")
    assert result["differences"] == ["manifest:" + reference] and "s3cret" not in json.dumps(result)


def _manifest_asked(registry, reference):  # pylint: disable=redefined-outer-name
    tag_path = "/v2/%s/manifests/%s" % (REPO, reference.rsplit(":", 1)[1])
    return sum(1 for method, path, _accept in registry.requests if method == "GET" and path == tag_path)


def test_a_registry_that_fails_once_under_load_is_asked_again_and_the_node_stays_clean(node, registry, capsys,  # pylint: disable=redefined-outer-name
                                                                                       monkeypatch):
    monkeypatch.setattr(drift_fingerprint, "MANIFEST_RETRY_DELAY", 0)
    record, reference = _recorded_manifest(node, registry, capsys)
    for code in (503, 429, 502):
        registry.requests.clear()
        registry.failures = [code]
        assert run(capsys, path=record, inputs="x")["clean"], code
        assert _manifest_asked(registry, reference) == 2, code


def test_a_registry_that_keeps_failing_or_refuses_is_a_difference_asked_once_more_at_most(node, registry, capsys,  # pylint: disable=redefined-outer-name
                                                                                          monkeypatch):
    monkeypatch.setattr(drift_fingerprint, "MANIFEST_RETRY_DELAY", 0)
    record, reference = _recorded_manifest(node, registry, capsys)
    registry.failures = [503] * drift_fingerprint.MANIFEST_ATTEMPTS
    registry.requests.clear()
    assert run(capsys, path=record, inputs="x")["differences"] == ["manifest:" + reference]
    assert _manifest_asked(registry, reference) == drift_fingerprint.MANIFEST_ATTEMPTS
    # a refusal (no login: 401) is an answer, not a failure to answer: asked once
    (node / "config.json").write_text("{}")
    registry.requests.clear()
    assert run(capsys, path=record, inputs="x")["differences"] == ["manifest:" + reference]
    assert _manifest_asked(registry, reference) == 1
