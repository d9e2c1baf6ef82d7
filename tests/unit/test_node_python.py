# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node Python pre-flight (playbooks/node_python.yml), run with ansible-playbook on localhost.

The node's Python is a stand-in executable that reports 3.6.8 (an EL 8 platform Python) or the real
interpreter running these tests; the node's /etc/os-release is the real one or, where a mount namespace
can be made, an EL 8 or EL 7 one bound over it for that ansible-playbook process alone.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS = ROOT / "playbooks"
NODE_PYTHON = PLAYBOOKS / "node_python.yml"

EL8 = 'NAME="Rocky Linux"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="8.10"\n'
EL7 = 'NAME="CentOS Linux"\nID="centos"\nID_LIKE="rhel fedora"\nVERSION_ID="7"\n'


@pytest.fixture
def stand_in(tmp_path):
    """An executable that answers like an old Python: 3.6.8 for the version the pre-flight asks for."""
    path = tmp_path / "python3.6"
    path.write_text("#!/bin/sh\n# stand-in for an EL 8 platform Python\necho 3.6.8\n")
    path.chmod(0o755)
    return str(path)


def _mount_prefix(tmp_path, os_release):
    """A command prefix that runs its command with ``os_release`` bound over /etc/os-release, or None."""
    unshare = shutil.which("unshare")
    if not unshare or not os.path.exists("/etc/os-release"):
        return None
    fake = tmp_path / "os-release"
    fake.write_text(os_release)
    prefix = [unshare, "--mount"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    script = 'mount --bind "$0" /etc/os-release && exec "$@"'
    probe = subprocess.run(prefix + ["sh", "-c", script, str(fake), "cat", "/etc/os-release"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0 or probe.stdout != os_release:
        return None
    return prefix + ["sh", "-c", script, str(fake)]


def _run(tmp_path, interpreter, *args, prefix=None):
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"ansible.builtin.import_playbook": str(NODE_PYTHON),
                                         "vars": {"hpc_node_python_hosts": "all"}}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_RETRY_FILES_ENABLED="0")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", "node1,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % interpreter, str(playbook), *args]
    return subprocess.run((prefix or []) + cmd, env=env, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=300, check=False)


def _failure(proc):
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"node1\s*:\s*ok=1\s+changed=0\s+unreachable=0\s+failed=1", proc.stdout), proc.stdout[-3000:]
    match = re.search(r'fatal: \[node1\]: FAILED! => \{.*?"msg": "(.*?)"\n', proc.stdout, re.S)
    assert match, proc.stdout[-3000:]
    return match.group(1)


def test_good_python_passes(tmp_path):
    proc = _run(tmp_path, sys.executable)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    version = "%d.%d.%d" % sys.version_info[:3]
    assert "node1: %s, Python %s" % (sys.executable, version) in proc.stdout
    assert re.search(r"node1\s*:\s*ok=2\s+changed=0\s+unreachable=0\s+failed=0", proc.stdout), proc.stdout


def test_old_python_fails_with_the_fix(tmp_path, stand_in):
    message = _failure(_run(tmp_path, stand_in))
    assert "node1: Ansible would run the collection's modules with %s, Python 3.6.8;" % stand_in in message
    assert "they need Python 3.9 or newer." in message
    assert "--skip-tags node_python" in message


def test_check_mode_still_checks(tmp_path, stand_in):
    message = _failure(_run(tmp_path, stand_in, "--check"))
    assert "Python 3.6.8" in message


def test_missing_python_fails(tmp_path):
    message = _failure(_run(tmp_path, str(tmp_path / "no-such-python")))
    assert "no Python to run the collection's modules with" in message
    assert "ansible_python_interpreter %s does not run there" % (tmp_path / "no-such-python") in message


def test_skip_tag(tmp_path, stand_in):
    proc = _run(tmp_path, stand_in, "--skip-tags", "node_python")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Find the node's Python" not in proc.stdout


@pytest.mark.parametrize("os_release, expected, unexpected", [
    (EL8, 'Run \\"dnf install python3.11\\" on it and set ansible_python_interpreter=/usr/bin/python3.11', "not supported"),
    (EL7, "centos 7 (EL 7) is not supported", "dnf install"),
], ids=["EL 8", "EL 7"])
def test_enterprise_linux_fix(tmp_path, stand_in, os_release, expected, unexpected):
    prefix = _mount_prefix(tmp_path, os_release)
    if prefix is None:
        pytest.skip("no mount namespace here to give the node another /etc/os-release")
    message = _failure(_run(tmp_path, stand_in, prefix=prefix))
    assert "Python 3.6.8" in message
    assert expected in message
    assert unexpected not in message


@pytest.mark.parametrize("playbook, hosts, position", [
    # site.yml's first play checks the inventory on the controller alone; the node Python comes next.
    ("site.yml", "docker_hosts:gpu_nodes:registry:lsf_master", 1),
    ("slurm.yml", "slurm_controller:slurm_nodes", 0),
    ("rootless.yml", "rootless_hosts", 0),
])
def test_playbooks_check_node_python_first(playbook, hosts, position):
    plays = yaml.safe_load((PLAYBOOKS / playbook).read_text(encoding="utf-8"))
    imported = plays[position]
    assert imported.get("ansible.builtin.import_playbook") == "node_python.yml", imported
    assert imported["vars"]["hpc_node_python_hosts"] == hosts
    # Nothing before it reaches a node: no facts, and only tasks that run on the controller.
    for play in plays[:position]:
        assert play.get("gather_facts") is False
        assert {next(k for k in task if k.startswith("ansible.builtin.")) for task in play["tasks"]} \
            <= {"ansible.builtin.assert"}
