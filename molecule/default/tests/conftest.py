"""Shared helpers for the test bed's testinfra tests.

Tests run with `molecule verify` (pytest --connection=ansible against the
scenario inventory); `host` is testinfra's fixture for the node under test.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

LSF_TOP = "/usr/share/lsf"
LSF_ENVDIR = LSF_TOP + "/conf"
CLUSTER = "gpucluster"
STUB_LOG = "/var/log/lsf-stub/calls.jsonl"
BIN_TYPES = {
    "x86_64": "linux3.10-glibc2.17-x86_64",
    "ppc64le": "linux3.10-glibc2.17-ppc64le",
    "aarch64": "linux3.10-glibc2.17-armv8",
}


def ansible_tool(name):
    """Path of an Ansible command (ansible, ansible-playbook) on the controller: on PATH, or next to the
    Python that runs the tests (the project venv when PATH does not have it)."""
    return shutil.which(name) or os.path.join(os.path.dirname(sys.executable), name)


def login_shell(host, command):
    """Run a command in a login shell, where profile.lsf has set PATH."""
    return host.run("bash -lc %s", command)


def stub_calls(host):
    """The recorded LSF stub calls of a node, oldest first."""
    log = host.file(STUB_LOG)
    if not log.exists:
        return []
    return [json.loads(line) for line in log.content_string.splitlines() if line.strip()]


@pytest.fixture()
def groups(host):
    """The inventory groups of the node under test."""
    return host.ansible.get_variables().get("group_names", [])


@pytest.fixture()
def lsf_bin_dir(host):
    arch = host.system_info.arch
    return "%s/10.1/%s" % (LSF_TOP, BIN_TYPES[arch])


def adhoc(node, module, args=None, become=False):
    """One module run ad hoc on ``node`` with the scenario's inventory; (rc, the module's result)."""
    argv = [ansible_tool("ansible"), "-i", os.environ["MOLECULE_INVENTORY_FILE"], node, "-m", module]
    argv += (["-a", json.dumps(args)] if args else []) + (["--become"] if become else [])
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=dict(
        os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
    start = proc.stdout.find("{")
    assert start >= 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report, dummy = json.JSONDecoder().raw_decode(proc.stdout[start:])
    return proc.returncode, report["plays"][0]["tasks"][0]["hosts"][node]
