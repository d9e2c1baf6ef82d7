# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_daemon_config's ``defaults`` (fill in only what the file lacks) and ``removed_keys`` (what a reload of
dockerd would not clear)."""

import json

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.test_docker_daemon_config import run

ROLE_DEFAULTS = {"log-driver": "json-file", "log-opts": {"max-size": "100m", "max-file": "5"}, "live-restore": True}


def test_defaults_keep_the_files_values_and_fill_in_the_rest(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    original = '{\n  "log-opts": {"max-size": "10m"},\n  "live-restore": false\n}\n'
    path.write_text(original)
    res = run(capsys, path=str(path), defaults=ROLE_DEFAULTS, _ansible_check_mode=True)
    assert res["changed"] is True and path.read_text() == original
    res = run(capsys, path=str(path), defaults=ROLE_DEFAULTS)
    assert res["config"] == {"log-opts": {"max-size": "10m", "max-file": "5"}, "live-restore": False,
                             "log-driver": "json-file"}
    assert res["changed_keys"] == ["log-driver", "log-opts.max-file"] and res["removed_keys"] == []
    res = run(capsys, path=str(path), defaults=ROLE_DEFAULTS)
    assert res["changed"] is False


def test_settings_replace_what_defaults_keep(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"log-opts": {"max-size": "10m"}}')
    res = run(capsys, path=str(path), defaults=ROLE_DEFAULTS, settings={"log-opts": {"max-size": "50m"}})
    assert res["config"]["log-opts"] == {"max-size": "50m", "max-file": "5"}


def test_default_log_options_stay_out_of_another_drivers_file(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"log-driver": "syslog"}')
    res = run(capsys, path=str(path), defaults=ROLE_DEFAULTS)
    assert res["config"] == {"log-driver": "syslog", "live-restore": True}
    res = run(capsys, path=str(path), defaults=ROLE_DEFAULTS, settings={"log-driver": "json-file"})
    assert res["config"]["log-opts"] == {"max-size": "100m", "max-file": "5"}


def test_bad_defaults_fail_naming_the_key_and_leave_the_file(tmp_path, capsys):
    path = tmp_path / "daemon.json"
    path.write_text('{"debug": true}\n')
    res = run(capsys, path=str(path), defaults={"log-opts": {"max-size": float("nan")}})
    assert res["failed"] is True and "defaults.log-opts.max-size" in res["msg"]
    assert path.read_text() == '{"debug": true}\n'


@pytest.mark.parametrize("args, removed", [
    ({"remove": {"insecure-registries": ["head01:5000", "10.0.0.0/8"]}}, ["insecure-registries"]),
    ({"remove": {"insecure-registries": ["head01:5000"]}}, []),           # the list stays, with one registry
    ({"settings": {"debug": None, "labels": ["gpu"]}}, ["debug"]),
    ({"settings": {"runtimes": {"legacy": None}}}, ["runtimes.legacy"]),
    ({"settings": {"debug": False}}, []),
])
def test_removed_keys_name_what_left_the_file(tmp_path, capsys, args, removed):
    path = tmp_path / "daemon.json"
    path.write_text(json.dumps({"insecure-registries": ["head01:5000", "10.0.0.0/8"], "debug": True,
                                "runtimes": {"legacy": {"path": "x"}, "nvidia": {"path": "y"}}}))
    res = run(capsys, path=str(path), **args)
    assert res["changed"] is True and res["removed_keys"] == removed
