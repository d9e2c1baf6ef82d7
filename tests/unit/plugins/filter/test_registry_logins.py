# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry login filters (registry_logins, registry_login_accounts, registry_upstream_cas,
registry_login_failures over module_utils/_registry_login.py): which logins a host makes, for which accounts,
what a failure says, and that no password reaches anything a task shows."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.registry_login_accounts import registry_login_accounts
from ansible_collections.hpc.gpu_containers.plugins.filter.registry_login_failures import registry_login_failures
from ansible_collections.hpc.gpu_containers.plugins.filter.registry_logins import registry_logins
from ansible_collections.hpc.gpu_containers.plugins.filter.registry_upstream_cas import registry_upstream_cas

KEY = "nvapi-Zm9vYmFyYmF6cXV4"
NGC = {"registry": "nvcr.io", "username": "$oauthtoken", "password": KEY}
VENDOR = {"registry": "registry.vendor.example:8443", "username": "site", "password": "vendor-pw",
          "ca_src": "files/vendor-ca.crt"}
SITE = {"registry": "head:5000", "username": "hpcadmin", "password": "site-pw"}
PASSWD = {"lsfadmin": ["x", "1500", "1500", "LSF administrator", "/home/lsfadmin", "/bin/bash"],
          "root": ["x", "0", "0", "root", "/root", "/bin/bash"]}


def lookups(*names):
    """The registered results of a getent passwd loop with fail_key false, as ansible.builtin.getent leaves
    them: a name the host lacks maps to nothing."""
    return [{"item": n, "changed": False, "ansible_facts": {"getent_passwd": {n: PASSWD.get(n)}}} for n in names]


def test_every_registry_for_every_account_site_first():
    accounts = registry_login_accounts(lookups("lsfadmin"))
    assert accounts == [{"name": "lsfadmin", "uid": 1500, "gid": 1500, "home": "/home/lsfadmin",
                         "config": "/home/lsfadmin/.docker/config.json"}]
    logins = registry_logins(SITE, [NGC, VENDOR], accounts)
    assert [(e["registry"], e["account"], e["config_path"], e["managed"]) for e in logins] == [
        ("head:5000", None, None, True), ("head:5000", "lsfadmin", "/home/lsfadmin/.docker/config.json", True),
        ("nvcr.io", None, None, False), ("nvcr.io", "lsfadmin", "/home/lsfadmin/.docker/config.json", False),
        ("registry.vendor.example:8443", None, None, False),
        ("registry.vendor.example:8443", "lsfadmin", "/home/lsfadmin/.docker/config.json", False)]
    assert logins[2]["password"] == KEY and logins[2]["username"] == "$oauthtoken"
    # a site registry without auth: only the upstreams
    assert [e["registry"] for e in registry_logins(None, [NGC], [])] == ["nvcr.io"]
    assert registry_logins(None, [], []) == []


def test_cas_hold_no_credentials():
    assert registry_upstream_cas([NGC, VENDOR]) == {"registry.vendor.example:8443": "files/vendor-ca.crt"}
    assert KEY not in repr(registry_upstream_cas([NGC, VENDOR]))


@pytest.mark.parametrize("upstreams, message", [
    ([{"registry": "https://nvcr.io", "username": "u", "password": "p"}],
     r"container_registry_upstreams\[0\]: registry 'https://nvcr.io' is not a registry name"),
    ([NGC, {"registry": "nvcr.io/nvidia", "username": "u", "password": "p"}],
     r"container_registry_upstreams\[1\]: registry 'nvcr.io/nvidia'"),
    ([{"registry": "nvcr.io", "username": "$oauthtoken", "password": ""}],
     r"container_registry_upstreams\[0\] \(nvcr.io\) has no password"),
    ([NGC, dict(NGC)], r"container_registry_upstreams\[1\] \(nvcr.io\) is named twice"),
    ([dict(NGC, cert="x")], r"unknown keys cert"),
    ("nvcr.io", r"must be a list"),
])
def test_bad_upstream_named_without_its_secret(upstreams, message):
    for call in (lambda: registry_upstream_cas(upstreams), lambda: registry_logins(None, upstreams, [])):
        with pytest.raises(AnsibleFilterError, match=message) as err:
            call()
        assert KEY not in str(err.value)


def test_missing_account_is_an_error():
    with pytest.raises(AnsibleFilterError, match="this host has no account 'slurmjob'"):
        registry_login_accounts(lookups("lsfadmin", "slurmjob"))
    # no accounts asked for: the loop was empty or skipped
    assert registry_login_accounts([]) == [] == registry_login_accounts([{"skipped": True, "item": "x"}])


def _results(logins, outcomes):
    results = []
    for item, outcome in zip(logins, outcomes):
        result = {"item": item, "changed": False, "failed": False}
        if outcome is None:
            result["login_result"] = {}
        else:
            result["msg"] = outcome
        results.append(result)
    return results


def test_failures_masked_and_pending_only_for_the_site_registry_in_check_mode():
    logins = registry_logins(SITE, [NGC], [])
    refused = "Logging in failed: 401 Client Error: Unauthorized (password %s, site-pw)" % KEY
    results = _results(logins, [refused, refused])
    for check_mode in (False, True):
        failures = registry_login_failures(results, check_mode)
        assert [(f["registry"], f["pending"]) for f in failures] == [("head:5000", check_mode), ("nvcr.io", False)]
        text = repr(failures)
        assert KEY not in text and "site-pw" not in text and "********" in text
        assert failures[1]["message"].startswith("Logging in to nvcr.io as '$oauthtoken' (for the connecting user)")
    # logins that worked and skipped ones are no failures
    assert registry_login_failures(_results(logins, [None, None]) + [{"skipped": True}], True) == []
    # a certificate error in check mode is a failure, not a pending password
    tls = registry_login_failures(_results(logins, ["x509: certificate signed by unknown authority", None]), True)
    assert [f["pending"] for f in tls] == [False]
