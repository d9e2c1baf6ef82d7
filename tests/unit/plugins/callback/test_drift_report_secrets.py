# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift_report callback keeps secrets out of the report and the report away from others.

The callback is driven directly with fake task results (the shapes Ansible hands to
callbacks: a censored result for no_log tasks, a diff dict otherwise) and the files it
writes are read back.
"""

import json
import os
import stat

import pytest

from ansible_collections.hpc.gpu_containers.plugins.callback import drift_report
from ansible_collections.hpc.gpu_containers.plugins.callback.drift_report import render_diff
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.callback.drift_callback import FakeResult, FakeStats, FakeTask, drift_callback

KEY_BODY = ("MIGkAgEBBDBm0Jr8yQ1xkq7Bv2bqTn3wz2fQx9Hc7P0Lq4Vw1Zt8sJk3Nf6cRbA2\n"
            "oAcGBSuBBAAioWQDYgAE3w9Qh1sXJt0oYVbq3Vn8rXcK2mZpT5uLwE4yGfH6sDiA\n")
PEM_KEY = "-----BEGIN EC PRIVATE KEY-----\n" + KEY_BODY + "-----END EC PRIVATE KEY-----\n"
OTHER_KEY = PEM_KEY.replace("MIGk", "MIGj")
BCRYPT = "$2b$12$" + "Ab1./Cd2" * 6 + "Ef3Gh"  # 53 characters after the cost
CENSORED = {
    "censored": "the output has been hidden due to the fact that 'no_log: true' was specified for this result",
    "changed": True,
    "_ansible_no_log": True,
}


def report_texts(report_dir):
    return (report_dir / "drift.json").read_text(), (report_dir / "drift.md").read_text()


def test_a_private_key_in_a_diff_is_redacted_in_both_files(tmp_path):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    callback.v2_runner_on_ok(FakeResult(FakeTask("Install the site private key"), {
        "changed": True, "dest": "/etc/hpc-registry/tls/server.key",
        "diff": {"before": "", "after": PEM_KEY, "after_header": "/etc/hpc-registry/tls/server.key"}}))
    json_text, md_text = report_texts(report_dir)
    for text in (json_text, md_text):
        assert "MIGk" not in text and "oAcGBSuBBAAi" not in text
        assert "[redacted private key, sha256 " in text
    change = json.loads(json_text)["hosts"]["head"]["changed"][0]
    assert change["target"] == "/etc/hpc-registry/tls/server.key"


def test_a_replaced_key_still_shows_as_a_change_without_either_key():
    text = render_diff({"before": PEM_KEY, "after": OTHER_KEY})
    assert "MIGk" not in text and "MIGj" not in text
    removed = [line for line in text.splitlines() if line.startswith("-[redacted")]
    added = [line for line in text.splitlines() if line.startswith("+[redacted")]
    assert len(removed) == len(added) == 1 and removed[0][1:] != added[0][1:]


def test_a_key_cut_off_by_max_diff_lines_leaves_no_key_lines():
    long_key = "-----BEGIN PRIVATE KEY-----\n" + "".join("QUJD%04dREVG\n" % i for i in range(50)) + "-----END PRIVATE KEY-----\n"
    text = render_diff({"before": "", "after": "header\n" + long_key}, max_lines=8)
    assert "QUJD" not in text


def test_prepared_text_and_headers_are_redacted_too():
    text = render_diff([{"prepared": "+" + PEM_KEY.replace("\n", "\n+")},
                        {"before": "", "after": "x\n", "after_header": "user:" + BCRYPT}])
    assert "MIGk" not in text and BCRYPT not in text


@pytest.mark.parametrize("line, secret", [
    ("hpcadmin:" + BCRYPT, BCRYPT[7:]),
    ("hpcadmin:$apr1$abcdefgh$" + "A" * 22, "A" * 22),
    ("root:$6$saltsalt$" + "b" * 86 + ":19000:0:99999:7:::", "b" * 86),
    ("root:$y$j9T$abcdefghijklmnop$" + "c" * 43 + ":19000::::::", "c" * 43),
    ("legacy:{SHA}" + "d" * 27 + "=", "d" * 27),
    ('{"auths": {"head:5000": {"auth": "aHBjYWRtaW46czNjcjN0"}}}', "aHBjYWRtaW46czNjcjN0"),
])
def test_password_hashes_and_docker_auth_are_redacted(line, secret):
    text = render_diff({"before": "", "after": line + "\n"})
    assert "redacted" in text
    assert secret not in text


def test_redact_keeps_ordinary_text():
    text = "wanted=1\nLSB_RESOURCE_ENFORCE=\"cpu memory\"\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    assert drift_report.redact(text) == text


def test_a_censored_result_is_recorded_without_diff_or_item(tmp_path):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    callback.v2_runner_on_ok(FakeResult(FakeTask("Install the site private key", no_log=True), dict(CENSORED)))
    report = json.loads((report_dir / "drift.json").read_text())
    change = report["hosts"]["head"]["changed"][0]
    assert change["diff"] == "" and change["item"] is None and change["censored"] is True
    assert report["summary"]["changes"] == 1  # still drift: only the details are hidden
    assert drift_report.CENSORED_NOTE in (report_dir / "drift.md").read_text()


@pytest.mark.parametrize("task_no_log, result_flags", [
    (True, {}),                          # the task says no_log, the result was not censored
    (False, {"_ansible_no_log": True}),  # the module marked its own result
    ("yes", {}),                         # a no_log given as a string
])
def test_a_diff_on_a_no_log_result_is_not_stored(tmp_path, task_no_log, result_flags):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    result = {"changed": True, "dest": "/etc/secret", "diff": {"before": "", "after": "password=hunter2\n"}}
    result.update(result_flags)
    callback.v2_runner_on_ok(FakeResult(FakeTask("Write a secret", no_log=task_no_log), result))
    json_text, md_text = report_texts(report_dir)
    assert "hunter2" not in json_text and "hunter2" not in md_text
    assert "/etc/secret" not in json_text


def test_a_censored_loop_item_keeps_no_label(tmp_path):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    item = dict(CENSORED, _ansible_item_label={"name": "alice", "password": "hunter2"})
    callback.v2_runner_item_on_ok(FakeResult(FakeTask("Accounts", no_log=True), item))
    json_text, _md = report_texts(report_dir)
    assert "hunter2" not in json_text
    assert json.loads(json_text)["hosts"]["head"]["changed"][0]["item"] is None


def test_a_censored_failure_keeps_no_message(tmp_path):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    failed = dict(CENSORED, failed=True, msg="login as alice:hunter2 refused")
    callback.v2_runner_on_failed(FakeResult(FakeTask("Log in", no_log=True), failed))
    report = json.loads((report_dir / "drift.json").read_text())
    assert report["hosts"]["head"]["failed"] == [
        {"task": "Log in", "action": "ansible.builtin.copy", "msg": drift_report.CENSORED_NOTE}]


def test_a_failure_message_is_redacted(tmp_path):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    callback.v2_runner_on_failed(FakeResult(FakeTask("Parse key"), {"failed": True, "msg": "bad key: " + PEM_KEY}))
    json_text, md_text = report_texts(report_dir)
    assert "MIGk" not in json_text and "MIGk" not in md_text


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_report_files_are_0640_and_a_new_directory_0750(tmp_path, umask):
    report_dir = tmp_path / "deep" / "report"
    old = os.umask(umask)
    try:
        callback = drift_callback(report_dir)
        callback.v2_runner_on_ok(FakeResult(FakeTask("Managed file"), {"changed": True, "diff": {"before": "a\n", "after": "b\n"}}))
        callback.v2_playbook_on_stats(FakeStats())
    finally:
        os.umask(old)
    assert stat.S_IMODE(report_dir.stat().st_mode) == 0o750
    names = ["drift.json", "drift.junit.xml", "drift.md", "hpc_gpu_containers_drift.prom"]
    for name in names:
        assert stat.S_IMODE((report_dir / name).stat().st_mode) == 0o640
    assert sorted(p.name for p in report_dir.iterdir()) == names  # no temp file left


def test_a_prom_directory_of_its_own_is_made_0750_with_the_textfile_0640(tmp_path):
    report_dir, prom_dir = tmp_path / "report", tmp_path / "textfile" / "collector"
    old = os.umask(0)
    try:
        callback = drift_callback(report_dir, prom_dir=str(prom_dir))
        callback.v2_runner_on_ok(FakeResult(FakeTask("Managed file"), {"changed": True}))
        assert not prom_dir.exists()  # written once, at the end of the run: never half a run's numbers
        callback.v2_playbook_on_stats(FakeStats())
    finally:
        os.umask(old)
    assert stat.S_IMODE(prom_dir.stat().st_mode) == stat.S_IMODE(prom_dir.parent.stat().st_mode) == 0o750
    assert [p.name for p in prom_dir.iterdir()] == ["hpc_gpu_containers_drift.prom"]
    assert stat.S_IMODE((prom_dir / "hpc_gpu_containers_drift.prom").stat().st_mode) == 0o640
    assert not (report_dir / "hpc_gpu_containers_drift.prom").exists()


def test_junit_and_prom_hold_no_secret(tmp_path):
    report_dir = tmp_path / "report"
    callback = drift_callback(report_dir)
    callback.v2_runner_on_ok(FakeResult(FakeTask("Install the site private key"), {
        "changed": True, "dest": "/etc/hpc-registry/tls/server.key",
        "diff": {"before": "", "after": PEM_KEY, "after_header": "/etc/hpc-registry/tls/server.key"}}))
    callback.v2_runner_on_failed(FakeResult(FakeTask("Parse key"), {"failed": True, "msg": "bad key: " + PEM_KEY}))
    callback.v2_playbook_on_stats(FakeStats())
    junit = (report_dir / "drift.junit.xml").read_text()
    prom = (report_dir / "hpc_gpu_containers_drift.prom").read_text()
    assert "[redacted private key, sha256 " in junit
    for text in (junit, prom):
        assert "MIGk" not in text and "oAcGBSuBBAAi" not in text


def test_an_existing_directory_keeps_its_mode_and_the_files_are_still_0640(tmp_path):
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    report_dir.chmod(0o755)
    callback = drift_callback(report_dir)
    callback.v2_playbook_on_start(type("Playbook", (), {"_file_name": "drift.yml"})())
    assert stat.S_IMODE(report_dir.stat().st_mode) == 0o755
    assert stat.S_IMODE((report_dir / "drift.json").stat().st_mode) == 0o640


def test_a_planted_temp_file_link_is_not_followed(tmp_path):
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    (report_dir / "drift.json.tmp").symlink_to(victim)
    callback = drift_callback(report_dir)
    callback.v2_runner_on_ok(FakeResult(FakeTask("Managed file"), {"changed": True}))
    assert victim.read_text() == "untouched\n"
    assert json.loads((report_dir / "drift.json").read_text())["summary"]["changes"] == 1
