# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""runtime_verify against a recording fake of the commands it runs (podman, udocker through runuser)."""
from __future__ import annotations

import os
import pwd
import shlex

import pytest
from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.modules import runtime_verify
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

MACHINE = os.uname().machine
GPUS = {"present": True, "gpus": [{"index": 0, "uuid": "GPU-a", "minor_number": 0},
                                  {"index": 1, "uuid": "GPU-b", "minor_number": 1}]}


class FakeNode:
    """Answers the module's commands; a container run creates the home file as the test's own user."""

    def __init__(self, home, images=(), uid=None, devices="nvidia0 nvidia1", fail_import=False):
        self.home, self.images, self.calls = home, set(images), []
        self.uid = os.getuid() if uid is None else uid
        self.devices, self.fail_import = devices, fail_import
        self.leak = False
        # udocker's container: set up for the GPUs? with the node's current driver? what setup --nvidia says
        self.nvidia_mode, self.stale = False, False
        self.setup_output = ("Error: creating nvidia dir /home/alice/.udocker/containers/c/ROOT//etc/vulkan/icd.d\n"
                             "Warn: nvidia file in config not found /etc/vulkan/icd.d/nvidia_icd.json\n"
                             "Info: nvidia mode set\n")

    def run_command(self, argv, **_kwargs):
        assert argv[0] == "timeout"
        argv = argv[2:]
        as_user = argv[:2] == ["runuser", "-l"]
        if as_user:
            argv = shlex.split(argv[4])
        self.calls.append((as_user, argv))
        tool, verb = os.path.basename(argv[0]), argv[1] if argv[1] != "-q" else argv[2]
        key = (tool, as_user)
        if verb in ("exists", "inspect") or argv[1:3] == ["image", "exists"]:
            return (0 if key in self.images else 1), "", ""
        if verb == "import":
            if self.fail_import:
                return 125, "", "Error: no space left on device"
            self.images.add(key)
            return 0, "sha256:1\n", ""
        if verb == "create":
            return 0, "container-id\n", ""
        if verb == "setup" and "--nvidia" in argv:
            assert "--force" in argv and as_user
            if "nvidia mode set" in self.setup_output:
                self.nvidia_mode, self.stale = True, False
            return 0, self.setup_output, ""  # exit code 0 whatever happened, as udocker 1.3.17
        if verb == "setup":
            return 0, "execmode: P1\nnvidiamode: %s\n" % self.nvidia_mode, ""
        if tool == "srun":
            # a Slurm step on this node: srun-podman's container gets the step's GPUs (or, broken, all of them)
            gres = [a for a in argv if a.startswith("--gres=gpu:")]
            count = int(gres[0].rsplit(":", 1)[1]) if gres else 0
            devices = self.devices.split()[:len(self.devices.split()) if self.leak else count]
            with open(argv[-1], "w"):
                pass
            return 0, ("hpc-verify: 1\narch=%s\nnvidia_smi=absent\nuid=%d\ngid=%d\nnvidia_devices=%s\nhome_file=%s\n"
                       % (MACHINE, self.uid, self.uid, " ".join(devices), argv[-1])), ""
        if verb == "run":
            home_file = argv[-1]
            with open(home_file, "w"):
                pass
            if tool == "udocker":
                devices = self.devices if self.nvidia_mode and not self.stale else ""
            else:
                devices = self.devices if "--device" in argv else ""
            return 0, ("hpc-verify: 1\narch=%s\nnvidia_smi=absent\nuid=%d\ngid=%d\nnvidia_devices=%s\nhome_file=%s\n"
                       % (MACHINE, self.uid, self.uid, devices, home_file)), ""
        raise AssertionError("unexpected command %s" % argv)


@pytest.fixture
def node(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    account = pwd.struct_passwd(("alice", "x", os.getuid(), os.getgid(), "", str(home), "/bin/sh"))

    def getpwnam(name):
        if name != "alice":
            raise KeyError(name)
        return account

    monkeypatch.setattr(runtime_verify.pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(AnsibleModule, "get_bin_path", lambda self, name, *a, **k: "/usr/bin/%s" % name)
    fake = FakeNode(str(home))
    monkeypatch.setattr(AnsibleModule, "run_command", fake.run_command)
    rootfs = tmp_path / "rootfs.tar"
    rootfs.write_bytes(b"rootfs")
    cdi = tmp_path / "nvidia.yaml"
    cdi.write_text("kind: nvidia.com/gpu\n")
    return fake, dict(user="alice", rootfs=str(rootfs), cdi_spec=str(cdi), gpu_facts=GPUS)


def test_check_mode_runs_nothing(node, capsys):
    fake, args = node
    result = run_module(runtime_verify, capsys, check=True, **args)
    assert result["changed"] is False and result["skipped"] is True and result["passed"] is None
    assert fake.calls == []


def test_first_run_imports_then_verifies_every_runtime_and_the_second_changes_nothing(node, capsys):
    fake, args = node
    first = run_module(runtime_verify, capsys, **args)
    assert first["passed"] and first["changed"], first
    assert set(first["runtimes"]) == {"podman", "podman_root", "udocker"}
    podman = first["runtimes"]["podman"]
    assert podman["gpus"] == {"checked": True, "method": "device files", "host": 2, "seen": 2, "reason": None}
    udocker = first["runtimes"]["udocker"]
    assert udocker["gpus"] == {"checked": True, "method": "device files", "host": 2, "seen": 2, "reason": None}
    assert udocker["nvidia_setup"] is True
    assert [argv[1:] for u, argv in fake.calls if u and "setup" in argv] == [
        ["setup", "--nvidia", "--force", "hpc-verify-%s" % first["image"]["udocker_container"][-12:]]]
    # rootless podman and udocker as the user, root's podman as root with the user's ids
    runs = {(as_user, argv[0]): argv for as_user, argv in fake.calls if "run" in argv}
    assert "--userns=keep-id" in runs[(True, "/usr/bin/podman")]
    assert "--user=%d:%d" % (os.getuid(), os.getgid()) in runs[(False, "/usr/bin/podman")]
    assert "--user=alice" in runs[(True, "/usr/bin/udocker")]
    # the home files are gone again
    assert os.listdir(fake.home) == []
    before = len(fake.calls)
    again = run_module(runtime_verify, capsys, **args)
    assert again["passed"] and again["changed"] is False
    assert not any("import" in argv[1:3] for _u, argv in fake.calls[before:])
    assert again["runtimes"]["udocker"]["nvidia_setup"] is False
    assert not any("--nvidia" in argv for _u, argv in fake.calls[before:])
    assert sum("run" in argv[1:3] for _u, argv in fake.calls[before:]) == 3


def test_wrong_uid_inside_fails_the_task_with_the_reason(node, capsys):
    fake, args = node
    fake.uid = os.getuid() + 1
    result = run_module(runtime_verify, capsys, runtimes=["udocker"], **args)
    assert result["failed"] and result["passed"] is False
    assert ("udocker: identity: uid inside the container is %d, the user's uid is %d" % (fake.uid, os.getuid())
            in result["reasons"])


def test_missing_gpu_is_reported_without_failing_when_asked(node, capsys):
    fake, args = node
    fake.devices = "nvidia0"
    result = run_module(runtime_verify, capsys, runtimes=["podman"], fail_on_mismatch=False, **args)
    assert "failed" not in result and result["passed"] is False
    assert result["reasons"] == ["podman: GPUs: not visible in the container: /dev/nvidia1 (GPU-b)"]


def test_without_a_cdi_spec_podman_gets_no_gpu_and_says_why(node, capsys, tmp_path):
    fake, args = node
    args["cdi_spec"] = str(tmp_path / "missing.yaml")
    result = run_module(runtime_verify, capsys, runtimes=["podman"], **args)
    assert result["passed"]
    assert result["runtimes"]["podman"]["gpus"]["reason"].startswith("no CDI spec at ")
    assert not any("--device" in argv for _u, argv in fake.calls)


def test_failed_import_fails_that_runtime(node, capsys):
    fake, args = node
    fake.fail_import = True
    result = run_module(runtime_verify, capsys, runtimes=["podman_root"], **args)
    assert result["failed"]
    assert result["reasons"][0].startswith("podman_root: import of ") and "no space left" in result["reasons"][0]


def test_unknown_user_and_missing_rootfs_fail(node, capsys, tmp_path):
    _fake, args = node
    assert "does not exist" in run_module(runtime_verify, capsys, **dict(args, user="nobody-here"))["msg"]
    missing = run_module(runtime_verify, capsys, **dict(args, rootfs=str(tmp_path / "none.tar")))
    assert missing["failed"] and "rootfs" in missing["msg"]


def test_udocker_setup_nvidia_is_judged_by_its_output_not_its_exit_code(node, capsys):
    fake, args = node
    fake.setup_output = ("Error: host nvidia libraries not found\n")
    result = run_module(runtime_verify, capsys, runtimes=["udocker"], fail_on_mismatch=False, **args)
    assert result["passed"] is False and result["changed"] is True
    assert result["reasons"] == ["udocker: udocker setup --nvidia did not set up the GPUs (exit code 0, not trusted): "
                                 "Error: host nvidia libraries not found"]
    assert not any("run" in argv[1:3] for _u, argv in fake.calls)


def test_udocker_without_a_container_lib_dir_names_the_reason(node, capsys):
    fake, args = node
    fake.setup_output = ("Warn: nvidia file in config not found /etc/OpenCL/vendors/nvidia.icd\n"
                         "Error: destination dir for nvidia libs not found\n")
    result = run_module(runtime_verify, capsys, runtimes=["udocker"], **args)
    assert result["failed"]
    assert result["reasons"] == ["udocker: udocker setup --nvidia did not set up the GPUs (exit code 0, not trusted): "
                                 "Error: destination dir for nvidia libs not found"]


def test_udocker_with_stale_driver_copies_is_set_up_again_and_passes(node, capsys):
    fake, args = node
    assert run_module(runtime_verify, capsys, runtimes=["udocker"], **args)["passed"]
    fake.stale = True  # the node's driver was updated after the container was set up
    before = len(fake.calls)
    result = run_module(runtime_verify, capsys, runtimes=["udocker"], **args)
    assert result["passed"] and result["changed"], result
    assert result["runtimes"]["udocker"]["nvidia_setup"] is True
    verbs = [[a for a in argv[1:] if a != "-q"][:2] for _u, argv in fake.calls[before:]]
    verbs = [verb for verb in verbs if verb[0] in ("setup", "run")]
    assert verbs == [["setup", "hpc-verify-%s" % result["image"]["udocker_container"][-12:]], ["run", "--hostauth"],
                     ["setup", "--nvidia"], ["run", "--hostauth"]]


def test_udocker_on_a_node_without_gpus_is_not_set_up(node, capsys):
    fake, args = node
    args["gpu_facts"] = {"present": False, "gpus": []}
    result = run_module(runtime_verify, capsys, runtimes=["udocker"], **args)
    assert result["passed"] and result["runtimes"]["udocker"]["gpus"]["reason"] == "the node has no GPU"
    assert not any("setup" in argv for _u, argv in fake.calls)


@pytest.fixture
def slurm_tools(tmp_path):
    tools = {}
    for name in ("srun", "srun-podman"):
        path = tmp_path / name
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        tools[name.replace("-", "_")] = str(path)
    return tools


def test_podman_srun_runs_the_report_as_a_step_with_all_gpus_then_one(node, capsys, slurm_tools):
    fake, args = node
    result = run_module(runtime_verify, capsys, runtimes=["podman_srun"], slurm=dict(slurm_tools, node="n1"), **args)
    assert result["passed"], result["reasons"]
    verdict = result["runtimes"]["podman_srun"]
    assert verdict["gpus"]["seen"] == 2 and verdict["isolation"] == {"allocated": 1, "seen": ["nvidia0"]}
    steps = [argv for as_user, argv in fake.calls if as_user and argv[0] == slurm_tools["srun"]]
    assert [a for a in steps[0] if a.startswith(("--gres", "--nodelist"))] == ["--nodelist=n1", "--gres=gpu:2"]
    assert "--gres=gpu:1" in steps[1]
    assert steps[0][steps[0].index(slurm_tools["srun_podman"]) + 1:][:2] == [result["image"]["podman"], "--"]
    # imported into the user's own podman first, which srun-podman runs
    assert (True, ["/usr/bin/podman", "import", "-q", args["rootfs"], result["image"]["podman"]]) in fake.calls


def test_podman_srun_step_given_one_gpu_that_sees_more_fails(node, capsys, slurm_tools):
    fake, args = node
    fake.leak = True
    result = run_module(runtime_verify, capsys, runtimes=["podman_srun"], slurm=slurm_tools, fail_on_mismatch=False,
                        **args)
    assert result["passed"] is False
    assert result["reasons"] == ["podman_srun: GPUs: a step given one GPU sees 2 (nvidia0 nvidia1)"]


def test_podman_srun_without_srun_podman_says_so(node, capsys, slurm_tools, tmp_path):
    fake, args = node
    tools = dict(slurm_tools, srun_podman=str(tmp_path / "absent"))
    result = run_module(runtime_verify, capsys, runtimes=["podman_srun"], slurm=tools, fail_on_mismatch=False,
                        **args)
    assert result["passed"] is False and result["runtimes"]["podman_srun"]["seconds"] is None
    assert result["reasons"] == ["podman_srun: %s is not installed (the slurm_docker role with podman among its "
                                 "engines)" % tools["srun_podman"]]
    assert not any(argv[0] == tools["srun"] for _u, argv in fake.calls)
