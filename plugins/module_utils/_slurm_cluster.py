# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""A Slurm cluster seen from its controller: the compute nodes, their GPUs, and the reloads a change needs.

Pure Python, no Ansible: ``hostvars`` is any mapping of host name to that host's variables, and the module results
are the dicts the collection's slurm_gres and slurm_conf modules return (``changed``, ``changed_nodes``,
``changed_keys``, ``node_attributes``), alone or as a loop's ``results``.

* ``compute_nodes``: each compute node's Slurm name (its ``slurm_docker_node_name``, else its inventory name) and,
  for the nodes with GPU facts in this run, their GPUs; the nodes without facts yet.
* ``gres_edits``: what the gres.conf edits did (one file, or each node's own), for slurm.conf and the reloads.
* ``reload_plan``: GRES and GresTypes are read by slurmctld and slurmd at start only (``scontrol reconfigure``
  leaves the nodes without them), and slurmctld caches users' groups until it restarts: a changed node's GRES, a
  changed GresTypes or a changed docker group membership needs restarts (slurmd of the changed nodes around
  slurmctld); any other change a reconfigure.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._gpu_access import hosts_with_facts
from ._hostvars import facts_of, vars_of


def compute_nodes(hosts, hostvars):
    """``{'host_of': {slurm name: host}, 'gpus': {slurm name: [gpu, ...]}, 'with_facts': [...], 'unseen': [...]}``:
    ``gpus`` holds the nodes with GPU facts in this run (an empty list for a node without GPUs)."""
    hosts = list(hosts)
    with_facts = hosts_with_facts(hosts, hostvars)
    name = dict((host, vars_of(hostvars, host).get("slurm_docker_node_name") or host) for host in hosts)
    gpus = {}
    for host in with_facts:
        facts = facts_of(hostvars, host).get("gpu_facts") or {}
        gpus[name[host]] = list(facts.get("gpus") or []) if facts.get("present") else []
    return {"host_of": dict((name[host], host) for host in hosts), "gpus": gpus, "with_facts": with_facts,
            "unseen": [host for host in hosts if host not in with_facts]}


def _results(registered):
    """The module results in a registered value: a loop's ``results`` (skipped items left out) or the value."""
    if not isinstance(registered, Mapping):
        return []
    if "results" in registered:
        return [r for r in registered.get("results") or [] if isinstance(r, Mapping) and not r.get("skipped")]
    return [] if registered.get("skipped") else [registered]


def _changed(registered):
    return any(r.get("changed") for r in _results(registered))


def gres_edits(single, per_node_loop, per_node):
    """``{'node_attributes': {slurm name: {'Gres': ...}}, 'changed_nodes': [slurm name], 'changed', 'per_node'}`` from
    the one gres.conf's edit (``single``) or, with ``per_node``, the loop of each node's own edit."""
    if per_node:
        results = [r for r in _results(per_node_loop) if "node_attributes" in r]
        attributes = {}
        for result in results:
            attributes.update(result.get("node_attributes") or {})
        changed_nodes = [node for r in results for node in r.get("changed_nodes") or []]
        return {"node_attributes": attributes, "changed_nodes": changed_nodes, "per_node": True,
                "changed": any(r.get("changed") for r in results)}
    results = _results(single)
    return {"node_attributes": dict(results[0].get("node_attributes") or {}) if results else {},
            "changed_nodes": [node for r in results for node in r.get("changed_nodes") or []], "per_node": False,
            "changed": any(r.get("changed") for r in results)}


def reload_plan(nodes, gres, slurm_conf, copies=(), membership=None, force=False):
    """``{'restart', 'nodes', 'reconfigure', 'check_nodes', 'gpus'}``.

    ``nodes`` is ``compute_nodes``'s answer; ``gres`` is ``gres_edits``'s; ``slurm_conf`` the slurm.conf edit's
    result; ``copies`` the registered loops of the edits of other hosts' copies; ``membership`` the docker group
    membership loop; ``force`` a reload whether or not anything changed. ``nodes`` and ``check_nodes`` are
    inventory names: the compute nodes whose slurmd restarts, and those whose copy of the new files
    ``slurmd -G`` checks first.
    """
    host_of = nodes["host_of"]
    conf = (_results(slurm_conf) or [{}])[0]
    conf_changed = (force or bool(conf.get("changed")) or gres["changed"]
                    or any(_changed(loop) for loop in copies))
    changed_names = []
    # The one gres.conf's nodes, slurm.conf's, then each node's own gres.conf's.
    single = [] if gres["per_node"] else list(gres["changed_nodes"])
    own = list(gres["changed_nodes"]) if gres["per_node"] else []
    for name in single + list(conf.get("changed_nodes") or []) + own:
        if name not in changed_names:
            changed_names.append(name)
    if force or "GresTypes" in (conf.get("changed_keys") or []):
        restart_nodes = list(host_of.values())
    else:
        restart_nodes = [host_of[name] for name in changed_names if name in host_of]
    restart = bool(restart_nodes) or _changed(membership)
    with_facts = nodes["with_facts"]
    return {
        "restart": restart,
        "nodes": restart_nodes,
        "reconfigure": not restart and conf_changed,
        "check_nodes": restart_nodes or [host for host in host_of.values() if host in with_facts][:1],
        "gpus": dict((name, len(gpus)) for name, gpus in nodes["gpus"].items()),
    }
