# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_daemon_config through AnsibleModule: check mode, diff, idempotence, validation."""

import json
import os
import shutil
import subprocess
import stat
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import docker_daemon_config
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "daemon_json"

NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}},
          "default-runtime": "nvidia", "insecure-registries": ["head01:5000"]}


def run(capsys, **args):
    args.setdefault("validate", "never")
    return run_module(docker_daemon_config, capsys, **args)


def fake_dockerd(tmp_path, supports_validate, accepts=True):
    """A stand-in dockerd: `--help` with or without --validate, and a validator
    that rejects any config containing the key "bogus" the way dockerd 23+ does."""
    script = tmp_path / "dockerd"
    help_text = "      --validate                Validate daemon configuration and exit" if supports_validate else "      --userns-remap string"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--help" ]; then echo "Usage: dockerd [OPTIONS]"; echo "%s"; exit 0; fi\n'
        'if [ "$1" = "--validate" ]; then\n'
        '  echo "$3" >> "%s"\n'
        '  if grep -q bogus "$3"; then echo "unable to configure the Docker daemon with file $3:'
        ' the following directives don\'t match any configuration option: bogus" >&2; exit 1; fi\n'
        '  echo "configuration OK"; exit 0\n'
        "fi\nexit 2\n" % (help_text, tmp_path / "validated.log"))
    script.chmod(0o755)
    return str(script)


def test_creates_absent_file_then_reruns_unchanged(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    res = run(capsys, path=str(path), settings=NVIDIA)
    assert res["changed"] is True and res["restart_required"] is True
    assert res["changed_keys"] == ["runtimes", "default-runtime", "insecure-registries"]
    assert json.loads(path.read_text()) == NVIDIA
    assert path.read_text().endswith("}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    res = run(capsys, path=str(path), settings=NVIDIA)
    assert res["changed"] is False and res["restart_required"] is False
    assert res["changed_keys"] == [] and res["config"] == NVIDIA
    assert res["validation"] == {"status": "not_needed"}


def test_check_mode_predicts_and_writes_nothing_with_diff(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = (FIXTURES / "site-compact.json").read_text()
    path.write_text(original)
    before = path.stat()
    res = run(capsys, path=str(path), settings=NVIDIA, _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True
    assert res["changed_keys"] == ["runtimes", "default-runtime", "insecure-registries"]
    assert res["validation"] == {"status": "skipped", "reason": "check mode"}
    assert res["diff"]["before"] == original
    assert json.loads(res["diff"]["after"])["insecure-registries"] == ["10.0.0.0/8", "head01:5000"]
    assert path.read_text() == original and path.stat().st_mtime_ns == before.st_mtime_ns
    # the real run writes exactly what check mode predicted
    real = run(capsys, path=str(path), settings=NVIDIA, _ansible_diff=True)
    assert path.read_text() == res["diff"]["after"] == real["diff"]["after"]


def test_the_docker_daemon_fact_names_the_runtimes_as_the_file_will_have_them(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"runtimes": {"runc-debug": {"path": "/usr/bin/runc"}}, "log-driver": "journald"}\n')
    res = run(capsys, path=str(path), settings=NVIDIA, _ansible_check_mode=True)
    assert res["ansible_facts"]["docker_daemon"] == {"path": str(path), "runtimes": ["nvidia", "runc-debug"]}
    res = run(capsys, path=str(path), settings={"log-driver": "json-file"})
    assert res["ansible_facts"]["docker_daemon"] == {"path": str(path), "runtimes": ["runc-debug"]}
    res = run(capsys, path=str(tmp_path / "none" / "daemon.json"), settings={"experimental": None})
    assert res["changed"] is False
    assert res["ansible_facts"]["docker_daemon"]["runtimes"] == []


def test_equal_json_differently_formatted_is_not_changed_even_in_check_mode(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = (FIXTURES / "nvidia-ctk-set-as-default-cdi.json").read_text()
    path.write_text(original)
    res = run(capsys, path=str(path), settings={"default-runtime": "nvidia", "features": {"cdi": True}},
              _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is False
    assert path.read_text() == original


def test_malformed_file_fails_with_location_and_is_left_byte_identical(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = (FIXTURES / "malformed-trailing-comma.json").read_bytes()
    path.write_bytes(original)
    res = run(capsys, path=str(path), settings=NVIDIA)
    assert res["failed"] is True
    assert res["msg"].startswith("%s:5:5: malformed JSON" % path)
    assert path.read_bytes() == original
    assert os.listdir(tmp_path) == ["daemon.json"]


def test_missing_directory_fails_unless_asked_to_create_it(tmp_path, capsys):
    path = tmp_path / "etc-docker" / "daemon.json"
    res = run(capsys, path=str(path), settings=NVIDIA)
    assert res["failed"] is True and "create_directory" in res["msg"]
    assert not path.parent.exists()
    res = run(capsys, path=str(path), settings=NVIDIA, create_directory=True, _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True and json.loads(res["diff"]["after"]) == NVIDIA
    assert not path.parent.exists()
    res = run(capsys, path=str(path), settings=NVIDIA, create_directory=True)
    assert res["changed"] is True and json.loads(path.read_text()) == NVIDIA


def test_backup_keeps_the_old_content(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = (FIXTURES / "nvidia-docker2-2.0.3.json").read_text()
    path.write_text(original)
    res = run(capsys, path=str(path), settings={"default-runtime": "nvidia"}, backup=True)
    assert res["changed"] is True
    assert Path(res["backup_file"]).read_text() == original
    assert res["config"]["runtimes"]["nvidia"]["path"] == "/usr/bin/nvidia-container-runtime"


def test_existing_mode_is_kept(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text("{}\n")
    path.chmod(0o600)
    run(capsys, path=str(path), settings={"debug": True})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_list_merge_replace(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"insecure-registries": ["old:5000", "head01:5000"]}')
    res = run(capsys, path=str(path), settings={"insecure-registries": ["head01:5000"]}, list_merge="replace")
    assert res["changed"] is True and res["config"]["insecure-registries"] == ["head01:5000"]


def test_validate_auto_skips_on_engine_without_validate(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    dockerd = fake_dockerd(tmp_path, supports_validate=False)
    res = run(capsys, path=str(path), settings=NVIDIA, validate="auto", dockerd_path=dockerd)
    assert res["changed"] is True
    assert res["validation"]["status"] == "skipped"
    assert "has no --validate option" in res["validation"]["reason"]
    assert path.exists()


def test_validate_always_fails_on_engine_without_validate_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text("{}\n")
    dockerd = fake_dockerd(tmp_path, supports_validate=False)
    res = run(capsys, path=str(path), settings=NVIDIA, validate="always", dockerd_path=dockerd)
    assert res["failed"] is True and "cannot validate" in res["msg"]
    assert path.read_text() == "{}\n"


def test_validate_runs_on_the_temp_file_and_a_rejection_leaves_the_file(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text("{}\n")
    dockerd = fake_dockerd(tmp_path, supports_validate=True)
    res = run(capsys, path=str(path), settings=NVIDIA, validate="auto", dockerd_path=dockerd)
    assert res["validation"]["status"] == "passed"
    validated = (tmp_path / "validated.log").read_text().split()
    assert len(validated) == 1 and validated[0] != str(path) and Path(validated[0]).parent == tmp_path
    written = path.read_text()
    res = run(capsys, path=str(path), settings={"bogus": 1}, validate="auto", dockerd_path=dockerd)
    assert res["failed"] is True
    assert "dockerd --validate rejected the merged configuration" in res["msg"]
    assert "bogus" in res["msg"] and str(path) in res["msg"]
    assert path.read_text() == written
    assert sorted(os.listdir(tmp_path)) == ["daemon.json", "dockerd", "validated.log"]


@pytest.mark.skipif(shutil.which("dockerd") is None, reason="no dockerd on this machine")
def test_validate_auto_with_the_installed_dockerd(tmp_path, capsys):
    """Against the real engine: Docker 23+ validates, older engines (Debian 12's
    docker.io 20.10) are probed, skipped and say so."""
    dockerd = shutil.which("dockerd")
    supports = "--validate" in subprocess.run([dockerd, "--help"], capture_output=True, text=True, check=False).stdout
    path = tmp_path / "daemon.json"
    res = run(capsys, path=str(path), settings={"live-restore": True}, validate="auto", dockerd_path=dockerd)
    assert res["changed"] is True and json.loads(path.read_text()) == {"live-restore": True}
    if supports:
        assert res["validation"]["status"] == "passed"
    else:
        assert res["validation"] == {"status": "skipped", "reason": "%s has no --validate option (Docker 23.0 or newer has it)" % dockerd}


def test_duplicate_key_in_file_is_a_warning_and_last_wins(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"debug": false, "debug": true}\n')
    res = run(capsys, path=str(path), settings={"debug": True})
    assert res["changed"] is False  # the effective value is already true
    messages = [w["event"]["msg"] if isinstance(w, dict) else w for w in res["warnings"]]  # 2.19 returns WarningSummary dicts
    assert messages == ["%s: key 'debug' appears more than once; the last one wins" % path]


@pytest.mark.parametrize("check_mode", [False, True])
@pytest.mark.parametrize("settings", [{"foo": None}, {"log-opts": {"max-size": None}}])
def test_delete_only_settings_on_a_host_without_daemon_json_change_nothing(tmp_path, capsys, settings, check_mode):
    path = tmp_path / "daemon.json"
    res = run(capsys, path=str(path), settings=settings, _ansible_check_mode=check_mode, _ansible_diff=True)
    assert res["changed"] is False and res["restart_required"] is False
    assert res["changed_keys"] == [] and res["config"] == {}
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("check_mode", [False, True])
def test_nothing_to_write_creates_no_directory(tmp_path, capsys, check_mode):
    path = tmp_path / "etc-docker" / "daemon.json"
    for args in ({"settings": {"foo": None}}, {"remove": {"insecure-registries": ["head01:5000"]}}):
        res = run(capsys, path=str(path), create_directory=True, _ansible_check_mode=check_mode, **args)
        assert res["changed"] is False and res["restart_required"] is False
    assert os.listdir(tmp_path) == []


def test_remove_takes_the_registry_out_and_keeps_other_entries(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = '{\n  "insecure-registries": ["10.0.0.0/8", "head01:5000"],\n  "live-restore": true\n}\n'
    path.write_text(original)
    remove = {"insecure-registries": ["head01:5000"]}
    res = run(capsys, path=str(path), remove=remove, _ansible_check_mode=True, _ansible_diff=True)
    assert res["changed"] is True and res["restart_required"] is True
    assert res["changed_keys"] == ["insecure-registries"]
    assert path.read_text() == original
    res = run(capsys, path=str(path), remove=remove)
    assert res["changed"] is True and res["config"]["insecure-registries"] == ["10.0.0.0/8"]
    assert path.read_text() == '{\n  "insecure-registries": ["10.0.0.0/8"],\n  "live-restore": true\n}\n'
    res = run(capsys, path=str(path), remove=remove)
    assert res["changed"] is False


def test_settings_or_remove_is_required_and_bad_values_fail_cleanly(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    res = run(capsys, path=str(path))
    assert res["failed"] is True and "settings, defaults, remove" in res["msg"]
    res = run(capsys, path=str(path), settings={"insecure-registries": ["a:1"]}, remove={"insecure-registries": ["a:1"]})
    assert res["failed"] is True
    assert res["msg"] == "remove.insecure-registries: a:1 is also in settings.insecure-registries"
    res = run(capsys, path=str(path), settings={"shm-size": float("nan")})
    assert res["failed"] is True and res["msg"] == "settings.shm-size: NaN is not a JSON number"
    assert os.listdir(tmp_path) == []


def test_a_change_keeps_the_files_layout(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = (FIXTURES / "site-compact.json").read_text()
    path.write_text(original)
    run(capsys, path=str(path), settings={"insecure-registries": ["head01:5000"]})
    assert path.read_text() == original.replace('["10.0.0.0/8"]', '["10.0.0.0/8","head01:5000"]')


# --- roles/container_registry: insecure mode and back to TLS ----------------------

CLIENT_TASKS = Path(__file__).resolve().parents[4] / "roles" / "container_registry" / "tasks" / "client.yml"


def _client_daemon_json_calls(**variables):
    """The docker_daemon_config arguments of the client tasks whose ``when`` holds, rendered."""
    import jinja2
    import yaml

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["bool"] = lambda value: value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")

    def render(value):
        if isinstance(value, str):
            return env.from_string(value).render(**variables)
        if isinstance(value, list):
            return [render(item) for item in value]
        if isinstance(value, dict):
            return {key: render(item) for key, item in value.items()}
        return value

    for task in yaml.safe_load(CLIENT_TASKS.read_text()):
        args = task.get("hpc.gpu_containers.docker_daemon_config")
        if args is None:
            continue
        conditions = task.get("when", [])
        conditions = [conditions] if isinstance(conditions, str) else conditions
        if all(env.compile_expression(condition)(**variables) for condition in conditions):
            yield render(args)


def _apply_client_role(capsys, path, insecure):
    results = []
    for args in _client_daemon_json_calls(container_registry_insecure=insecure, container_registry_address="head01:5000",
                                          docker_engine_daemon_json_path=str(path)):
        results.append(run(capsys, **args))
    return results


def test_registry_switched_back_to_tls_is_taken_out_of_insecure_registries(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{\n    "insecure-registries": [\n        "10.0.0.0/8"\n    ]\n}\n')

    assert [res["changed"] for res in _apply_client_role(capsys, path, insecure=True)] == [True]
    assert json.loads(path.read_text())["insecure-registries"] == ["10.0.0.0/8", "head01:5000"]

    assert [res["changed"] for res in _apply_client_role(capsys, path, insecure=False)] == [True]
    assert path.read_text() == '{\n    "insecure-registries": [\n        "10.0.0.0/8"\n    ]\n}\n'

    assert [res["changed"] for res in _apply_client_role(capsys, path, insecure=False)] == [False]


def test_tls_registry_on_a_host_without_daemon_json_writes_nothing(tmp_path, capsys):
    path = tmp_path / "docker" / "daemon.json"
    assert [res["changed"] for res in _apply_client_role(capsys, path, insecure=False)] == [False]
    assert os.listdir(tmp_path) == []


def test_settings_too_large_for_a_missing_directory_fail_cleanly(tmp_path, capsys):
    path = tmp_path / "etc-docker" / "daemon.json"
    res = run(capsys, path=str(path), settings={"labels": ["x" * (1 << 20)]}, create_directory=True, _ansible_check_mode=True)
    assert res["failed"] is True
    assert res["msg"].startswith("%s: the merged file would be " % path)
    assert os.listdir(tmp_path) == []
