# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The daemon-reload hazard itself, and NVIDIA's fix, on a real systemd, runc and Docker.

Under the systemd cgroup driver runc hands a container's device rules to systemd, but leaves out every
device whose /dev/char/<major>:<minor> path does not exist (it writes those rules into the cgroup
itself); systemd applies its own list again at each `systemctl daemon-reload`, and the container loses
those devices. NVIDIA's device nodes have no such link unless something makes one (the role's
dev_char_links).

The test bed's GPU nodes cannot show it: their engines use cgroupfs, and their own device cgroup (the
outer engine's) allows only /dev/null's numbers, which their stand-in GPU nodes carry. So this starts a
probe node of its own, from the scenario's node image, whose device cgroup allows NVIDIA's major
(195), installs Debian's docker.io there with the systemd cgroup driver, and makes /dev/nvidia0 with
NVIDIA's numbers and no driver behind it: open() fails with ENXIO while the cgroup allows the device
and with EPERM once it denies it (research: device_cgroup_probe), so a container's GPU access before
and after a reload is told apart without a GPU.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from conftest import ansible_tool

PROBE = "hpc-gpu-molecule-reload-probe"
VOLUME = PROBE + "-docker"
IMAGE = "%s:%s" % (os.environ.get("MOLECULE_IMAGE_REPO", "localhost/hpc-gpu-node"),
                   os.environ.get("MOLECULE_DISTRO", "debian12"))
# As the bed's nested engines (research: slurm_runtimes): every capability but SYS_RESOURCE, no seccomp or
# AppArmor profile, the host's cgroup tree, /var/lib/docker on a volume for overlay2.
RUN = ["--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
       "--security-opt", "apparmor=unconfined", "--cgroupns", "host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
       "-v", VOLUME + ":/var/lib/docker", "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
       "--device-cgroup-rule", "c 195:* rwm"]
OPEN = "/usr/bin/dd if=/dev/nvidia0 of=/dev/null count=0"


def docker(*argv, check=True):
    proc = subprocess.run(["docker", *argv], capture_output=True, text=True, check=False)
    if check:
        assert proc.returncode == 0, "docker %s: %s" % (" ".join(argv), proc.stdout + proc.stderr)
    return proc


def on_probe(command, check=True):
    return docker("exec", PROBE, "sh", "-c", command, check=check)


def errno_in(container):
    """How open() of /dev/nvidia0 fails in the container: ENXIO (allowed, no driver) or EPERM (denied)."""
    text = on_probe("docker exec %s %s 2>&1" % (container, OPEN), check=False).stdout
    if "No such device or address" in text:
        return "ENXIO"
    if "Operation not permitted" in text:
        return "EPERM"
    raise AssertionError("unexpected: %s" % text)


@pytest.fixture(scope="module")
def probe():
    docker("rm", "-f", PROBE, check=False)
    docker("run", "-d", "--name", PROBE, "--hostname", PROBE, *RUN, IMAGE, "/lib/systemd/systemd")
    try:
        deadline = time.time() + 120
        while on_probe("systemctl is-system-running", check=False).stdout.strip() not in ("running", "degraded"):
            assert time.time() < deadline, "the probe node's systemd did not come up"
            time.sleep(2)
        on_probe("mkdir -p /etc/docker && echo '{\"exec-opts\": [\"native.cgroupdriver=systemd\"]}'"
                 " > /etc/docker/daemon.json")
        on_probe("apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends"
                 " docker.io")
        assert "Cgroup Driver: systemd" in on_probe("docker info").stdout
        # a two-binary image (dd and sleep with their libraries), and NVIDIA's first GPU node, no driver behind it
        on_probe("tar -C / -chf - usr/bin/dd usr/bin/sleep"
                 " $(ldd /usr/bin/dd /usr/bin/sleep | grep -o '/[^ ]*' | sort -u | sed 's|^/||')"
                 " | docker import - reload-probe:1 && mknod -m 666 /dev/nvidia0 c 195 0")
        yield PROBE
    finally:
        docker("rm", "-f", PROBE, check=False)
        docker("volume", "rm", VOLUME, check=False)


def test_without_the_link_a_daemon_reload_takes_the_gpu_from_a_running_container(probe):
    assert on_probe("test -e /dev/char/195:0", check=False).returncode != 0
    on_probe("docker run -d --name no-link --device /dev/nvidia0 reload-probe:1 /usr/bin/sleep 600")
    assert errno_in("no-link") == "ENXIO"
    on_probe("systemctl daemon-reload")
    assert errno_in("no-link") == "EPERM"


def test_with_the_roles_links_the_gpu_survives_the_reload(probe):
    # the collection's module, as the role runs it on every GPU node
    proc = subprocess.run(
        [ansible_tool("ansible"), "all", "-i", PROBE + ",", "-c", "community.docker.docker",
         "-e", "ansible_python_interpreter=/usr/bin/python3", "-m", "hpc.gpu_containers.dev_char_links"],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "CHANGED" in proc.stdout, proc.stdout + proc.stderr
    assert on_probe("readlink /dev/char/195:0").stdout.strip() == "../nvidia0"
    on_probe("docker run -d --name with-link --device /dev/nvidia0 reload-probe:1 /usr/bin/sleep 600")
    assert errno_in("with-link") == "ENXIO"
    on_probe("systemctl daemon-reload")
    assert errno_in("with-link") == "ENXIO"
