# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""How site.yml cuts the Docker hosts into batches.

Pure Python, no Ansible: ``hostvars`` is any mapping of host name to that host's variables.

On a live cluster a change that restarts dockerd closes (drains) a host first, so the Docker hosts go through the
roles a batch at a time: the registry host(s) alone first (they serve and build the images the others pull),
then batches of ``hpc_site_serial`` (default 25%). Every host goes in one batch when nothing can be restarted
and the registry builds nothing the others pull:

* check mode (nothing is restarted; the engine is not even looked for);
* no Docker host of the run needs a change (the drift fast path found each as its last full converge left it);
* a new cluster: no Docker host has the engine yet, and the registry host builds no image catalogue.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._hostvars import vars_of

IMAGE_TAGS = ("all", "tagged", "images")


def batch_plan(docker_hosts, registry_hosts, hostvars, socket_var, check_mode=False, run_tags=("all",),
               skip_tags=(), serial=None, default_serial="25%"):
    """``{'first': <size of the first batch>, 'rest': <size of the next ones>}`` for Ansible's ``serial``.

    ``socket_var`` names the registered stat of /var/run/docker.sock on each Docker host of the run (hosts left
    out by the drift fast path have none); a host whose ``hpc_drift_fingerprint`` is not clean may change.
    ``serial`` is the site's ``hpc_site_serial`` (None when not given): given, it always shapes the batches.
    """
    seen = [vars_of(hostvars, host) for host in docker_hosts]
    seen = [hv for hv in seen if socket_var in hv]
    live = any(isinstance(hv.get(socket_var), Mapping)
               and ((hv.get(socket_var) or {}).get("stat") or {}).get("exists") for hv in seen)
    changes = any(not ((hv.get("hpc_drift_fingerprint") or {}).get("clean", False)) for hv in seen)
    builds_variants = (not check_mode and bool(set(run_tags) & set(IMAGE_TAGS)) and "images" not in skip_tags
                       and any(vars_of(hostvars, host).get("image_variants_sources") for host in registry_hosts))
    registry_first = serial is not None or (changes and (live or builds_variants))
    return {
        "first": max(len(registry_hosts), 1) if registry_first else "100%",
        "rest": serial if serial is not None else (default_serial if live and changes else "100%"),
    }
