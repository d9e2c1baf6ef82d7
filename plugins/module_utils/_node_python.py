# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The Python a node would run the collection's modules with, and whether it is new enough.

Pure Python, no Ansible. The node-Python pre-flight (playbooks/node_python.yml) runs one raw command per node
that prints ``os<TAB>ID<TAB>VERSION_ID<TAB>ID_LIKE`` from /etc/os-release, then ``py<TAB>version or -<TAB>
candidate`` for each interpreter Ansible could pick (``candidates``). ``verdict`` reads those lines, picks the
interpreter Ansible would use (interpreter discovery: a distribution's platform Python first where ansible-core
has a distribution map, then the first candidate that runs; else the configured interpreter) and says whether it
is new enough, with the fix for the node's OS when it is not.
"""

from __future__ import annotations

import re

EL_IDS = ("rhel", "centos", "rocky", "almalinux", "ol")
SKIP_HINT = "(Skip this check with --skip-tags node_python.)"


def discovers(setting):
    """Whether an interpreter setting asks for interpreter discovery (``auto``, ``auto_silent``, ...)."""
    return str(setting).startswith("auto")


def candidates(setting, distro_map, fallback):
    """The interpreters the probe tries, in Ansible's order: the configured one alone, or under discovery the
    distribution map's platform Pythons (ansible-core 2.16 only) and then INTERPRETER_PYTHON_FALLBACK."""
    if not discovers(setting):
        return [setting]
    platform = []
    for versions in (distro_map or {}).values():
        for python in (versions or {}).values():
            if python not in platform:
                platform.append(python)
    return platform + list(fallback or [])


def _version_tuple(version):
    return tuple(int(part) for part in re.findall(r"\d+", str(version)))


def _number(text):
    """An int from a version key or VERSION_ID ("8.10" -> 8); 0 where there is none, as Jinja's int does."""
    match = re.match(r"\d+", str(text))
    return int(match.group(0)) if match else 0


class _Node:
    """The probe's lines, read."""

    def __init__(self, stdout_lines):
        rows = [str(line).split("\t") for line in stdout_lines or []]
        os_row = next((row for row in rows if row[0] == "os"), ["os", "", "", ""]) + ["", "", ""]
        self.os_id = os_row[1].lower()
        self.os_version = os_row[2]
        self.os_like = os_row[3].lower().split()
        self.os_major = re.sub(r"[^0-9].*$", "", os_row[2])
        self.el = self.os_id in EL_IDS or "rhel" in self.os_like
        self.debian = self.os_id in ("debian", "ubuntu") or "debian" in self.os_like
        py_rows = [row for row in rows if row[0] == "py" and len(row) >= 3]
        self.versions = {row[2]: row[1] for row in py_rows}
        self.found = [row[2] for row in py_rows if row[1] != "-"]

    def platform_python(self, distro_map):
        """The distribution map's Python for this node (by ID, else by what it is like; for its major version or
        the nearest below it), or ''."""
        names = [self.os_id] + (["redhat"] if self.el else []) + self.os_like
        distro = next((name for name in names if name in (distro_map or {})), None)
        versions = (distro_map or {}).get(distro) or {}
        majors = [_number(key) for key in versions if _number(key) <= _number(self.os_major)]
        if not majors:
            return ""
        return versions.get(str(max(majors)), "")

    def fix(self, minimum):
        """What to do about it on this node's OS."""
        any_python = "or set ansible_python_interpreter to a Python %s or newer that it has." % minimum
        if self.el and self.os_major != "" and int(self.os_major) <= 7:
            return ("%s %s (EL %s) is not supported: its newest Python is 3.6 and no ansible-core that runs this "
                    "collection manages it. Move the node to EL 8 or 9." % (self.os_id, self.os_version, self.os_major))
        if self.el and _number(self.os_major) == 8:
            return ('Run "dnf install python3.11" on it and set ansible_python_interpreter=/usr/bin/python3.11 for '
                    "it (a host or group variable of the inventory).")
        if self.el:
            return 'Run "dnf install python3" on it, ' + any_python
        if self.debian:
            return 'Run "apt-get install python3" on it, ' + any_python
        return "Install Python %s or newer on it and set ansible_python_interpreter to it." % minimum


def verdict(stdout_lines, host, setting, minimum="3.9", distro_map=None, fallback=None):
    """``{ok, python, version, msg}`` for one node from its probe's output lines.

    ``setting`` is the node's ansible_python_interpreter (or INTERPRETER_PYTHON), ``distro_map`` ansible-core
    2.16's private distribution map (empty on later releases), ``fallback`` INTERPRETER_PYTHON_FALLBACK.
    """
    node = _Node(stdout_lines)
    discover = discovers(setting)
    platform = node.platform_python(distro_map) if discover else ""
    if platform and platform in node.found:
        python = platform
    elif node.found:
        python = node.found[0]
    else:
        python = "" if discover else setting
    version = node.versions.get(python, "-")
    ok = version != "-" and _version_tuple(version) >= _version_tuple(minimum)
    if ok:
        msg = "%s: %s, Python %s" % (host, python, version)
    elif version == "-":
        why = ("interpreter discovery finds none of %s" % ", ".join(candidates(setting, distro_map, fallback))
               if discover else "ansible_python_interpreter %s does not run there" % setting)
        msg = "%s: no Python to run the collection's modules with (%s). %s %s" % (
            host, why, node.fix(minimum), SKIP_HINT)
    else:
        msg = ("%s: Ansible would run the collection's modules with %s, Python %s; they need Python %s or newer. "
               "%s %s" % (host, python, version, minimum, node.fix(minimum), SKIP_HINT))
    return {"ok": ok, "python": python, "version": version, "msg": msg}
