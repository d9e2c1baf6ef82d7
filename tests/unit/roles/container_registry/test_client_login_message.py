# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A client's failed registry login fails with Docker's message, its password blanked out, on every supported
ansible-core (the login task is no_log, whose own failure shows no reason before ansible-core 2.19): the role's
check after the login, run with ansible-playbook on localhost against the login results docker_login returns.
The real login against a certificate for another name is molecule/registry_insecure's side effect."""

import re

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import role_task, run_playbook

CHECK = "Refuse a registry this host cannot log in to, or in check mode report a password it lacks yet"
DOCKER_MESSAGE = ("Logging into https://registry-alias:5000 for user hpcadmin failed - 500 Server Error: "
                  "x509: certificate is valid for reg-head, not registry-alias (password s3cret)")


def _run(tmp_path, login, password="s3cret", *args, managed=True):
    # the login loop's results, as failed_when: false leaves them: each with its item (registry_logins' entry)
    item = {"registry": "registry-alias:5000", "username": "hpcadmin", "password": password, "managed": managed,
            "account": None, "config_path": None}
    play = {"hosts": "localhost", "gather_facts": False, "tasks": [role_task("container_registry", "client.yml", CHECK)],
            "vars": {"__container_registry_login": {"results": [dict(login, item=item)]}}}
    return run_playbook(tmp_path, [play], *args)


@pytest.mark.parametrize("password, shown", [("s3cret", "(password ********)"), ("", "(password s3cret)")])
def test_a_failed_login_fails_with_dockers_message(tmp_path, password, shown):
    # docker_login's failure, as failed_when: false leaves it: failed false, the message, no login_result
    proc = _run(tmp_path, {"failed": False, "changed": False, "msg": DOCKER_MESSAGE}, password)
    assert proc.returncode == 2, proc.stdout[-3000:]
    message = re.search(r'"msg": "(.*)"', proc.stdout).group(1)
    assert message.startswith(
        "Logging in to registry-alias:5000 as 'hpcadmin' (for the connecting user) failed: Logging into")
    assert "certificate is valid for reg-head, not registry-alias " + shown in message
    if password:
        assert password not in proc.stdout + proc.stderr


def test_a_login_passes(tmp_path):
    proc = _run(tmp_path, {"failed": False, "changed": False, "login_result": {}})
    assert proc.returncode == 0, proc.stdout[-3000:]


UNAUTHORIZED = ("Logging into https://registry-alias:5000 for user hpcadmin failed - 401 Client Error for "
                "https://registry-alias:5000/v2/: Unauthorized")


def test_check_mode_reports_a_password_the_registry_lacks_yet_as_a_change(tmp_path):
    # the nightly drift check or a --check pre-flight after a password change: the registry host's htpasswd
    # update is only shown in check mode, so the login with the new password is refused; that is drift, not a
    # failure
    proc = _run(tmp_path, {"failed": False, "changed": False, "msg": UNAUTHORIZED}, "n3w-secret", "--check")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert re.search(r"changed=1 .*failed=0", proc.stdout), proc.stdout[-3000:]
    assert "the registry does not have this password yet" in proc.stdout
    assert "n3w-secret" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("args, message", [((), UNAUTHORIZED), (("--check",), DOCKER_MESSAGE)],
                         ids=["401 outside check mode", "certificate error in check mode"])
def test_other_login_failures_still_fail(tmp_path, args, message):
    proc = _run(tmp_path, {"failed": False, "changed": False, "msg": message}, "s3cret", *args)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "failed: Logging into" in proc.stdout


def test_check_mode_fails_an_upstream_that_refuses_its_key(tmp_path):
    # the collection does not manage an upstream's accounts: a 401 there is a wrong key, also in check mode
    proc = _run(tmp_path, {"failed": False, "changed": False, "msg": UNAUTHORIZED}, "nvapi-key", "--check",
                managed=False)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "failed: Logging into" in proc.stdout and "nvapi-key" not in proc.stdout + proc.stderr
