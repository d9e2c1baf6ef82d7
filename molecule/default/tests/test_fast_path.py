# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift fast path on the converged test bed (docs/drift-fast-path.md).

Each class of change the fast path must catch on its own, made out of band on one node: the node's
fingerprint check (one module run, as site.yml runs it in check mode) is no longer clean and names what
changed; put back, the node is clean again. The LSF files, the daemon.json, the docker group and a stopped
service are the drift step's tampers (drift.yml checks the fast path named them); here the others: a package,
a local image, the GPUs (the stand-in driver's values), an input variable,
and the completeness of the record against what converge manages. An image replaced in the registry:
test_images.py.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import testinfra
import testinfra.utils.ansible_runner
from conftest import adhoc, ansible_tool

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
PLAYBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "playbooks")
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
RECORD = "/var/lib/hpc-gpu-containers/drift-fingerprint.json"
FAST_PATH = {"inputs": "{{ lookup('hpc.gpu_containers.drift_inputs') }}"}


def _node(name):
    return testinfra.get_host("ansible://%s?ansible_inventory=%s" % (name, INVENTORY))


def _fast_path(name, extra_vars=None):
    """The fingerprint check on ``name``, as the drift check's first play runs it."""
    if extra_vars:
        argv = [ansible_tool("ansible"), "-i", INVENTORY, name, "--become", "-m", "hpc.gpu_containers.drift_fingerprint",
                "-a", json.dumps(FAST_PATH), "-e", json.dumps(extra_vars)]
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=dict(
            os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
            ANSIBLE_STDOUT_CALLBACK="ansible.posix.json"))
        report = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.find("{"):])[0]
        return report["plays"][0]["tasks"][0]["hosts"][name]
    rc, result = adhoc(name, "hpc.gpu_containers.drift_fingerprint", FAST_PATH, become=True)
    assert rc == 0, result
    return result


def _recorded(name):
    return json.loads(_node(name).file(RECORD).content_string)


@pytest.mark.parametrize("name", ["head", "gpu01", "gpu02"])
def test_every_converged_node_is_clean_and_its_record_private(name):
    result = _fast_path(name)
    assert result["clean"] and result["differences"] == [], result
    record = _node(name).file(RECORD)
    assert record.mode == 0o600 and record.user == "root"
    assert "testbed-registry-pw" not in record.content_string


def test_the_record_covers_what_converge_manages_on_each_kind_of_node():
    """The items each node's record lists: every file and setting the roles write there (the sources: the
    roles' <role>_drift_items facts)."""
    head, gpu = _recorded("head")["items"], _recorded("gpu01")["items"]
    for path in ("/usr/share/lsf/conf/lsf.conf", "/usr/share/lsf/conf/lsf.shared",
                 "/usr/share/lsf/conf/lsf.cluster.gpucluster",
                 "/usr/share/lsf/conf/lsbatch/gpucluster/configdir/lsb.applications",
                 "/etc/docker/registry", "/etc/hpc-registry/tls", "/etc/docker/daemon.json",
                 "/etc/docker/certs.d", "/root/.docker/config.json", "/etc/hpc-gpu-containers",
                 "/etc/hpc-gpu-containers/variant-digests.json"):
        assert path in head["paths"], path
    assert "docker-registry" in head["services"] and "docker" in head["services"]
    assert "head:5000/hpc/deeplearning:variants" in head["manifests"]
    for path in ("/etc/docker/daemon.json", "/etc/cdi/nvidia.yaml", "/etc/hpc-gpu-containers",
                 "/etc/apt/sources.list.d/nvidia-container-toolkit.sources"):
        assert path in gpu["paths"], path
    assert gpu["gpus"] is True and gpu["node"] is True and gpu["groups"] == ["docker"]
    assert "nvidia-container-toolkit" in gpu["packages"] and "docker.io" in gpu["packages"]
    assert "head:5000/hpc/deeplearning:cuda11-sm70" in gpu["images"]


# Written by the services themselves (dockerd's identity key), not by the roles.
NOT_THE_ROLES = {"/etc/docker/key.json"}
# The system's databases (users, groups; the docker group's members are an item of their own) and what the
# packages' maintainer scripts generate when the roles install packages (pam-auth-update, netbase, apparmor).
SYSTEM_FILES = ("/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow", "/etc/subuid", "/etc/subgid",
                "/etc/ld.so.cache", "/etc/networks", "/etc/pam.d/", "/etc/apparmor.d/")


@pytest.mark.parametrize("name", ["head", "gpu01"])
def test_every_file_converge_wrote_is_under_a_recorded_path(name):
    """Every file written since the end of prepare (converge, idempotence, the drift step) in the places the roles
    write, that no package owns, is one the record lists or lies under one of its directories."""
    node = _node(name)
    # the LSF tree is one volume of all nodes (a shared file system): its files are the LSF master's
    places = "/etc /usr/local /var/lib/hpc-gpu-containers /root/.docker" + (" /usr/share/lsf/conf" if name == "head" else "")
    written = node.check_output(
        "find %s -xdev -type f -newer /var/lib/hpc-gpu-testbed/prepared 2>/dev/null || true" % places).split()
    owned = set()
    if written:
        listing = node.run("dpkg-query -S %s" % " ".join(written)).stdout
        owned = {line.split(": ", 1)[1] for line in listing.splitlines() if ": " in line}
    paths = _recorded(name)["items"]["paths"]
    uncovered = [path for path in written
                 if path not in owned and path != RECORD and path not in NOT_THE_ROLES
                 and not path.startswith(SYSTEM_FILES) and not path.endswith("~")
                 and not any(path == item or path.startswith(item.rstrip("/") + "/") for item in paths)]
    assert len(written) > 5, written  # converge did write there
    assert uncovered == [], uncovered


def _drift_check(report_dir):
    """drift.yml --check --diff on the whole scenario, with the drift_report callback; (rc, drift.json)."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACKS_ENABLED="hpc.gpu_containers.drift_report",
               HPC_DRIFT_REPORT_DIR=str(report_dir))
    env.pop("ANSIBLE_FORCE_COLOR", None)
    proc = subprocess.run([ansible_tool("ansible-playbook"), "-i", INVENTORY, "--check", "--diff",
                           os.path.join(PLAYBOOKS, "drift.yml")], env=env, capture_output=True, text=True, check=False)
    assert (report_dir / "drift.json").exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, json.loads((report_dir / "drift.json").read_text())


def _tampered(name, change, restore, expect, owners, report_dir=None):
    """``owners``: the roles site.yml's drift check runs on the node (None: all of them, the full check). With
    ``report_dir``, the drift check itself runs: those roles alone must find the change (a change whose role the
    scoped check left out would be missed)."""
    node = _node(name)
    node.run_expect([0], change)
    try:
        result = _fast_path(name)
        assert not result["clean"] and expect in result["differences"], result
        assert result["owners"] == owners, result
        if report_dir is not None:
            rc, report = _drift_check(report_dir)
            entry = report["hosts"][name]
            assert rc == 3 and entry["fast_path"].get("roles") == owners, entry
            roles = {(change.get("role") or "").split(".")[-1] for change in entry["changed"]}
            # an owner is a role, or a role's entry point (image_variants_node)
            assert any(owner == role or owner.startswith(role + "_") for owner in owners for role in roles if role), \
                entry
    finally:
        node.run_expect([0], restore)
    assert _fast_path(name)["clean"], "%s is not clean after the restore" % name


def test_a_removed_package_is_caught_and_its_roles_check_finds_it(tmp_path):
    _tampered("head", "dpkg --remove --force-depends python3-bcrypt",
              "apt-get install -y -q --no-install-recommends python3-bcrypt", "package:python3-bcrypt",
              ["container_registry"], tmp_path)


def test_a_removed_image_is_caught_and_its_roles_check_finds_it(tmp_path):
    image = "head:5000/hpc/deeplearning:cuda11-sm70"
    _tampered("gpu01", "docker rmi %s" % image, "docker pull -q %s" % image, "image:" + image,
              ["image_variants_node"], tmp_path)


def test_other_gpus_are_caught():
    _tampered("gpu02", "cp /etc/nvidia-standin/nvml.conf /root/nvml.conf && "
                       "sed -i 's/^driver_version=.*/driver_version=550.54.15/' /etc/nvidia-standin/nvml.conf",
              "cp /root/nvml.conf /etc/nvidia-standin/nvml.conf", "gpus", None)


def test_a_changed_input_variable_is_caught():
    changed = _fast_path("gpu01", {"docker_engine_users": ["alice"]})
    assert changed["differences"] == ["inputs"] and changed["owners"] is None, changed
    assert _fast_path("gpu01", {"hpc_site_serial": 1})["clean"]  # the run's own switches are no input
