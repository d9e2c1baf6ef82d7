# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The GPU nodes a run has facts for, and the GPU access the Docker job profiles get from them.

Pure Python, no Ansible: ``hostvars`` is any mapping of host name to that host's variables.

* A GPU node "has facts" in a run when the play gathered ``gpu_facts`` on it (``gpu_facts`` module); the LSF
  profiles also need the ``docker_daemon`` fact of the daemon.json they describe. Nodes outside the play
  (``--limit``, down) have none, and the roles name them instead of guessing.
* The GPU access (``lsf_docker_gpu_access: auto``): ``runtime`` (the NVIDIA runtime gives the GPUs) when every
  GPU node with facts registers that runtime in its daemon.json; else ``devices`` (each host's device nodes,
  listed at job start) when some node found GPUs or the site named GPU minors; else ``none``.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._hostvars import facts_of

GPU_ACCESS_MODES = ("auto", "runtime", "devices", "none")


def hosts_with_facts(hosts, hostvars, daemon_json_path=None):
    """The hosts, in their order, that have ``gpu_facts`` in this run (and, with ``daemon_json_path``, the
    ``docker_daemon`` fact read from that file)."""
    out = []
    for host in hosts:
        facts = facts_of(hostvars, host)
        if not isinstance(facts.get("gpu_facts"), Mapping):
            continue
        if daemon_json_path is not None:
            daemon = facts.get("docker_daemon")
            if not isinstance(daemon, Mapping) or daemon.get("path") != daemon_json_path:
                continue
        out.append(host)
    return out


def _found_gpus(facts):
    """Whether the node's gpu_facts found a GPU with a minor number (its /dev/nvidiaN)."""
    gpu_facts = facts.get("gpu_facts") or {}
    return bool(gpu_facts.get("present")) and any(
        isinstance(gpu, Mapping) and isinstance(gpu.get("minor_number"), (int, float))
        and not isinstance(gpu.get("minor_number"), bool) for gpu in gpu_facts.get("gpus") or [])


def gpu_access(access, hosts, hostvars, runtime, site_minors=()):
    """The GPU access mode: ``access`` itself unless it is ``auto``; then from the GPU nodes with facts
    (``hosts``, from :func:`hosts_with_facts` with the daemon.json path)."""
    if access not in GPU_ACCESS_MODES:
        raise ValueError("GPU access %r: expected one of %s" % (access, ", ".join(GPU_ACCESS_MODES)))
    if access != "auto":
        return access
    facts = [facts_of(hostvars, host) for host in hosts]
    if facts and all(runtime in ((one.get("docker_daemon") or {}).get("runtimes") or ()) for one in facts):
        return "runtime"
    if any(_found_gpus(one) for one in facts) or list(site_minors or ()):
        return "devices"
    return "none"
