#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: runtime_verify
short_description: Run the verification report through podman (rootless and as root) and udocker as a user
version_added: 0.2.0
description:
  - Runs the collection's verification report (C(/verify), the same report as the Docker verification image's)
    from a rootfs tar on the node, as an unprivileged user, through each runtime of O(runtimes), and returns a
    verdict per runtime.
  - V(podman) is the user's rootless podman (C(--userns=keep-id)); V(podman_root) is root's podman running the
    container as the user (C(--user uid:gid)); V(udocker) is the user's udocker (C(--hostauth --bindhome
    --user=<user>)). The user's commands run in the user's login environment (C(runuser -l)). C($HOME) is
    bind-mounted at its own path; for root's podman the directory holding it (C(/home)) is, onto the rootfs's
    own mount point, since root's podman on fuse-overlayfs storage cannot create a mount point in the image.
  - V(podman_srun) (only when listed) is the user's rootless podman in a Slurm job step on this node, started by
    C(srun-podman) (the P(hpc.gpu_containers.slurm_docker#role) role with V(podman) among its engines) -
    C(srun --nodelist=<node> --gres=gpu:<all> srun-podman <image> -- <report>), run as the user from the node. The
    step's GPUs reach the container as CDI devices by UUID, so all of the node's must be seen; on a node with
    more than one GPU a second step given one GPU must see exactly one (RV(runtimes) C(.podman_srun.isolation)).
  - Architecture. The C(uname -m) printed inside must be the node's.
  - Identity. The uid inside must be the user's, and a file the container creates in C($HOME) must belong to
    the user on the host (it is removed afterwards).
  - GPUs. On a node with GPUs (O(gpu_facts)) and a CDI spec (O(cdi_spec)), podman gets
    C(--device nvidia.com/gpu=all) and must see every GPU of the node. When the CDI spec mounts C(nvidia-smi),
    its report is compared with the host as the Docker verification does (UUIDs, PCI bus ids, minor numbers,
    driver); otherwise every GPU's device file C(/dev/nvidia<minor>) must be in the container. Without a CDI spec
    the GPUs are reported as not checked, with the reason.
  - GPUs through udocker. On a node with GPUs the user's udocker container is set up with C(udocker setup
    --nvidia) (it copies the node's driver libraries and tools, C(nvidia-smi) among them, into the container;
    C(/dev) is the node's) when C(udocker setup) says the container's C(nvidiamode) is C(False). Its exit code cannot be trusted; it
    set the container up only when it printed C(nvidia mode set), which it prints after copying the libraries
    (C(Error:) lines about optional files such as C(/etc/vulkan/icd.d) may come beside it); otherwise the runtime
    fails with its C(Error:) lines. The GPUs are then checked as for podman. When they do not match and the
    container was set up by an earlier run (a driver update leaves its copies stale), it is set up again with
    C(--force) and the report runs once more.
  - The rootfs is imported once per content (its tag is the start of its sha256) into the user's podman, root's
    podman and the user's udocker, and the udocker container is set up for the GPUs; these are the only changes
    the module makes (RV(ignore:changed)).
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
requirements:
  - C(runuser) (util-linux), podman and/or udocker on the node; the module runs as root.
attributes:
  check_mode:
    support: full
    description: Nothing is imported or run; the result says so and RV(passed) is V(null).
  diff_mode:
    support: none
    description: Nothing on the host changes but the imported image, so there is nothing to diff.
  idempotent:
    support: full
    description: >-
      RV(ignore:changed) only when the rootfs was imported into a runtime that did not have it, or the udocker
      container was set up for the GPUs.
options:
  user:
    description:
      - The unprivileged user who runs the containers; must exist on the node and have a home directory.
    type: str
    required: true
  runtimes:
    description:
      - The runtimes to verify.
    type: list
    elements: str
    choices: [podman, podman_root, udocker, podman_srun]
    default: [podman, podman_root, udocker]
  rootfs:
    description:
      - A tar of the verification rootfs on the node (static busybox, the C(/verify) report script and the C
        library C(nvidia-smi) needs), readable by O(user); the P(hpc.gpu_containers.container_verify#role) role's
        C(rootfs) entry point builds it.
    type: path
    required: true
  image_name:
    description:
      - Name the rootfs is imported under (C(localhost/<name>:<tag>) in podman, C(<name>:<tag>) in udocker, and the
        udocker container C(<name>-<tag>)).
    type: str
    default: hpc-verify
  gpu_facts:
    description:
      - The node's GPU facts, normally C(ansible_facts.gpu_facts) from M(hpc.gpu_containers.gpu_facts).
      - When omitted the node counts as having no GPU.
    type: dict
  cdi_spec:
    description:
      - The CDI spec of the node's GPUs; podman is given the GPUs only when it exists.
    type: path
    default: /etc/cdi/nvidia.yaml
  timeout:
    description:
      - Seconds one container run (or import) may take; it is killed after that and the runtime fails.
    type: int
    default: 120
  fail_on_mismatch:
    description:
      - V(true) fails the task when a runtime's verdict is negative; V(false) returns RV(passed=false) with the
        reasons.
      - A missing user or rootfs always fails.
    type: bool
    default: true
  slurm:
    description:
      - Where and how V(podman_srun) runs its steps.
    type: dict
    default: {}
    version_added: 0.2.0
    suboptions:
      node:
        description: The Slurm node name of this node (default the short host name).
        type: str
      partition:
        description: Partition of the steps; Slurm's default when omitted.
        type: str
      srun:
        description: The srun command.
        type: str
        default: srun
      srun_podman:
        description: The srun-podman command (searched in C(PATH) and C(/usr/local/bin) when not a path).
        type: str
        default: srun-podman
"""

EXAMPLES = r"""
- name: GPU facts for the comparison
  hpc.gpu_containers.gpu_facts:

- name: The verification report through podman and udocker as alice
  hpc.gpu_containers.runtime_verify:
    user: alice
    rootfs: /var/lib/hpc-gpu-containers/verify-image/rootfs.tar
    gpu_facts: "{{ ansible_facts.gpu_facts }}"

- name: Only rootless podman, report without failing
  hpc.gpu_containers.runtime_verify:
    user: alice
    runtimes: [podman]
    rootfs: /var/lib/hpc-gpu-containers/verify-image/rootfs.tar
    fail_on_mismatch: false
  register: podman_verdict
"""

RETURN = r"""
passed:
  description: Every runtime passed; V(null) in check mode.
  returned: always
  type: bool
  sample: true
reasons:
  description: Why a runtime failed, each prefixed with the runtime; empty when all passed.
  returned: always
  type: list
  elements: str
  sample: ["udocker: identity: uid inside the container is 0, the user's uid is 2001"]
skipped:
  description: V(true) in check mode, when nothing ran.
  returned: always
  type: bool
  sample: false
msg:
  description: A one-line summary.
  returned: always
  type: str
  sample: "podman, podman_root, udocker: passed"
image:
  description: The names the rootfs is imported under.
  returned: success
  type: dict
  sample: {podman: localhost/hpc-verify:0a1b2c3d4e5f, udocker_image: hpc-verify:0a1b2c3d4e5f,
           udocker_container: hpc-verify-0a1b2c3d4e5f}
runtimes:
  description: The verdict of each runtime.
  returned: success
  type: dict
  sample:
    podman:
      passed: true
      reasons: []
      uid: 2001
      architecture: x86_64
      gpus: {checked: true, method: device files, host: 2, seen: 2, reason: null}
      imported: false
      seconds: 0.41
    udocker:
      passed: true
      reasons: []
      uid: 2001
      architecture: x86_64
      gpus: {checked: true, method: nvidia-smi, host: 2, seen: 2, reason: null}
      imported: false
      nvidia_setup: false
      seconds: 1.2
  contains:
    passed:
      description: This runtime passed.
      type: bool
    reasons:
      description: Why it failed.
      type: list
      elements: str
    uid:
      description: The uid inside the container.
      type: int
    architecture:
      description: C(uname -m) inside the container.
      type: str
    gpus:
      description:
        - C(checked), C(method) (V(nvidia-smi) or V(device files)), C(host) (GPUs of the node),
          C(seen) (GPUs the container sees) and C(reason) (why they were not checked).
      type: dict
    imported:
      description: The rootfs was imported into this runtime by this run.
      type: bool
    nvidia_setup:
      description: udocker only, on a node with GPUs; this run set the container up with C(udocker setup --nvidia).
      type: bool
      version_added: 0.2.0
    isolation:
      description:
        - V(podman_srun) only, on a node with more than one GPU whose full step passed - the step given one GPU
          (C(allocated)) and the device files its container saw (C(seen)).
      type: dict
      version_added: 0.2.0
    seconds:
      description: Wall time of the container run.
      type: float
"""

import hashlib
import os
import pwd
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._runtime_verify import (
    RUNTIMES,
    SLURM_RUNTIMES,
    image_names,
    judge,
    parse_identity,
    podman_argv,
    srun_podman_argv,
    udocker_argv,
    udocker_import_argvs,
    udocker_nvidia_argvs,
    udocker_nvidia_mode,
    udocker_nvidia_problem,
    user_shell,
)


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class Runner:
    """Commands as root or as the user, each under ``timeout``."""

    def __init__(self, module, user, timeout):
        self.module, self.user, self.timeout = module, user, timeout

    def __call__(self, argv, as_user=True):
        if as_user:
            argv = user_shell(self.user, argv)
        rc, out, err = self.module.run_command(["timeout", str(self.timeout)] + list(argv))
        return rc, out, err


def _podman_import(run, podman, tar, image, as_user):
    rc, _out, _err = run([podman, "image", "exists", image], as_user=as_user)
    if rc == 0:
        return False, None
    rc, out, err = run([podman, "import", "-q", tar, image], as_user=as_user)
    if rc != 0:
        return False, "import of %s failed (rc %s): %s" % (tar, rc, (err or out).strip())
    return True, None


def _udocker_import(run, udocker, tar, names):
    rc, _out, _err = run([udocker, "-q", "inspect", names["udocker_container"]])
    if rc == 0:
        return False, None
    for argv in udocker_import_argvs(tar, names, udocker):
        rc, out, err = run(argv)
        if rc != 0 and "already exists" not in (out + err):
            return False, "%s failed (rc %s): %s" % (" ".join(argv[:3]), rc, (err or out).strip())
    return True, None


def _udocker_nvidia(run, udocker, container, force):
    """Set the user's udocker container up for the GPUs unless it is (``force``: in any case).

    Returns (set up by this call, why it failed or None).
    """
    argvs = udocker_nvidia_argvs(container, udocker)
    if not force:
        rc, out, _err = run(argvs["query"])
        if rc == 0 and udocker_nvidia_mode(out):
            return False, None
    rc, out, err = run(argvs["set"])
    return True, udocker_nvidia_problem(rc, out, err)


def _run_report(run, runtime, argv, as_user, account, home_file, gpu_facts, check_gpus, not_checked):
    """One run of the report; the verdict with its wall time."""
    if os.path.lexists(home_file):
        os.unlink(home_file)
    started = time.monotonic()
    rc, out, err = run(argv, as_user=as_user)
    seconds = round(time.monotonic() - started, 3)
    try:
        owner = os.lstat(home_file).st_uid
        os.unlink(home_file)
    except FileNotFoundError:
        owner = None
    verdict = judge(runtime, rc, out, os.uname().machine, account.pw_uid, owner, gpu_facts=gpu_facts,
                    check_gpus=check_gpus, gpus_not_checked=not_checked)
    if rc != 0 and err.strip():
        verdict["reasons"].append("%s: %s" % (runtime, err.strip().splitlines()[-1]))
    verdict["seconds"] = seconds
    return verdict


def _failed(runtime, reason, result):
    """The verdict of a runtime whose report never ran (``seconds`` null)."""
    verdict = {"passed": False, "uid": None, "architecture": None, "gpus": None, "seconds": None,
               "reasons": ["%s: %s" % (runtime, reason)]}
    verdict.update(result)
    return verdict


def _srun_tools(module, slurm):
    """srun and srun-podman, or why the step cannot run."""
    srun = module.get_bin_path(slurm["srun"]) if "/" not in slurm["srun"] else slurm["srun"]
    srun_podman = slurm["srun_podman"]
    if "/" not in srun_podman:
        srun_podman = module.get_bin_path(srun_podman, opt_dirs=["/usr/local/bin"]) or srun_podman
    if not srun or not os.access(srun, os.X_OK):
        return None, "%s (Slurm's client) is not installed" % slurm["srun"]
    if not os.access(srun_podman, os.X_OK):
        return None, "%s is not installed (the slurm_docker role with podman among its engines)" % srun_podman
    return (srun, srun_podman), None


def _one_gpu_step(run, names, home_file, slurm, tools, node):
    """A step given one GPU must see exactly one: ``{allocated, seen, reasons}``."""
    argv = srun_podman_argv(names["podman"], home_file, node, 1, tools[0], tools[1], slurm["partition"])
    rc, out, err = run(argv)
    if os.path.lexists(home_file):
        os.unlink(home_file)
    seen = parse_identity(out)["nvidia_devices"] or []
    reasons = []
    if rc != 0:
        reasons.append("podman_srun: the one-GPU step exited with %s: %s" % (rc, (err or out).strip()[-300:]))
    elif len(seen) != 1:
        reasons.append("podman_srun: GPUs: a step given one GPU sees %d (%s)" % (len(seen), " ".join(seen) or "none"))
    return {"allocated": 1, "seen": seen, "reasons": reasons}


def verify_runtime(module, run, runtime, account, names, tar, gpu_facts, cdi_spec):
    """Import when needed, run the report, read the home file's owner on the host, judge."""
    home_file = os.path.join(account.pw_dir, ".hpc-verify-%s" % runtime)
    result = {"imported": False}
    has_gpus = bool(gpu_facts and gpu_facts.get("present") and gpu_facts.get("gpus"))
    if runtime == "udocker":
        tool = module.get_bin_path("udocker", opt_dirs=["/usr/local/bin"])
        check_gpus, not_checked = True, None
    else:
        tool = module.get_bin_path("podman")
        check_gpus = os.path.exists(cdi_spec)
        not_checked = None if check_gpus else "no CDI spec at %s (podman is given no GPU)" % cdi_spec
    if tool is None:
        return _failed(runtime, "%s is not installed" % ("udocker" if runtime == "udocker" else "podman"), result)
    slurm = module.params["slurm"]
    if runtime == "podman_srun":
        tools, error = _srun_tools(module, slurm)
        if error:
            return _failed(runtime, error, result)
        node = slurm["node"] or os.uname().nodename.split(".")[0]

    if runtime == "udocker":
        imported, error = _udocker_import(run, tool, tar, names)
        argv = udocker_argv(names["udocker_container"], account.pw_name, home_file, tool)
        as_user = True
    else:
        as_user = runtime != "podman_root"
        imported, error = _podman_import(run, tool, tar, names["podman"], as_user)
        if runtime == "podman_srun":
            gpus = len(gpu_facts["gpus"]) if check_gpus and has_gpus else 0
            argv = srun_podman_argv(names["podman"], home_file, node, gpus, tools[0], tools[1], slurm["partition"])
        else:
            argv = podman_argv(names["podman"], account.pw_dir, home_file, rootless=as_user, uid=account.pw_uid,
                               gid=account.pw_gid, gpus=check_gpus and has_gpus, podman=tool)
    result["imported"] = imported
    if error:
        return _failed(runtime, error, result)
    nvidia = runtime == "udocker" and has_gpus
    if nvidia:
        result["nvidia_setup"], error = _udocker_nvidia(run, tool, names["udocker_container"], force=imported)
        if error:
            return _failed(runtime, error, result)

    verdict = _run_report(run, runtime, argv, as_user, account, home_file, gpu_facts, check_gpus, not_checked)
    gpu_problem = any(r.startswith(("%s: GPUs:" % runtime, "%s: driver:" % runtime)) for r in verdict["reasons"])
    if nvidia and not result["nvidia_setup"] and gpu_problem:
        # Set up by an earlier run: its copies of the driver may be stale. Once more, freshly set up.
        result["nvidia_setup"], error = _udocker_nvidia(run, tool, names["udocker_container"], force=True)
        if error:
            return _failed(runtime, error, result)
        verdict = _run_report(run, runtime, argv, as_user, account, home_file, gpu_facts, check_gpus, not_checked)
    if runtime == "podman_srun" and verdict["passed"] and verdict["gpus"]["checked"] and len(gpu_facts["gpus"]) > 1:
        verdict["isolation"] = _one_gpu_step(run, names, home_file, slurm, tools, node)
        verdict["reasons"] += verdict["isolation"].pop("reasons")
        verdict["passed"] = not verdict["reasons"]
    verdict.update(result)
    return verdict


def main():
    module = AnsibleModule(
        argument_spec=dict(
            user=dict(type="str", required=True),
            runtimes=dict(type="list", elements="str", choices=list(RUNTIMES + SLURM_RUNTIMES),
                          default=list(RUNTIMES)),
            rootfs=dict(type="path", required=True),
            image_name=dict(type="str", default="hpc-verify"),
            gpu_facts=dict(type="dict"),
            cdi_spec=dict(type="path", default="/etc/cdi/nvidia.yaml"),
            timeout=dict(type="int", default=120),
            fail_on_mismatch=dict(type="bool", default=True),
            slurm=dict(type="dict", default={}, options=dict(
                node=dict(type="str"),
                partition=dict(type="str"),
                srun=dict(type="str", default="srun"),
                srun_podman=dict(type="str", default="srun-podman"),
            )),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, passed=None, reasons=[],
                         msg="check mode: nothing imported or run")
    try:
        account = pwd.getpwnam(params["user"])
    except KeyError:
        module.fail_json(msg="user %s does not exist on this node" % params["user"], passed=False, reasons=[],
                         skipped=False)
    if not os.path.isfile(params["rootfs"]):
        module.fail_json(msg="the verification rootfs %s does not exist" % params["rootfs"], passed=False,
                         reasons=[], skipped=False)

    names = image_names(_sha256(params["rootfs"]), params["image_name"])
    run = Runner(module, account.pw_name, params["timeout"])
    runtimes = {}
    for runtime in dict.fromkeys(params["runtimes"]):
        runtimes[runtime] = verify_runtime(module, run, runtime, account, names, params["rootfs"],
                                           params["gpu_facts"] or {}, params["cdi_spec"])
    reasons = [reason for verdict in runtimes.values() for reason in verdict["reasons"]]
    passed = not reasons
    changed = any(verdict["imported"] or verdict.get("nvidia_setup") for verdict in runtimes.values())
    msg = "%s: %s" % (", ".join(runtimes), "passed" if passed else "; ".join(reasons))
    result = dict(changed=changed, skipped=False, passed=passed, reasons=reasons, msg=msg, image=names,
                  runtimes=runtimes)
    if not passed and params["fail_on_mismatch"]:
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
