# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""LSF's administration commands after a configuration change: what to run, and how to read their output.

Pure Python, no Ansible. IBM documents no exit status for ``lsadmin ckconfig`` / ``badmin ckconfig``; a check
failed when its status is not 0, when its output says "There are fatal errors." (badmin's status is 0 then), or
when it warns that a line was ignored ("Some configuration parameters may be incorrect", after "No fatal errors
found."; volclava's lsadmin exits 255 then). ``lshosts -w -R "select[res]"`` prints a header line, then one host per
line, the host name first. The output of volclava 2.2 (the OpenLava lineage) for each case is recorded in
tests/fixtures/volclava/.
"""

from __future__ import annotations

import re

CHECKS = (["lsadmin", "ckconfig", "-v"], ["badmin", "ckconfig", "-v"])
LIM_RECONFIG = ["lsadmin", "reconfig", "-f"]
MBD_RESTART = ["badmin", "mbdrestart", "-f"]
BATCH_RECONFIG = ["badmin", "reconfig", "-f"]
# sbatchd and RES on every host: they read some lsf.conf keys (LSB_DOCKER_PASS_ENV) only at their start.
HOST_RESTARTS = (["badmin", "hrestart", "-f", "all"], ["lsadmin", "resrestart", "-f", "all"])
# "There are fatal errors." (badmin ckconfig exits 0 then); not "No fatal errors found.".
_FATAL = re.compile(r"(?<!no )fatal errors?\b", re.IGNORECASE)
# The warning both lineages print when a line was ignored or replaced by a default ("No fatal errors found." before
# it): a Docker setting may be lost that way, so it counts as a failure too (volclava's lsadmin exits 255 then).
_WARNING = re.compile(r"some configuration parameters may be incorrect", re.IGNORECASE)
# LSF 10.1's and the OpenLava lineage's ways of saying that no host matched the selection.
_NO_HOST = re.compile(r"no (matching )?hosts? (found|match)|not enough host\(s\) currently eligible", re.IGNORECASE)


def check_failed(rc, stdout, stderr):
    """Whether a ``ckconfig`` run reports an error, or a warning that LSF ignored a line."""
    text = "%s\n%s" % (stdout or "", stderr or "")
    return rc != 0 or bool(_FATAL.search(text)) or bool(_WARNING.search(text))


def check_report(argv, rc, stdout, stderr):
    """LSF's own words for a failed check: the command, its status and its output."""
    output = "\n".join(part.strip("\n") for part in (stdout, stderr) if part and part.strip())
    return "%s failed (rc=%d):\n%s" % (" ".join(argv), rc, output)


def reloads(lim=False, mbdrestart=False, batch=False, hosts_restart=False):
    """The reload commands, in order: LIM first (it serves the hosts' resources), then mbatchd, then sbatchd and
    RES on every host; a restart of mbatchd re-reads lsb.* too, so ``batch`` adds ``badmin reconfig`` only without
    ``mbdrestart``."""
    out = []
    if lim:
        out.append(LIM_RECONFIG)
    if mbdrestart:
        out.append(MBD_RESTART)
    elif batch:
        out.append(BATCH_RECONFIG)
    if hosts_restart:
        out.extend(list(argv) for argv in HOST_RESTARTS)
    return out


def lshosts_argv(resource):
    return ["lshosts", "-w", "-R", "select[%s]" % resource]


def listed_hosts(rc, stdout, stderr):
    """Host names ``lshosts`` listed; none when it says that no host matched. ValueError on another failure."""
    if rc != 0:
        if _NO_HOST.search("%s\n%s" % (stdout or "", stderr or "")):
            return []
        raise ValueError("lshosts failed (rc=%d): %s" % (rc, (stderr or stdout or "").strip()))
    lines = [line for line in (stdout or "").splitlines() if line.strip()]
    return [line.split()[0] for line in lines[1:]]
