"""Shared helpers for the test bed's testinfra tests.

Tests run with `molecule verify` (pytest --connection=ansible against the
scenario inventory); `host` is testinfra's fixture for the node under test.
"""

import json
import os
import shutil
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
