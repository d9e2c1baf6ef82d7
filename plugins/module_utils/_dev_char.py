# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The /dev/char links of NVIDIA's device nodes, which keep GPU containers working across
``systemctl daemon-reload``.

With the systemd cgroup driver, runc hands a container's device rules to systemd as
``DeviceAllow=/dev/char/<major>:<minor>`` entries. systemd resolves those paths when it re-applies a
unit's properties (on every ``daemon-reload``, which package installs run), and drops the rule of a
path that does not exist: the container loses its GPUs ("Failed to initialize NVML: Unknown Error",
nvidia-container-toolkit issue 48). podman and Slurm's cgroup v2 plugin hand device rules to systemd
the same way. udev makes /dev/char/<major>:<minor> links for the devices it
creates, but NVIDIA's nodes are made by nvidia-modprobe with mknod, so they have none. NVIDIA's fix
(``nvidia-ctk system create-dev-char-symlinks --create-all``) makes them; this model does the same
for the nodes it finds, and nothing else.

The nodes: the character devices directly in the device root whose names NVIDIA's driver uses
(nvidia0..N, nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, nvidia-nvswitch*,
nvidia-nvlink) and those in its nvidia-caps and nvidia-caps-imex-channels directories. Each gets
``char/<major>:<minor>`` pointing to it relatively (``../nvidia0``), as udev writes its own. A link
that already resolves to a node with the same numbers is kept whatever its text; one that resolves to
anything else is replaced; something at that path that is not a symlink is an error, and nothing is
changed then.

Pure Python, no Ansible.
"""

from __future__ import annotations

import os
import re
import stat

__all__ = ["DevCharError", "nvidia_nodes", "plan", "apply"]

_TOP = re.compile(r"^nvidia(?:[0-9]+|ctl|-uvm|-uvm-tools|-modeset|-nvswitch[0-9]*|-nvswitchctl|-nvlink)$")
_SUBDIRS = {"nvidia-caps": re.compile(r"^nvidia-cap[0-9]+$"),
            "nvidia-caps-imex-channels": re.compile(r"^channel[0-9]+$")}


class DevCharError(Exception):
    """Something in the way of a link, or an OS error; ``str()`` names the path."""


def _char_nodes(directory, pattern, prefix):
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise DevCharError("%s: cannot list: %s" % (directory, exc.strerror))
    found = []
    for name in names:
        if not pattern.match(name):
            continue
        try:
            st = os.lstat(os.path.join(directory, name))
        except FileNotFoundError:
            continue  # removed while we looked
        if stat.S_ISCHR(st.st_mode):
            found.append((prefix + name, os.major(st.st_rdev), os.minor(st.st_rdev)))
    return found


def nvidia_nodes(dev_root):
    """``[(relative path, major, minor)]`` of NVIDIA's character device nodes under ``dev_root``."""
    nodes = _char_nodes(dev_root, _TOP, "")
    for subdir, pattern in sorted(_SUBDIRS.items()):
        nodes += _char_nodes(os.path.join(dev_root, subdir), pattern, subdir + "/")
    return nodes


def _action(link, major, minor):
    """'ok' when ``link`` resolves to a character device ``major:minor``, 'create' where there is no link,
    else 'replace'."""
    try:
        st = os.lstat(link)
    except FileNotFoundError:
        return "create"
    if not stat.S_ISLNK(st.st_mode):
        raise DevCharError("%s: exists and is not a symlink; it was left as it is, and no link was changed"
                           % link)
    try:
        target = os.stat(link)
    except OSError:
        return "replace"  # dangling
    if stat.S_ISCHR(target.st_mode) and (os.major(target.st_rdev), os.minor(target.st_rdev)) == (major, minor):
        return "ok"
    return "replace"


def plan(dev_root):
    """The links NVIDIA's nodes under ``dev_root`` need: a list of dicts with ``path`` (the link),
    ``target`` (what a new link points to), ``device`` (``major:minor``) and ``action`` (``ok``,
    ``create`` or ``replace``). Raises :class:`DevCharError` before anything is changed."""
    char_dir = os.path.join(dev_root, "char")
    if os.path.lexists(char_dir) and not os.path.isdir(char_dir):
        raise DevCharError("%s: exists and is not a directory" % char_dir)
    links, seen = [], set()
    for rel, major, minor in nvidia_nodes(dev_root):
        device = "%d:%d" % (major, minor)
        if device in seen:
            continue  # two nodes with one number (not on a real driver): the first one's link serves both
        seen.add(device)
        path = os.path.join(char_dir, device)
        links.append({"path": path, "target": "../" + rel, "device": device, "action": _action(path, major, minor)})
    return links


def apply(dev_root, links):
    """Make the links :func:`plan` gave that are not ``ok``: each a new symlink renamed into place,
    so a reader never sees the path missing."""
    char_dir = os.path.join(dev_root, "char")
    todo = [link for link in links if link["action"] != "ok"]
    if not todo:
        return
    try:
        os.makedirs(char_dir, 0o755, exist_ok=True)
    except OSError as exc:
        raise DevCharError("%s: cannot create: %s" % (char_dir, exc.strerror))
    for link in todo:
        tmp = os.path.join(char_dir, ".%s.hpc-gpu-containers.tmp" % link["device"])
        try:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            os.symlink(link["target"], tmp)
            os.rename(tmp, link["path"])
        except OSError as exc:
            raise DevCharError("%s: cannot link to %s: %s" % (link["path"], link["target"], exc.strerror))
