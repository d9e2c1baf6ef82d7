# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adversarial tests of the drift_report callback: secrets wherever a result can carry them.

Private keys, password hashes and Docker credentials are put in diffs (text, JSON-shaped,
prepared, cut short), failure messages, task names, loop labels, targets and unreachable
messages; no_log results come in every shape Ansible produces.  The report files must hold
none of it, must say that something changed, and must not be readable by others.  One real
ansible-playbook run at -vvv with --check --diff checks the same end to end.

Run with `.venv/bin/pytest tests/adversarial`.
"""

import json
import os
import stat

import pytest

from ansible_collections.hpc.gpu_containers.plugins.callback import drift_report
from ansible_collections.hpc.gpu_containers.tests.adversarial.test_registry_adversarial import run_playbook
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.callback.drift_callback import FakeResult, FakeTask, drift_callback

# Key bodies carry a marker that nothing else in a report carries.
MARK = "Xk9"
RSA_KEY = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAXk9rsaBodyLineOne0123456789abcdefghijklmnopqrstuv\n"
           "Xk9rsaBodyLineTwo0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ+/abcdefgh\n-----END RSA PRIVATE KEY-----\n")
EC_KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIXk9ecBody0123456789abcdefghijklmnopqrstuvwxyz0123\n-----END EC PRIVATE KEY-----\n"
PKCS8_KEY = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAXk9pkcs8Body0123456789abcdefghijklmnopqrstuvwxyzABCD\n-----END PRIVATE KEY-----\n"
ENCRYPTED_KEY = ("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFHDBOBgkqXk9encBody0123456789abcdefghijklmnopqrstuvwxyz\n"
                 "-----END ENCRYPTED PRIVATE KEY-----\n")
OPENSSH_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmXk9sshBody0123456789abcdefghij\n"
               "-----END OPENSSH PRIVATE KEY-----\n")
UNTERMINATED_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANXk9cutOffBody0123456789abcdefghijklmnopqrstuvwxyz\n"
BCRYPT_LINE = "hpcadmin:$2y$05$Xk9" + "a" * 50 + "\n"
DOCKER_CONFIG = '{"auths": {"head:5000": {"auth": "Xk9aHBjYWRtaW46c2VjcmV0"}}}\n'


def report_text(report_dir):
    return (report_dir / "drift.json").read_text() + (report_dir / "drift.md").read_text()


DIFFS = [
    ("rsa-added", {"before": "", "after": RSA_KEY}),
    ("ec-removed", {"before": EC_KEY, "after": ""}),
    ("pkcs8-replaced", {"before": PKCS8_KEY, "after": PKCS8_KEY.replace("MIGH", "MIGI")}),
    ("encrypted-in-context", {"before": "a=1\n" + ENCRYPTED_KEY + "b=2\n", "after": "a=2\n" + ENCRYPTED_KEY + "b=2\n"}),
    ("openssh", {"before": "", "after": OPENSSH_KEY}),
    ("unterminated", {"before": "", "after": "header\n" + UNTERMINATED_KEY}),
    ("json-shaped", {"before": {}, "after": {"tls": {"key": RSA_KEY}}}),
    ("prepared", {"prepared": "--- a\n+++ b\n" + "".join("+" + line + "\n" for line in EC_KEY.splitlines())}),
    ("list-of-diffs", [{"before": "x\n", "after": "y\n"}, {"before": "", "after": PKCS8_KEY}]),
    ("key-in-header", {"before": "", "after": "x\n", "after_header": RSA_KEY}),
    ("bcrypt-htpasswd", {"before": "", "after": BCRYPT_LINE}),
    ("docker-config-auth", {"before": "{}\n", "after": DOCKER_CONFIG}),
    ("cut-mid-key", {"before": "", "after": "".join("line%d\n" % i for i in range(5)) + RSA_KEY}),
]


@pytest.mark.parametrize("diff", [case[1] for case in DIFFS], ids=[case[0] for case in DIFFS])
def test_secrets_in_diffs_never_reach_the_report(tmp_path, diff):
    callback = drift_callback(tmp_path / "report", max_diff_lines=10)  # cuts "cut-mid-key" inside the key
    callback.v2_runner_on_ok(FakeResult(FakeTask("Change something"), {"changed": True, "diff": diff}))
    text = report_text(tmp_path / "report")
    assert MARK not in text
    change = json.loads((tmp_path / "report" / "drift.json").read_text())["hosts"]["head"]["changed"][0]
    assert change["diff"]  # the change itself still shows
    assert "redacted" in change["diff"]


WHERE = [
    ("task-name", lambda cb: cb.v2_runner_on_ok(FakeResult(FakeTask("Install " + EC_KEY), {"changed": True}))),
    ("failure-msg", lambda cb: cb.v2_runner_on_failed(FakeResult(FakeTask("Parse"), {"failed": True, "msg": "bad: " + RSA_KEY}))),
    ("item-label", lambda cb: cb.v2_runner_item_on_ok(FakeResult(FakeTask("Accounts"), {"changed": True, "_ansible_item_label": BCRYPT_LINE}))),
    ("target", lambda cb: cb.v2_runner_on_ok(FakeResult(FakeTask("Write"), {"changed": True, "dest": BCRYPT_LINE.strip()}))),
    ("unreachable", lambda cb: cb.v2_runner_on_unreachable(FakeResult(FakeTask("Connect"), {"unreachable": True, "msg": DOCKER_CONFIG}))),
]


@pytest.mark.parametrize("event", [case[1] for case in WHERE], ids=[case[0] for case in WHERE])
def test_secrets_outside_diffs_never_reach_the_report(tmp_path, event):
    event(drift_callback(tmp_path / "report"))
    assert MARK not in report_text(tmp_path / "report")


CENSORED = "the output has been hidden due to the fact that 'no_log: true' was specified for this result"
NO_LOG_SHAPES = [
    ("core-2.19-censored", False, {"censored": CENSORED, "changed": True, "_ansible_no_log": True}),
    ("censored-with-stray-diff", False, {"censored": CENSORED, "changed": True, "diff": {"before": "", "after": "Xk9 secret\n"}}),
    ("module-marked-no-log", False, {"changed": True, "_ansible_no_log": True, "diff": {"before": "", "after": "Xk9 secret\n"}}),
    ("task-no-log-uncensored", True, {"changed": True, "diff": {"before": "", "after": "Xk9 secret\n"}, "dest": "/Xk9"}),
    ("task-no-log-string", "True", {"changed": True, "diff": {"before": "", "after": "Xk9 secret\n"}}),
]


@pytest.mark.parametrize("no_log, result", [case[1:] for case in NO_LOG_SHAPES], ids=[case[0] for case in NO_LOG_SHAPES])
def test_no_log_results_are_counted_but_carry_nothing(tmp_path, no_log, result):
    callback = drift_callback(tmp_path / "report")
    callback.v2_runner_on_ok(FakeResult(FakeTask("Write a secret", no_log=no_log), dict(result)))
    report = json.loads((tmp_path / "report" / "drift.json").read_text())
    assert report["summary"]["changes"] == 1
    change = report["hosts"]["head"]["changed"][0]
    assert change["diff"] == "" and change["censored"] is True and change["target"] is None
    assert MARK not in report_text(tmp_path / "report")


@pytest.mark.parametrize("umask", [0o000, 0o002, 0o022, 0o077])
def test_report_modes_do_not_depend_on_the_umask(tmp_path, umask):
    report_dir = tmp_path / "new" / "report"
    old = os.umask(umask)
    try:
        drift_callback(report_dir).v2_runner_on_ok(FakeResult(FakeTask("Write"), {"changed": True}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(report_dir.stat().st_mode) == drift_report.REPORT_DIR_MODE == 0o750
    for name in ("drift.json", "drift.md"):
        mode = stat.S_IMODE((report_dir / name).stat().st_mode)
        assert mode == drift_report.REPORT_FILE_MODE == 0o640
        assert not mode & stat.S_IROTH


def test_a_world_writable_report_directory_is_warned_about(tmp_path, monkeypatch):
    report_dir = tmp_path / "report"
    report_dir.mkdir()
    report_dir.chmod(0o777)
    callback = drift_callback(report_dir)
    warnings = []
    monkeypatch.setattr(callback._display, "warning", lambda msg, *a, **k: warnings.append(msg))
    callback.v2_runner_on_ok(FakeResult(FakeTask("Write"), {"changed": True}))
    assert any("writable by every user" in w for w in warnings)
    assert stat.S_IMODE((report_dir / "drift.json").stat().st_mode) == 0o640


# -- one real run at -vvv ------------------------------------------------------------------

PLAY = [{
    "name": "Secrets in a checked run", "hosts": "all", "gather_facts": False,
    "tasks": [
        {"name": "A key written with diff off and no_log", "ansible.builtin.copy": {
            "dest": "{{ work }}/protected.key", "content": RSA_KEY, "mode": "0600"}, "diff": False, "no_log": True},
        {"name": "A key written carelessly", "ansible.builtin.copy": {
            "dest": "{{ work }}/careless.key", "content": EC_KEY, "mode": "0600"}},
        {"name": "Accounts in a no_log loop", "ansible.builtin.copy": {
            "dest": "{{ work }}/{{ item.name }}.htpasswd", "content": "{{ item.name }}:{{ item.hash }}\n", "mode": "0600"},
         "loop": [{"name": "alice", "hash": BCRYPT_LINE.split(":", 1)[1].strip()}], "no_log": True},
        {"name": "A htpasswd line written carelessly", "ansible.builtin.copy": {
            "dest": "{{ work }}/careless.htpasswd", "content": BCRYPT_LINE, "mode": "0600"}},
        {"name": "A no_log failure", "ansible.builtin.command": {"argv": ["false", "Xk9-argument"]},
         "no_log": True, "check_mode": False, "changed_when": False},
    ],
}]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("drift-run")
    proc = run_playbook(work, PLAY, "-vvv", "--check", "--diff", "-e", "work=%s" % work, report_dir=work / "report")
    return proc, work / "report"


def test_real_run_records_every_change_and_the_failure(real_run):
    proc, report_dir = real_run
    report = json.loads((report_dir / "drift.json").read_text())
    host = report["hosts"]["localhost"]
    assert [c["task"] for c in host["changed"]] == [
        "A key written with diff off and no_log", "A key written carelessly", "Accounts in a no_log loop",
        "A htpasswd line written carelessly"], proc.stdout[-3000:]
    assert host["failed"] == [{"task": "A no_log failure", "action": "ansible.builtin.command", "msg": drift_report.CENSORED_NOTE}]


@pytest.mark.parametrize("name", ["drift.json", "drift.md"])
def test_real_run_report_holds_no_secret_and_is_0640(real_run, name):
    _proc, report_dir = real_run
    text = (report_dir / name).read_text()
    assert MARK not in text
    assert "redacted private key" in text and "redacted password hash" in text
    assert stat.S_IMODE((report_dir / name).stat().st_mode) == 0o640
    assert stat.S_IMODE(report_dir.stat().st_mode) == 0o750
