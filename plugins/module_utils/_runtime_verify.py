# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The verification report through podman (rootless and as root) and udocker: argv and verdict, no Ansible.

The container runs the collection's ``/verify`` report (:mod:`._verify`), followed by identity lines
this model adds to it (busybox applets called by name, as the rootfs has only busybox)::

    hpc-verify: 1
    arch=x86_64
    nvidia_smi=absent
    ...                                  (the /verify report, unchanged)
    uid=2001
    gid=2001
    nvidia_devices=nvidia0 nvidia1       (the /dev/nvidia<minor> device files in the container)
    home_file=/home/alice/.hpc-verify-podman   (printed when the container could create it)

Verdict of one runtime: the report is there, the architecture is the node's, the uid inside is the user's,
the file created in ``$HOME`` belongs to the user on the host (its owner is read on the host), and, when GPUs
are checked, the container sees every GPU of the node: by UUID, bus id and driver through
:func:`._verify.compare` when ``nvidia-smi`` was mounted in (a real CDI spec mounts it), else by the device
files ``/dev/nvidia<minor>`` of every host GPU (the device nodes CDI gives, which is all a spec without the
driver's tools gives).
"""

from __future__ import annotations

import posixpath
import re
import shlex

from ._job_launch import srun_container_argv
from ._verify import compare, go_arch, host_gpus, parse_verify_output

__all__ = ["RUNTIMES", "SLURM_RUNTIMES", "IDENTITY_SCRIPT", "image_names", "user_shell", "podman_argv",
           "srun_podman_argv", "udocker_argv",
           "udocker_import_argvs", "udocker_nvidia_argvs", "udocker_nvidia_mode", "udocker_nvidia_problem",
           "parse_identity", "judge"]

RUNTIMES = ("podman", "podman_root", "udocker")
# Verified only when asked for: the user's rootless podman in a Slurm job step, started by srun-podman.
SLURM_RUNTIMES = ("podman_srun",)

# $1: the file to create in $HOME (its owner is checked on the host).
IDENTITY_SCRIPT = ('/verify; B=/bin/busybox; echo "uid=$($B id -u)"; echo "gid=$($B id -g)"; '
                   'echo "nvidia_devices=$(cd /dev && $B ls -d nvidia[0-9]* 2>/dev/null | $B tr "\\n" " ")"; '
                   'if $B touch "$1"; then echo "home_file=$1"; fi')

_DEVICE_RE = re.compile(r"^nvidia(\d+)$")


def image_names(digest, name="hpc-verify"):
    """Names of the imported rootfs, one per content: podman image, udocker image, udocker container.

    The tag is the start of the rootfs tar's sha256, so a changed rootfs is imported anew and an unchanged
    one never is.
    """
    tag = digest[:12]
    return {"podman": "localhost/%s:%s" % (name, tag), "udocker_image": "%s:%s" % (name, tag),
            "udocker_container": "%s-%s" % (name, tag)}


def user_shell(user, argv):
    """argv running ``argv`` as ``user`` in a login environment (``runuser -l``).

    Rootless podman and udocker need the user's own login environment (HOME, XDG_RUNTIME_DIR from the PAM
    session, PATH with /usr/local/bin), not root's.
    """
    return ["runuser", "-l", user, "-c", shlex.join(argv)]


def _report_command(home_file):
    return ["/bin/busybox", "sh", "-c", IDENTITY_SCRIPT, "sh", home_file]


def podman_argv(image, home, home_file, rootless=True, uid=None, gid=None, gpus=False, podman="podman"):
    """``podman run`` of the report: rootless with the user's own uid inside (``--userns=keep-id``), or as root
    running the container as ``uid:gid``; ``$HOME`` at its own path; every GPU through CDI.

    Rootless, ``$HOME`` itself is bind-mounted. Root's podman on fuse-overlayfs storage cannot create a mount
    point in the image (crun: ``mkdir ...: Operation not permitted``), so as root the directory that holds
    ``$HOME`` is bind-mounted onto the mount point the rootfs has for it (``/home``).
    """
    argv = [podman, "run", "--rm", "--network=none"]
    if rootless:
        argv.append("--userns=keep-id")
        bind = home
    else:
        argv.append("--user=%d:%d" % (uid, gid))
        bind = posixpath.dirname(home.rstrip("/")) or home
    argv += ["-v", "%s:%s" % (bind, bind), "-e", "HOME=%s" % home]
    if gpus:
        argv += ["--device", "nvidia.com/gpu=all"]
    return argv + [image] + _report_command(home_file)


def srun_podman_argv(image, home_file, node, gpus=0, srun="srun", srun_podman="srun-podman", partition=None):
    """The report as a one-task Slurm job step on ``node`` with ``gpus`` GPUs (``--gres=gpu:<n>``), in the
    container srun-podman starts for the step (the user's rootless podman, the step's GPUs as CDI devices)."""
    return srun_container_argv(srun_podman, image, _report_command(home_file), node, gpus, partition, srun)


def udocker_import_argvs(tar, names, udocker="udocker"):
    """The user's import of the rootfs into udocker and the container made from it."""
    return [[udocker, "-q", "import", tar, names["udocker_image"]],
            [udocker, "-q", "create", "--name=%s" % names["udocker_container"], names["udocker_image"]]]


def udocker_argv(container, user, home_file, udocker="udocker"):
    """``udocker run`` of the report as ``user`` with the host's passwd/group and the home directory bound."""
    return [udocker, "-q", "run", "--hostauth", "--bindhome", "--user=%s" % user, container] + _report_command(home_file)


def udocker_nvidia_argvs(container, udocker="udocker"):
    """``udocker setup`` of the container: the query (prints ``nvidiamode: True|False``) and the set-up that
    copies the node's NVIDIA driver libraries and tools into it (``--force``: replaces an earlier copy, as after
    a driver update)."""
    return {"query": [udocker, "setup", container],
            "set": [udocker, "setup", "--nvidia", "--force", container]}


def udocker_nvidia_mode(text):
    """``nvidiamode: True|False`` of ``udocker setup <container>``; None when the line is missing."""
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key.strip() == "nvidiamode":
            return {"True": True, "False": False}.get(value.strip())
    return None


def udocker_nvidia_problem(rc, out, err):
    """Why ``udocker setup --nvidia`` did not set the container up; None when it did.

    Its exit code cannot be trusted (1.3.17 exits 0 when it finds no driver library). It prints
    ``nvidia mode set`` only after copying the driver's libraries; every failure that stops it (no driver
    library on the node, no library directory in the container) comes before, as an ``Error:`` line, which is
    then the reason. ``Error:``/``Warn:`` lines beside ``nvidia mode set`` are about optional files (a node
    without ``/etc/vulkan/icd.d`` gets ``Error: creating nvidia dir .../etc/vulkan/icd.d``): the GPU check
    that follows is what proves the copy.
    """
    lines = [line.strip() for line in ((out or "") + "\n" + (err or "")).splitlines() if line.strip()]
    if "Info: nvidia mode set" in lines:
        return None
    said = "; ".join(line for line in lines if line.startswith("Error:")) or (lines[-1] if lines else "no output")
    return "udocker setup --nvidia did not set up the GPUs (exit code %s, not trusted): %s" % (rc, said)


def parse_identity(text):
    """The identity lines of the report (see the module docstring); missing ones are None."""
    result = {"uid": None, "gid": None, "nvidia_devices": None, "home_file": None}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or key not in result:
            continue
        value = value.strip()
        if key in ("uid", "gid"):
            result[key] = int(value) if value.isdigit() else None
        elif key == "nvidia_devices":
            result[key] = sorted(set(value.split()), key=lambda n: (len(n), n))
        else:
            result[key] = value or None
    return result


def judge(runtime, rc, output, node_machine, uid, home_file_owner, gpu_facts=None, check_gpus=False,
          gpus_not_checked=None):
    """Verdict of one runtime's run.

    ``home_file_owner`` is the uid owning the file the container created in ``$HOME``, as the host sees it
    (None when it does not exist). ``check_gpus``: every host GPU must be visible; otherwise ``gpus_not_checked``
    says why not. Returns ``{passed, reasons, uid, architecture, gpus}``.
    """
    reasons = []
    report = parse_verify_output(output)
    identity = parse_identity(output)
    if rc != 0:
        reasons.append("%s: the container exited with %s" % (runtime, rc))
    arch = report.get("arch")
    if not report.get("marker"):
        reasons.append("%s: the container did not print the verification report" % runtime)
    if arch is None:
        reasons.append("%s: the container did not report its architecture" % runtime)
    elif go_arch(arch) != go_arch(node_machine):
        reasons.append("%s: architecture: the container runs %s but the node is %s" % (runtime, arch, node_machine))
    if identity["uid"] != uid:
        reasons.append("%s: identity: uid inside the container is %s, the user's uid is %d"
                       % (runtime, identity["uid"], uid))
    if identity["home_file"] is None or home_file_owner is None:
        reasons.append("%s: identity: the container could not create a file in $HOME" % runtime)
    elif home_file_owner != uid:
        reasons.append("%s: identity: a file created in $HOME belongs to uid %d on the host, not to the user (%d)"
                       % (runtime, home_file_owner, uid))

    gpus = {"checked": False, "method": None, "host": 0, "seen": None, "reason": gpus_not_checked}
    host = host_gpus(gpu_facts)
    gpus["host"] = len(host)
    if check_gpus and host:
        gpus.update(checked=True, reason=None)
        if report.get("nvidia_smi"):
            gpus["method"] = "nvidia-smi"
            problems, details = compare(node_machine, report, host, gpu_facts or {})
            gpus["seen"] = details["gpus"]["container"]
            reasons.extend("%s: %s" % (runtime, p) for p in problems if p.startswith(("GPUs:", "driver:")))
        else:
            gpus["method"] = "device files"
            seen = [int(m.group(1)) for m in map(_DEVICE_RE.match, identity["nvidia_devices"] or []) if m]
            gpus["seen"] = len(seen)
            missing = ["/dev/nvidia%s (%s)" % (g["minor_number"], g["uuid"]) for g in host
                       if g["minor_number"] is not None and g["minor_number"] not in seen]
            if missing:
                reasons.append("%s: GPUs: not visible in the container: %s" % (runtime, ", ".join(missing)))
    elif check_gpus:
        gpus["reason"] = "the node has no GPU"
    return {"passed": not reasons, "reasons": reasons, "uid": identity["uid"], "architecture": arch, "gpus": gpus}
