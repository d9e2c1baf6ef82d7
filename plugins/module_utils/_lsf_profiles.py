# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The Docker application profiles the lsf_docker role writes to lsb.applications, before they are written.

Pure Python, no Ansible. The role's variables (the runbook's container options, the image catalogue's profiles)
become:

* ``docker_options``: the ``docker run`` options every default profile gets, in the runbook's order, and the NGC
  options an image profile adds (``--shm-size`` left out with ``--ipc=host``: the container then has the node's own
  /dev/shm and Docker ignores the size);
* ``image_applications``: one profile per logical image of the catalogue, running the node's own variant (or, with
  job-start selection, the image its starter resolved), with that profile's own starter.

lsf_application (module_utils/_lsf_applications.py) turns each profile into its lsb.applications section.
"""

from __future__ import annotations

import re

SHM_SIZE = re.compile(r"^--shm-size([= ]|$)")


def without_shm_size(options):
    """``options`` without ``--shm-size`` in any of its spellings (``--shm-size=N``, ``"--shm-size N"`` as one item,
    ``--shm-size`` and ``N`` as two)."""
    out = []
    skip = False
    for option in options:
        if skip:
            skip = False
        elif SHM_SIZE.match(str(option)):
            skip = option == "--shm-size"
        else:
            out.append(option)
    return out


def docker_options(gpu_options=(), devices=(), ipc_host=False, network_host=False, remove=False, memlock=None,
                   readonly_mounts=(), shared_filesystems=(), extra=(), ngc=()):
    """``{'base': [...], 'ngc': [...]}``: the default profiles' options and the NGC options of image profiles."""
    base = list(gpu_options) + ["--device=%s" % device for device in devices]
    base += ["--ipc=host"] if ipc_host else []
    base += ["--network=host"] if network_host else []
    base += ["--rm"] if remove else []
    base += ["--ulimit=memlock=%s:%s" % (memlock, memlock)] if memlock is not None else []
    base += ["--volume=%s:%s:ro" % (path, path) for path in readonly_mounts]
    base += ["--volume=%s:%s" % (path, path) for path in shared_filesystems]
    base += list(extra)
    return {"base": base, "ngc": without_shm_size(ngc) if ipc_host else list(ngc)}


def image_applications(apps, options, ngc_options, options_scripts, runtime, parameters, exec_driver, starter_dir,
                       job_start=False, node_image=None):
    """One lsb.applications profile per entry of ``apps`` (lsf_docker_image_applications: ``name``, ``image``,
    optional ``description``, ``ngc`` (default true), ``options``, ``parameters``).

    ``node_image(image)`` names the node's own variant of a logical image; with ``job_start`` the profile runs
    ``$LSB_CONTAINER_IMAGE``, which the profile's starter (``<starter_dir>/lsf-docker-starter-<name>.py``) sets.
    """
    out = []
    for app in apps:
        image = "$LSB_CONTAINER_IMAGE" if job_start else (node_image(app["image"]) if node_image else app["image"])
        out.append({
            "name": app["name"],
            "description": app.get("description", "%s, the variant built for the node" % app["image"]),
            "container": {"runtime": runtime, "image": image,
                          "options": list(options) + (list(ngc_options) if _true(app.get("ngc", True)) else [])
                          + list(app.get("options") or []),
                          "options_scripts": list(options_scripts)},
            "parameters": dict(parameters, **(app.get("parameters") or {})),
            "exec_driver": dict(exec_driver, starter="%s/lsf-docker-starter-%s.py" % (starter_dir, app["name"])),
        })
    return out


def _true(value):
    """Ansible's ``| bool`` of a value."""
    if isinstance(value, str):
        return value.strip().lower() in ("yes", "on", "1", "true", "y", "t")
    return bool(value)
