# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The ids a Slurm cluster's hosts must agree on before Docker jobs can run as the user.

Pure Python, no Ansible. slurmctld hands a job the group ids it knows on the controller, and a job runs as the
same uid on every node, so the docker group (when Docker is among the engines) and each job user must have the
same ids on the controller and every compute node. Each host's ids come from ``getent`` (``passwd_ids``); the
check (``id_problems``) names every disagreement in one sentence each.
"""

from __future__ import annotations

from collections.abc import Mapping


def passwd_ids(results):
    """``{user: "uid:gid" or None}`` from the registered results of a ``getent passwd`` lookup per user (a loop
    whose ``item`` is the user)."""
    out = {}
    for result in results or []:
        if not isinstance(result, Mapping):
            continue
        user = result.get("item")
        entry = ((result.get("ansible_facts") or {}).get("getent_passwd") or {}).get(user)
        out[user] = "%s:%s" % (entry[1], entry[2]) if entry else None
    return out


def _pairs(values_by_host):
    return ", ".join("%s on %s" % (value, host) for host, value in values_by_host.items())


def id_problems(ids_by_host, users, node_hosts, group, with_docker=True, check_mode=False):
    """The disagreements, one sentence each, of ``{host: {"docker_gid": gid or None, "users": passwd_ids}}``.

    A compute node without the docker group is a problem only outside check mode (a check before the first
    converge has no Docker yet); the controller needs no docker group.
    """
    problems = []
    if with_docker:
        gids, without = {}, []
        for host, ids in ids_by_host.items():
            if ids.get("docker_gid"):
                gids[host] = ids["docker_gid"]
            elif host in node_hosts:
                without.append(host)
        if len(set(gids.values())) > 1:
            problems.append("The %s group has different ids on the Slurm hosts (%s): slurmctld gives jobs the ids of "
                            "the controller, so give the group one id everywhere." % (group, _pairs(gids)))
        if without and not check_mode:
            problems.append("No %s group on %s: install Docker there first (the docker_engine role)."
                            % (group, ", ".join(without)))
    for user in users:
        seen = dict((host, (ids.get("users") or {}).get(user)) for host, ids in ids_by_host.items())
        missing = [host for host, value in seen.items() if not value]
        if missing:
            problems.append("User %s does not exist on %s: a Slurm job runs as the same user on the controller and "
                            "every node." % (user, ", ".join(missing)))
        elif len(set(seen.values())) > 1:
            problems.append("User %s has different uid:gid on the Slurm hosts (%s)." % (user, _pairs(seen)))
    return problems
