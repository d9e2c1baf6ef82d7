# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rootless runtimes on a GPU node: the unprivileged job user runs the verification report with rootless podman
(GPUs through CDI) and with udocker; root runs it with podman. Each run must print the verification report
(``hpc-verify: 1``, ``arch=``) with the node's architecture and the user's own uid, and a file it creates in
``$HOME`` must belong to the user. The converge's last play did the same through the collection's runtime_verify
module; its rootfs and images are checked here, and the module is run again to see its verdicts."""
from __future__ import annotations

import json
import os
import shlex
import time

import pytest
import testinfra
import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("gpu_nodes")

USER = "rluser"
UID = 2001
IMAGE = "localhost/hpc/verify-busybox:1"
# The verification report's head (plugins/module_utils/_verify.py) plus what the rootless checks need;
# only busybox in the image, so each applet is called by name.
REPORT = ('B=/bin/busybox; echo "hpc-verify: 1"; echo "arch=$($B uname -m)"; echo "nvidia_smi=absent"; '
          'echo "uid=$($B id -u)"; echo "gpus=$($B ls /dev | $B grep -c "^nvidia[0-9]")"; '
          '$B touch "$HOME/made-in-$1"')


def as_user(host, command):
    return host.run("runuser -l %s -c %s" % (USER, shlex.quote(command)))


def report(text):
    out = {}
    for line in text.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
        elif line.startswith("hpc-verify:"):
            out["hpc-verify"] = line.split(":", 1)[1].strip()
    return out


@pytest.fixture(scope="module")
def image_tar(host):
    """A one-binary rootfs (static busybox, from prepare) the user imports into each runtime."""
    host.run_expect([0], "set -e; d=$(mktemp -d); mkdir -p $d/bin $d/dev $d/proc $d/sys $d/tmp $d/etc $d/run; "
                         "cp /bin/busybox $d/bin/busybox; ln -s busybox $d/bin/sh; "
                         "tar -C $d -cf /home/%s/verify.tar .; chown %s: /home/%s/verify.tar; rm -rf $d"
                    % (USER, USER, USER))
    return "/home/%s/verify.tar" % USER


def test_subordinate_ids(host):
    for path in ("/etc/subuid", "/etc/subgid"):
        lines = [line.split(":") for line in host.file(path).content_string.splitlines()]
        assert any(name == USER and int(count) >= 65536 for name, _start, count in lines), path


def test_storage_is_overlay_never_vfs(host):
    """Overlay: the kernel's own in a user namespace where it allows that (5.13+, as here), else fuse-overlayfs."""
    for run in (as_user, lambda h, c: h.run(c)):
        out = run(host, "podman info --format '{{.Store.GraphDriverName}}'")
        assert out.rc == 0, out.stderr
        assert out.stdout.strip() == "overlay", out.stdout


def test_cdi_spec_names_the_gpus(host):
    spec = host.file("/etc/cdi/nvidia.yaml")
    assert spec.exists
    assert "kind: nvidia.com/gpu" in spec.content_string
    assert 'name: "0"' in spec.content_string and 'name: "1"' in spec.content_string
    # the site's toolkit (the 1.18 line) enabled NVIDIA's CDI refresh, which wrote a second spec in /var/run/cdi at
    # install; podman would prefer it: the role pointed the refresh at this one and removed that copy
    assert host.package("nvidia-container-toolkit-base").version.startswith("1.18."), "not the 1.18 line"
    assert host.file("/etc/systemd/system/nvidia-cdi-refresh.service.d/hpc-gpu-containers.conf").contains(
        "^Environment=NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=/etc/cdi/nvidia.yaml$")
    assert not host.file("/var/run/cdi/nvidia.yaml").exists


def test_rootless_podman_with_cdi_gpus(host, image_tar):
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    out = as_user(host, "podman run --rm --userns=keep-id -v $HOME:$HOME -e HOME=$HOME "
                        "--device nvidia.com/gpu=all %s /bin/sh -c %s sh podman"
                  % (IMAGE, shlex.quote(REPORT)))
    assert out.rc == 0, out.stderr
    seen = report(out.stdout)
    assert seen["hpc-verify"] == "1"
    assert seen["arch"] == host.system_info.arch
    assert seen["uid"] == str(UID)
    assert seen["gpus"] == "2", out.stdout  # gpu01: 2x V100 in the stand-in driver
    made = host.file("/home/%s/made-in-podman" % USER)
    assert made.uid == UID and made.gid == UID


def test_rootless_podman_one_gpu(host, image_tar):
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    out = as_user(host, "podman run --rm --device nvidia.com/gpu=0 %s /bin/busybox ls /dev" % IMAGE)
    assert out.rc == 0, out.stderr
    assert sorted(d for d in out.stdout.split() if d.startswith("nvidia") and d[6:].isdigit()) == ["nvidia0"]


def test_unknown_cdi_device_fails_clearly(host, image_tar):
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    out = as_user(host, "podman run --rm --device nvidia.com/gpu=7 %s /bin/busybox true" % IMAGE)
    assert out.rc != 0
    assert "nvidia.com/gpu=7" in out.stderr and "unresolvable CDI devices" in out.stderr, out.stderr


def test_podman_as_root(host, image_tar):
    host.run_expect([0], "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    out = host.run("podman run --rm %s /bin/sh -c %s sh root" % (IMAGE, shlex.quote(REPORT)))
    assert out.rc == 0, out.stderr
    seen = report(out.stdout)
    assert seen["arch"] == host.system_info.arch and seen["uid"] == "0"


def test_udocker_as_user(host, image_tar):
    setup = as_user(host, "udocker -q inspect verify >/dev/null 2>&1 || "
                          "{ udocker -q import %s verify-busybox:1 && udocker -q create --name=verify verify-busybox:1; }"
                    % image_tar)
    assert setup.rc == 0, setup.stdout + setup.stderr
    out = as_user(host, "udocker -q run --hostauth --bindhome --user=%s verify /bin/busybox sh -c %s sh udocker"
                  % (USER, shlex.quote(REPORT)))
    assert out.rc == 0, out.stdout + out.stderr
    seen = report(out.stdout)
    assert seen["hpc-verify"] == "1"
    assert seen["arch"] == host.system_info.arch
    assert seen["uid"] == str(UID)
    made = host.file("/home/%s/made-in-udocker" % USER)
    assert made.uid == UID


def test_udocker_exit_code_propagates(host, image_tar):
    out = as_user(host, "udocker -q run verify /bin/busybox sh -c 'exit 3'")
    assert out.rc == 3, out.stdout + out.stderr


def test_udocker_never_fetches_its_tarball(host):
    wrapper = host.file("/usr/local/bin/udocker").content_string
    assert 'UDOCKER_TARBALL=""' in wrapper
    assert not host.file("/home/%s/.udocker/bin/proot-x86_64" % USER).exists


ROOTFS = "/var/lib/hpc-gpu-containers/verify-rootfs/rootfs.tar"


def runtime_verify(host, **args):
    """The collection's runtime_verify module on the node, as the verify play runs it (never failing here)."""
    args = dict(dict(user=USER, rootfs=ROOTFS, fail_on_mismatch=False), **args)
    return host.ansible("hpc.gpu_containers.runtime_verify", json.dumps(args), check=False, become=True)


def test_verify_play_left_the_rootfs_and_its_images(host):
    tar = host.file(ROOTFS)
    assert tar.exists and tar.uid == 0 and tar.mode == 0o644
    tag = host.check_output("sha256sum %s" % ROOTFS)[:12]
    assert as_user(host, "podman image exists localhost/hpc-verify:%s" % tag).rc == 0
    assert host.run("podman image exists localhost/hpc-verify:%s" % tag).rc == 0
    assert as_user(host, "udocker -q inspect hpc-verify-%s" % tag).rc == 0


def test_runtime_verify_module_through_each_runtime(host):
    facts = host.ansible("hpc.gpu_containers.gpu_facts", check=False, become=True)["gpu_facts"]
    result = runtime_verify(host, gpu_facts=facts)
    assert result["passed"] is True and result["changed"] is False, result["reasons"]
    runtimes = result["runtimes"]
    assert set(runtimes) == {"podman", "podman_root", "udocker"}
    for name, verdict in runtimes.items():
        assert verdict["uid"] == UID and verdict["architecture"] == host.system_info.arch, name
    for name in ("podman", "podman_root"):
        assert runtimes[name]["gpus"]["checked"] and runtimes[name]["gpus"]["seen"] == 2, runtimes[name]
    # udocker setup --nvidia (by the verify play) copied the node's driver libraries and nvidia-smi into the
    # container: nvidia-smi inside reports the node's GPUs, compared by UUID, bus id and minor number.
    udocker = runtimes["udocker"]
    assert udocker["gpus"]["checked"] and udocker["gpus"]["method"] == "nvidia-smi", udocker
    assert udocker["nvidia_setup"] is False  # set up once, by the verify play
    assert not host.file("/home/%s/.hpc-verify-podman" % USER).exists


def test_runtime_verify_module_reports_a_gpu_the_container_does_not_see(host):
    facts = host.ansible("hpc.gpu_containers.gpu_facts", check=False, become=True)["gpu_facts"]
    ghost = dict(facts["gpus"][0], uuid="GPU-ghost", minor_number=7, index=2)
    result = runtime_verify(host, runtimes=["podman"], gpu_facts=dict(facts, gpus=facts["gpus"] + [ghost]))
    assert result["passed"] is False
    assert result["reasons"] == ["podman: GPUs: not visible in the container: /dev/nvidia7 (GPU-ghost)"]


def test_udocker_setup_nvidia_copied_the_driver_into_the_container(host):
    tag = host.check_output("sha256sum %s" % ROOTFS)[:12]
    assert "nvidiamode: True" in as_user(host, "udocker setup hpc-verify-%s" % tag).stdout
    root = as_user(host, "udocker -q inspect -p hpc-verify-%s" % tag).stdout.strip()
    for name in ("libnvidia-ml.so.1", "libcuda.so.1"):
        copied = host.file("%s/usr/lib/x86_64-linux-gnu/%s" % (root, name))
        assert copied.exists and copied.sha256sum == host.file("/usr/lib/x86_64-linux-gnu/%s" % name).sha256sum
    assert host.file("%s/usr/bin/nvidia-smi" % root).exists


# --- Slurm jobs in the user's rootless podman (srun-podman, the slurm_docker role with engines [podman]) ---

LABEL = "hpc.gpu_containers.slurm_job"


def gres_minors(host):
    """Slurm's GPU index i -> the minor of gres.conf's i-th File= line for this node."""
    lines = [line for line in host.file("/etc/slurm/gres.conf").content_string.splitlines()
             if line.startswith("NodeName=rl-gpu01") and "File=/dev/nvidia" in line]
    return [int(line.split("File=/dev/nvidia", 1)[1].split()[0]) for line in lines]


def test_srun_podman_installed_for_podman_only(host):
    settings = json.loads(host.file("/etc/srun-docker/srun-podman.json").content_string)
    assert settings["engine"] == "podman" and settings["docker"] == "/usr/bin/podman"
    assert settings["gpu_runtime"] == "cdi" and settings["docker_config"] == ""
    assert host.file("/usr/local/bin/srun-podman").mode == 0o755
    # Docker is not among the engines: no srun-docker, and no docker group made for the jobs.
    assert not host.file("/usr/local/bin/srun-docker").exists
    assert host.run("getent group docker").rc != 0


def test_srun_podman_step_gets_only_its_gpu(host, image_tar):
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    inner = '/bin/busybox sh -c "echo uid=\\$(/bin/busybox id -u); /bin/busybox ls /dev | /bin/busybox grep \\"^nvidia[0-9]\\""'
    out = as_user(host, "srun --ntasks=1 --gres=gpu:1 sh -c %s"
                  % shlex.quote("echo step-gpus=$SLURM_STEP_GPUS; srun-podman %s -- %s" % (IMAGE, inner)))
    assert out.rc == 0, out.stdout + out.stderr
    lines = out.stdout.split()
    step_gpus = [line.split("=", 1)[1] for line in lines if line.startswith("step-gpus=")][0].split(",")
    assert "uid=%d" % UID in lines, out.stdout
    seen = [line for line in lines if line.startswith("nvidia")]
    assert len(step_gpus) == 1 and seen == ["nvidia%d" % gres_minors(host)[int(step_gpus[0])]], out.stdout


def test_srun_podman_step_without_gpus_gets_none(host, image_tar):
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    out = as_user(host, "srun --ntasks=1 --gres=none srun-podman %s -- /bin/busybox ls /dev" % IMAGE)
    assert out.rc == 0, out.stdout + out.stderr
    assert not [d for d in out.stdout.split() if d.startswith("nvidia") and d[6:].isdigit()], out.stdout


def test_epilog_removes_a_podman_container_a_job_left(host, image_tar):
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    # A job that starts a rootless container of its own with the job's label and exits: only the epilog removes it.
    out = as_user(host, "sbatch --parsable --wait --output=left-%%j.out --wrap %s"
                  % shlex.quote("podman run --detach --label %s=$SLURM_JOB_ID %s /bin/busybox sleep 600" % (LABEL, IMAGE)))
    job_id = out.stdout.strip().split(";")[0]
    assert out.rc == 0 and job_id.isdigit(), out.stdout + out.stderr
    container = as_user(host, "cat left-%s.out" % job_id).stdout.strip().splitlines()[-1]
    assert len(container) == 64, container  # the id podman printed in the job
    deadline = time.monotonic() + 30
    while True:
        exists = as_user(host, "podman container exists %s" % container)
        assert exists.rc in (0, 1), exists.stderr  # 1: no such container; anything else: podman failed
        if exists.rc == 1:
            break
        assert time.monotonic() < deadline, "the epilog did not remove job %s's podman container" % job_id
        time.sleep(1)


def test_runtime_verify_through_srun_podman(host):
    facts = host.ansible("hpc.gpu_containers.gpu_facts", check=False, become=True)["gpu_facts"]
    result = runtime_verify(host, runtimes=["podman_srun"], gpu_facts=facts,
                            slurm={"srun_podman": "/usr/local/bin/srun-podman"})
    assert result["passed"] is True and result["changed"] is False, result["reasons"]
    verdict = result["runtimes"]["podman_srun"]
    assert verdict["uid"] == UID and verdict["gpus"]["checked"] and verdict["gpus"]["seen"] == 2, verdict
    assert len(verdict["isolation"]["seen"]) == 1, verdict


def test_srun_podman_refuses_what_would_widen_the_container(host, image_tar):
    """srun-podman shares srun-docker's rules: -u0 in --dockopts, options in the image's place and a GPU variable
    from the job are refused before podman runs; the step's container keeps its one GPU."""
    as_user(host, "podman image exists %s || podman import -q %s %s" % (IMAGE, image_tar, IMAGE))
    for args, message in (("--dockopts=-u0 %s -- /bin/busybox id -u" % IMAGE, "docker option -u0 is not allowed"),
                          ("-- --privileged --userns=host %s /bin/busybox id -u" % IMAGE, "is not an image reference"),
                          ("--dockopts='-e NVIDIA_VISIBLE_DEVICES=all' %s -- /bin/busybox ls /dev" % IMAGE,
                           "NVIDIA_VISIBLE_DEVICES"),
                          ("--env CUDA_VISIBLE_DEVICES=0,1 %s -- /bin/busybox true" % IMAGE, "CUDA_VISIBLE_DEVICES")):
        out = as_user(host, "srun --ntasks=1 --gres=gpu:1 srun-podman %s" % args)
        assert out.rc != 0 and message in out.stderr, out.stdout + out.stderr
