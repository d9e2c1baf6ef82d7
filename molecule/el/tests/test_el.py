# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EL package path on a stand-in userland (STAND-IN FOR TESTS; molecule/resources/el-standin/README.md).

el-node says it is Rocky Linux 9 and has dnf and rpm as its package manager; converge ran site.yml with the
roles' defaults and the site's mirrors. What each test reads is the node's own state after converge,
idempotence and the drift step's repair: the rpm database, the .repo files dnf reads, the keys dnf imported,
the running engine and registry, and a GPU container.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import testinfra.utils.ansible_runner
import yaml

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")

TOP = Path(__file__).resolve().parents[3]
MIRRORS = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "el-standin"
TOOLKIT = yaml.safe_load((TOP / "roles/nvidia_container_runtime/vars/main.yml").read_text())[
    "__nvidia_container_runtime_default_versions"]["x86_64"]
TOOLKIT_PACKAGES = ["nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
                    "libnvidia-container1"]
ENGINE_PACKAGES = ["docker-ce", "docker-ce-cli", "containerd.io"]
IMAGE = "el-node:5000/hpc/verify:1"


def repo_file(host, name):
    """A .repo file as {key: value} of its one section."""
    values = {}
    for line in host.file("/etc/yum.repos.d/%s.repo" % name).content_string.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values


def test_the_node_is_on_the_el_path(host):
    """What Ansible's facts and the roles' OS switch read: an EL 9 release with dnf, and no dpkg on PATH."""
    os_release = host.file("/etc/os-release").content_string
    assert 'ID="rocky"' in os_release and 'VERSION_ID="9' in os_release
    assert host.file("/etc/redhat-release").exists
    assert not host.file("/etc/debian_version").exists
    assert host.run("command -v dpkg-query").rc != 0
    facts = host.ansible("setup", "gather_subset=min", check=False)["ansible_facts"]
    assert (facts["ansible_os_family"], facts["ansible_pkg_mgr"]) == ("RedHat", "dnf")


def test_dockers_repository_as_on_rhel(host):
    values = repo_file(host, "docker-ce-stable")
    assert values["baseurl"] == "file:///srv/el-standin/download.docker.com/linux/centos/$releasever/$basearch/stable"
    assert values["gpgkey"] == "file:///srv/el-standin/download.docker.com/linux/centos/gpg"
    assert values["gpgcheck"] == "1" and values["enabled"] == "1"


def test_nvidias_repository_checks_the_signed_metadata(host):
    values = repo_file(host, "nvidia-container-toolkit")
    assert values["baseurl"] == "file:///srv/el-standin/nvidia.github.io/libnvidia-container/stable/rpm/$basearch"
    assert (values["repo_gpgcheck"], values["gpgcheck"]) == ("1", "0")


def test_engine_packages_installed_through_dnf_from_the_signed_repository(host):
    for name in ENGINE_PACKAGES:
        assert host.run("rpm -q %s", name).rc == 0, name
    # dnf imported Docker's key into the rpm database (gpgcheck), and each package carries its signature.
    keys = host.check_output("rpm -q gpg-pubkey --qf %s", "%{SUMMARY}\n")
    assert "Docker CE key" in keys, keys
    sig = host.check_output("rpm -q docker-ce --qf %s", "%{RSAHEADER:pgpsig}")
    assert "Key ID" in sig, sig
    history = host.check_output("dnf -q history list")
    assert "install" in history.lower()


def test_toolkit_at_the_default_version_of_the_architecture(host):
    versions = {name: host.check_output("rpm -q --qf %s %s", "%{VERSION}", name) for name in TOOLKIT_PACKAGES}
    assert versions == dict.fromkeys(TOOLKIT_PACKAGES, TOOLKIT)


def test_package_info_reads_rpm(host):
    result = host.ansible("hpc.gpu_containers.package_info",
                          "names=%s version=%s" % (",".join(TOOLKIT_PACKAGES), TOOLKIT), check=False)
    assert result.get("manager") == "rpm", result
    assert result.get("missing") == [] and result.get("off_pin", []) == [], result


def test_engine_runs_with_the_nvidia_runtime(host):
    assert host.service("docker").is_running
    runtimes = json.loads(host.check_output("docker info --format '{{json .Runtimes}}'"))
    assert "nvidia" in runtimes


def test_registry_binary_is_the_checksummed_release(host):
    digest = next(MIRRORS.joinpath("distribution").glob("*.tar.gz.sha256")).read_text().split()[0]
    archive = host.file("/var/cache/hpc-registry/registry-release.tar.gz")
    assert archive.sha256sum == digest
    assert host.file("/usr/local/bin/registry").mode == 0o755
    assert host.service("docker-distribution").is_running


def test_verification_image_from_the_registry_sees_the_nodes_gpus(host):
    """The image container_verify built from EPEL's busybox and EL's C library paths, pulled over TLS with the
    registry login, runs with the NVIDIA runtime: nvidia-smi inside finds the library in /usr/lib64 through
    the container's ld.so.cache and answers for both GPUs."""
    host.check_output("docker pull -q %s", IMAGE)
    out = host.check_output("docker run --rm --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=all %s /verify", IMAGE)
    assert "arch=x86_64" in out and "nvidia_smi_rc=0" in out, out
    assert out.count("<gpu id=") == 2, out
    one = host.check_output("docker run --rm --runtime nvidia -e NVIDIA_VISIBLE_DEVICES=1 %s /verify", IMAGE)
    assert one.count("<gpu id=") == 1, one


def test_busybox_is_epels(host):
    assert host.run("rpm -q busybox").rc == 0
    assert host.file("/usr/sbin/busybox").exists
