#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lsf_config_info
short_description: Find an IBM Spectrum LSF cluster's configuration files, and which hosts its cluster file lacks
version_added: 0.2.0
description:
  - Read only. Finds lsf.conf (LSF_ENVDIR) among O(envdir), the environment's C(LSF_ENVDIR), O(top)C(/conf), the
    directory of the C(profile.lsf) that a login script in C(/etc/profile.d) sources (C(lsf.sh) first, then the
    other C(*.sh)), each literal C(LSF_ENVDIR) such a script sets (as OpenLava's and volclava's do), and
    O(envdir_candidates); reads the
    directories lsf.conf names (C(LSF_CONFDIR), C(LSB_CONFDIR), C(LSF_SERVERDIR), C(LSF_BINDIR),
    C(LSF_LIVE_CONFDIR)); runs C(profile.lsf) in a shell for what a fresh lsf.conf leaves to it (C(LSF_SERVERDIR),
    C(LSF_BINDIR), C(PATH)); finds the cluster file C(lsf.cluster.<name>) (of several, the one the Cluster
    section of lsf.shared lists); and finds where the C(lsb.*) files are (C(lsb_configdir) in RV(layout)) - LSF's
    C(LSB_CONFDIR/<cluster>/configdir), or C(LSB_CONFDIR) itself where it holds C(lsb.params) or C(lsb.queues) and
    there is no C(<cluster>/configdir), as in the OpenLava lineage (OpenLava, volclava), where C(lineage) in RV(layout)
    is then V(openlava), else V(lsf).
  - Fails, saying what to set, when no lsf.conf is found, when the cluster is not clear, when C(LSF_LIVE_CONFDIR)
    holds live (bconf) files that LSF would read instead of the files this collection edits, and, with
    O(require_serverdir), when C(LSF_SERVERDIR) is unknown.
  - With O(hosts), also names the hosts that have no row in the Host section of the cluster file (RV(missing_hosts)).
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  envdir:
    description: The LSF_ENVDIR directory (where lsf.conf is); when given, the only place looked at.
    type: path
  top:
    description: LSF_TOP; C(<top>/conf) is a candidate.
    type: path
  envdir_candidates:
    description: More directories to look for lsf.conf in, after the others.
    type: list
    elements: path
    default: []
  cluster_name:
    description: The cluster (C(lsf.cluster.<name>)); found from the files when omitted.
    type: str
  serverdir:
    description: LSF_SERVERDIR, overriding lsf.conf and profile.lsf.
    type: path
  require_serverdir:
    description: Fail when LSF_SERVERDIR is unknown (the Docker exec driver lives there).
    type: bool
    default: false
  hosts:
    description: LSF host names to look up in the Host section of the cluster file.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - hpc.gpu_containers.read_only
"""

EXAMPLES = r"""
- name: Find the LSF configuration and the Docker hosts it lacks
  hpc.gpu_containers.lsf_config_info:
    top: /usr/share/lsf
    hosts: [gpu01, gpu02]
    require_serverdir: true
  register: lsf
"""

RETURN = r"""
layout:
  description: The paths and directories of the cluster's configuration.
  returned: success
  type: dict
  sample:
    envdir: /usr/share/lsf/conf
    confdir: /usr/share/lsf/conf
    lsb_confdir: /usr/share/lsf/conf/lsbatch
    serverdir: /usr/share/lsf/10.1/linux3.10-glibc2.17-x86_64/etc
    bindir: /usr/share/lsf/10.1/linux3.10-glibc2.17-x86_64/bin
    path: /usr/share/lsf/10.1/linux3.10-glibc2.17-x86_64/bin:/usr/bin:/bin
    live_confdir: ""
    cluster: gpucluster
    lsf_conf: /usr/share/lsf/conf/lsf.conf
    lsf_shared: /usr/share/lsf/conf/lsf.shared
    lsf_cluster: /usr/share/lsf/conf/lsf.cluster.gpucluster
    lsb_configdir: /usr/share/lsf/conf/lsbatch/gpucluster/configdir
    lineage: lsf
    lsb_applications: /usr/share/lsf/conf/lsbatch/gpucluster/configdir/lsb.applications
missing_hosts:
  description: The hosts of O(hosts) with no row in the Host section (a range row such as C(gpu[01-16]) covers).
  returned: success
  type: list
  elements: str
  sample: [gpu03]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_layout as model
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_command import LsfCommandError, profile_environment
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_conf import get_keys
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_cluster_edit import edit_hosts

PROFILE_D = "/etc/profile.d"


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()
    except OSError:
        return None


def _login_scripts():
    """The text of the login scripts in /etc/profile.d (lsf.sh first, then the others' *.sh by name)."""
    try:
        names = sorted(n for n in os.listdir(PROFILE_D) if n.endswith(".sh"))
    except OSError:
        return ""
    names.sort(key=lambda n: n != "lsf.sh")
    return "\n".join(_read(os.path.join(PROFILE_D, n)) or "" for n in names)


def _live_files(live_confdir):
    found = []
    for top, dummy, files in os.walk(live_confdir):
        found += [os.path.join(top, name) for name in files
                  if name == "lsf.shared" or name.startswith("lsf.cluster.") or name.startswith("lsb.")]
    return found


def discover(module):
    params = module.params
    candidates = model.envdir_candidates(params["envdir"], os.environ.get("LSF_ENVDIR", ""), params["top"],
                                         None if params["envdir"] else _login_scripts(), params["envdir_candidates"])
    envdir = next((c for c in candidates if os.path.isfile(os.path.join(c, "lsf.conf"))), None)
    if envdir is None:
        raise model.LayoutError("No lsf.conf found in %s. Set lsf_docker_envdir (the LSF_ENVDIR directory) or "
                                "lsf_docker_top (LSF_TOP)." % (", ".join(candidates) or "no directory: none was given or found"))
    try:
        conf = get_keys(_read(os.path.join(envdir, "lsf.conf")) or "")
    except LsfSyntaxError as err:
        raise model.LayoutError("%s/lsf.conf:%s: %s" % (envdir, err.line or "", err.msg))
    try:
        profile = profile_environment(module.run_command, envdir)
    except LsfCommandError as exc:
        raise model.LayoutError(str(exc))
    confdir = conf.get("LSF_CONFDIR") or envdir
    try:
        file_names = os.listdir(confdir) if not params["cluster_name"] else []
    except OSError as exc:
        raise model.LayoutError("%s (LSF_CONFDIR of %s/lsf.conf): %s" % (confdir, envdir, exc.strerror))
    cluster_files = [n for n in file_names if model.CLUSTER_FILE_RE.match(n) and os.path.isfile(os.path.join(confdir, n))]
    shared = _read(os.path.join(confdir, "lsf.shared")) if len(cluster_files) > 1 else None
    try:
        cluster = model.choose_cluster(params["cluster_name"], cluster_files, shared, confdir)
    except LsfSyntaxError as err:
        raise model.LayoutError("%s/lsf.shared:%s: %s" % (confdir, err.line or "", err.msg))
    lsb_confdir = model.lsb_confdir_of(conf, confdir)
    lsb_configdir = model.batch_configdir(
        lsb_confdir, cluster, os.path.isdir(os.path.join(lsb_confdir, cluster, "configdir")),
        any(os.path.isfile(os.path.join(lsb_confdir, name)) for name in ("lsb.params", "lsb.queues")))
    layout = model.layout(envdir, conf, profile, cluster, params["serverdir"] or "", lsb_configdir)
    if layout["live_confdir"]:
        model.live_overrides(layout, _live_files(layout["live_confdir"]))
    if params["require_serverdir"] and not layout["serverdir"]:
        raise model.LayoutError("Neither lsf.conf (%s) nor profile.lsf sets LSF_SERVERDIR; set lsf_docker_serverdir "
                                "(the directory holding docker-starter.py) or lsf_docker_exec_driver=false."
                                % layout["lsf_conf"])
    return layout


def missing_hosts(path, hosts):
    text = _read(path)
    if text is None:
        raise model.LayoutError("%s: cannot read the cluster file" % path)
    try:
        dummy, dummy_changed, created, dummy_warnings = edit_hosts(text, hosts, [], state="present", create_missing=True)
    except LsfSyntaxError as err:
        raise model.LayoutError("%s:%s: %s" % (path, err.line or "", err.msg))
    return created


def main():
    module = AnsibleModule(
        argument_spec={
            "envdir": {"type": "path"},
            "top": {"type": "path"},
            "envdir_candidates": {"type": "list", "elements": "path", "default": []},
            "cluster_name": {"type": "str"},
            "serverdir": {"type": "path"},
            "require_serverdir": {"type": "bool", "default": False},
            "hosts": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    try:
        layout = discover(module)
        missing = missing_hosts(layout["lsf_cluster"], module.params["hosts"]) if module.params["hosts"] else []
    except model.LayoutError as err:
        module.fail_json(msg=str(err))
    module.exit_json(changed=False, layout=layout, missing_hosts=missing)


if __name__ == "__main__":
    main()
