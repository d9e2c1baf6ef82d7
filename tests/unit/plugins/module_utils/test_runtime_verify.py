# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The runtime verification model: argv per runtime and the verdict on a report."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _runtime_verify as rv
from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import SMI_BEGIN, SMI_END

XML = (Path(__file__).parent / "fixtures" / "nvidia_smi_a100-sxm4-mig.xml").read_text()
UUID = "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
SMI_FACTS = {"present": True, "driver_version": "510.47.03", "cuda_driver_version": 11060,
             "gpus": [{"index": 0, "uuid": UUID, "pci_bus_id": "00000000:00:04.0", "minor_number": 0}]}
TWO_GPUS = {"present": True, "driver_version": "535.54.03",
            "gpus": [{"index": 0, "uuid": "GPU-a", "pci_bus_id": "0000:3b:00.0", "minor_number": 0},
                     {"index": 1, "uuid": "GPU-b", "pci_bus_id": "0000:d8:00.0", "minor_number": 3}]}


def report(arch="x86_64", uid=2001, devices="", home_file="/home/alice/.hpc-verify-podman", smi=None):
    lines = ["hpc-verify: 1", "arch=%s" % arch, "nvidia_visible_devices=", "cuda_visible_devices="]
    lines += ["nvidia_smi=present", "nvidia_smi_rc=0", SMI_BEGIN, smi, SMI_END] if smi else ["nvidia_smi=absent"]
    lines += ["uid=%s" % uid, "gid=%s" % uid, "nvidia_devices=%s" % devices]
    if home_file:
        lines.append("home_file=%s" % home_file)
    return "\n".join(lines) + "\n"


def test_rootless_podman_keeps_the_users_id_and_binds_home_at_its_path():
    argv = rv.podman_argv("localhost/hpc-verify:abc", "/home/alice", "/home/alice/.f", gpus=True)
    assert argv[:3] == ["podman", "run", "--rm"]
    assert "--userns=keep-id" in argv and not any(a.startswith("--user=") for a in argv)
    assert argv[argv.index("-v") + 1] == "/home/alice:/home/alice"
    assert argv[argv.index("--device") + 1] == "nvidia.com/gpu=all"
    image = argv.index("localhost/hpc-verify:abc")
    assert argv[image + 1:image + 3] == ["/bin/busybox", "sh"] and argv[-1] == "/home/alice/.f"


def test_root_podman_runs_the_container_as_the_user_and_without_gpus_when_asked():
    argv = rv.podman_argv("img", "/home/alice", "/home/alice/.f", rootless=False, uid=2001, gid=3000)
    assert "--user=2001:3000" in argv and "--userns=keep-id" not in argv and "--device" not in argv
    # the directory holding $HOME goes onto the rootfs's own mount point (root cannot mkdir one)
    assert argv[argv.index("-v") + 1] == "/home:/home" and "HOME=/home/alice" in argv


def test_udocker_runs_as_the_user_with_host_accounts_and_home():
    argv = rv.udocker_argv("hpc-verify-abc", "alice", "/home/alice/.f")
    assert argv[:3] == ["udocker", "-q", "run"]
    assert {"--hostauth", "--bindhome", "--user=alice"} <= set(argv)
    assert argv[argv.index("hpc-verify-abc") + 1] == "/bin/busybox"


def test_user_shell_is_a_login_shell_that_keeps_every_argument():
    argv = ["podman", "run", "img", "/bin/busybox", "sh", "-c", rv.IDENTITY_SCRIPT, "sh", "/home/a b/.f"]
    wrapped = rv.user_shell("alice", argv)
    assert wrapped[:4] == ["runuser", "-l", "alice", "-c"]
    assert shlex.split(wrapped[4]) == argv


def test_image_names_follow_the_content():
    names = rv.image_names("0123456789abcdef" * 4)
    assert names == {"podman": "localhost/hpc-verify:0123456789ab", "udocker_image": "hpc-verify:0123456789ab",
                     "udocker_container": "hpc-verify-0123456789ab"}
    assert rv.image_names("f" * 64)["podman"] != names["podman"]


def test_parse_identity_reads_the_added_lines_only():
    seen = rv.parse_identity(report(devices="nvidia1 nvidia0 nvidia10 nvidiactl "))
    assert seen == {"uid": 2001, "gid": 2001, "nvidia_devices": ["nvidia0", "nvidia1", "nvidia10", "nvidiactl"],
                    "home_file": "/home/alice/.hpc-verify-podman"}
    assert rv.parse_identity("uid=\n")["uid"] is None


def test_a_good_report_passes_and_says_what_it_saw():
    verdict = rv.judge("podman", 0, report(devices="nvidia0 nvidia3"), "x86_64", 2001, 2001,
                       gpu_facts=TWO_GPUS, check_gpus=True)
    assert verdict["passed"], verdict["reasons"]
    assert verdict["uid"] == 2001 and verdict["architecture"] == "x86_64"
    assert verdict["gpus"] == {"checked": True, "method": "device files", "host": 2, "seen": 2, "reason": None}


@pytest.mark.parametrize("text, owner, rc, expected", [
    (report(uid=0), 2001, 0, "podman: identity: uid inside the container is 0, the user's uid is 2001"),
    (report(), 0, 0, "podman: identity: a file created in $HOME belongs to uid 0 on the host, not to the user (2001)"),
    (report(home_file=None), None, 0, "podman: identity: the container could not create a file in $HOME"),
    (report(), None, 0, "podman: identity: the container could not create a file in $HOME"),
    (report(arch="ppc64le"), 2001, 0, "podman: architecture: the container runs ppc64le but the node is x86_64"),
    ("", None, 125, "podman: the container did not print the verification report"),
    (report(), 2001, 1, "podman: the container exited with 1"),
])
def test_each_mismatch_fails_with_its_reason(text, owner, rc, expected):
    verdict = rv.judge("podman", rc, text, "x86_64", 2001, owner)
    assert not verdict["passed"]
    assert expected in verdict["reasons"]


def test_a_missing_gpu_device_file_fails():
    verdict = rv.judge("podman", 0, report(devices="nvidia0"), "x86_64", 2001, 2001, gpu_facts=TWO_GPUS,
                       check_gpus=True)
    assert verdict["reasons"] == ["podman: GPUs: not visible in the container: /dev/nvidia3 (GPU-b)"]
    assert verdict["gpus"]["seen"] == 1


def test_nvidia_smi_in_the_container_is_compared_by_uuid():
    good = rv.judge("podman", 0, report(smi=XML), "x86_64", 2001, 2001, gpu_facts=SMI_FACTS, check_gpus=True)
    assert good["passed"], good["reasons"]
    assert good["gpus"]["method"] == "nvidia-smi" and good["gpus"]["seen"] == 1
    other = dict(SMI_FACTS, gpus=[dict(SMI_FACTS["gpus"][0], uuid="GPU-other")])
    bad = rv.judge("podman", 0, report(smi=XML), "x86_64", 2001, 2001, gpu_facts=other, check_gpus=True)
    assert "podman: GPUs: requested but not visible in the container: GPU-other" in bad["reasons"]


def test_gpus_not_checked_keep_their_reason_and_do_not_fail():
    verdict = rv.judge("udocker", 0, report(), "x86_64", 2001, 2001, gpu_facts=TWO_GPUS,
                       gpus_not_checked="udocker: not checked")
    assert verdict["passed"]
    assert verdict["gpus"] == {"checked": False, "method": None, "host": 2, "seen": None,
                               "reason": "udocker: not checked"}
    cpu = rv.judge("podman", 0, report(), "x86_64", 2001, 2001, gpu_facts={"present": False}, check_gpus=True)
    assert cpu["passed"] and cpu["gpus"]["reason"] == "the node has no GPU"


# udocker setup --nvidia: its output, not its exit code (udocker 1.3.17's messages).
def test_udocker_nvidia_argvs():
    argvs = rv.udocker_nvidia_argvs("hpc-verify-0a1b", "/usr/local/bin/udocker")
    assert argvs == {"query": ["/usr/local/bin/udocker", "setup", "hpc-verify-0a1b"],
                     "set": ["/usr/local/bin/udocker", "setup", "--nvidia", "--force", "hpc-verify-0a1b"]}


@pytest.mark.parametrize("text, mode", [
    ("execmode: P1\nnvidiamode: True\n", True),
    ("execmode: P1\nnvidiamode: False\n", False),
    ("execmode: P1\n", None),
    ("nvidiamode: maybe\n", None),
    ("", None),
])
def test_udocker_nvidia_mode(text, mode):
    assert rv.udocker_nvidia_mode(text) is mode


def test_udocker_nvidia_problem_none_when_set_despite_errors_about_optional_files():
    # a node without /etc/vulkan/icd.d (udocker 1.3.17, recorded on the test bed)
    out = "Info: nvidia mode set\n"
    err = ("Error: creating nvidia dir /home/u/.udocker/containers/c/ROOT//etc/vulkan/icd.d\n"
           "Warn: nvidia file in config not found /etc/vulkan/icd.d/nvidia_icd.json\n")
    assert rv.udocker_nvidia_problem(0, out, err) is None


@pytest.mark.parametrize("rc, out, err, said", [
    (0, "", "Error: host nvidia libraries not found\n", "Error: host nvidia libraries not found"),
    (0, "", "Warn: x\nError: destination dir for nvidia libs not found\n",
     "Error: destination dir for nvidia libs not found"),
    (1, "", "", "no output"),
    (0, "something else\n", "", "something else"),
])
def test_udocker_nvidia_problem_names_what_udocker_said(rc, out, err, said):
    problem = rv.udocker_nvidia_problem(rc, out, err)
    assert problem == "udocker setup --nvidia did not set up the GPUs (exit code %s, not trusted): %s" % (rc, said)
