#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lsf_reconfig
short_description: Validate an IBM Spectrum LSF cluster's configuration, then reload LIM and mbatchd as needed
version_added: 0.2.0
description:
  - Runs C(lsadmin ckconfig -v) and C(badmin ckconfig -v) first. When either reports an error (an exit status
    other than 0, or LSF's "There are fatal errors.") or warns that it ignored a line ("Some configuration
    parameters may be incorrect"), fails with LSF's own output and reloads nothing.
  - Then runs only the reloads asked for, in this order - C(lsadmin reconfig -f) (O(lim)), C(badmin mbdrestart -f)
    (O(mbdrestart)), C(badmin reconfig -f) (O(batch), left out when O(mbdrestart) re-reads the batch files anyway).
  - After C(lsadmin reconfig), with O(resource) and O(hosts), asks LSF which hosts have the resource
    (C(lshosts -w -R "select[<resource>]")) and fails, naming them, when one of O(hosts) is not listed - LSF has
    not taken the new configuration.
  - The commands run with C(LSF_ENVDIR) set to O(envdir) and C(PATH) made of O(bindir), O(path) and the module's
    own C(PATH), in that order.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  envdir:
    description: LSF_ENVDIR, the directory of lsf.conf.
    type: path
    required: true
  bindir:
    description: LSF_BINDIR, searched first for the LSF commands.
    type: path
  path:
    description: C(PATH) entries after O(bindir) (a colon-separated list, for example the PATH C(profile.lsf)
      sets); the module's own C(PATH) follows them.
    type: str
  lim:
    description: Reload LIM (C(lsadmin reconfig -f)) - after a change of lsf.conf, lsf.shared or lsf.cluster.
    type: bool
    default: false
  mbdrestart:
    description: Restart mbatchd (C(badmin mbdrestart -f)) - after a change of lsf.shared or lsf.cluster, or of
      lsf.conf keys mbatchd reads only at its start.
    type: bool
    default: false
  batch:
    description: Reconfigure mbatchd (C(badmin reconfig -f)) - after a change of lsb.* files only.
    type: bool
    default: false
  hosts_restart:
    description:
      - Restart sbatchd (C(badmin hrestart -f all)) and RES (C(lsadmin resrestart -f all)) on every host, after the
        other reloads - after a change of lsf.conf keys those daemons read only at their start, such as
        C(LSB_DOCKER_PASS_ENV). Running jobs keep running.
    type: bool
    default: false
    version_added: 0.3.0
  resource:
    description: A resource every host of O(hosts) must have in LSF's view after the LIM reload.
    type: str
  hosts:
    description: LSF host names that must be listed with O(resource) after the LIM reload.
    type: list
    elements: str
    default: []
  error_hint:
    description: What the failure message after a configuration error tells the user to do next.
    type: str
    default: correct the error, then run again to validate and reload.
attributes:
  check_mode:
    support: full
    description: Runs nothing; reports the reloads it would run as a change (RV(reloads)).
  diff_mode:
    support: none
    description: Changes no file.
  idempotent:
    support: none
    description: Each run reloads what it is asked to; call it from a handler, after a change.
notes:
  - The checks run on the configuration files as they are on disk; run this after the edits, on the host that holds
    them (the LSF master).
seealso:
  - module: hpc.gpu_containers.lsf_config_info
"""

EXAMPLES = r"""
- name: Validate and reload LSF after lsf.shared and lsb.applications changed
  hpc.gpu_containers.lsf_reconfig:
    envdir: /usr/share/lsf/conf
    bindir: /usr/share/lsf/10.1/linux3.10-glibc2.17-x86_64/bin
    lim: true
    mbdrestart: true
    resource: docker
    hosts: [gpu01, gpu02]
"""

RETURN = r"""
checks:
  description: The two configuration checks, each with its command, exit status and output.
  returned: success, or a failed check
  type: list
  elements: dict
  sample: [{"command": "lsadmin ckconfig -v", "rc": 0, "output": "Checking configuration files ...\nNo errors found."}]
reloads:
  description: The reload commands run (in check mode, that would run).
  returned: always
  type: list
  elements: str
  sample: ["lsadmin reconfig -f", "badmin mbdrestart -f"]
hosts_with_resource:
  description: The hosts C(lshosts) listed with O(resource), after the LIM reload.
  returned: when O(resource) and O(hosts) were given and LIM was reloaded
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_admin
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_command import LsfCommands, failure


def main():
    module = AnsibleModule(
        argument_spec={
            "envdir": {"type": "path", "required": True},
            "bindir": {"type": "path"},
            "path": {"type": "str"},
            "lim": {"type": "bool", "default": False},
            "mbdrestart": {"type": "bool", "default": False},
            "batch": {"type": "bool", "default": False},
            "hosts_restart": {"type": "bool", "default": False},
            "resource": {"type": "str"},
            "hosts": {"type": "list", "elements": "str", "default": []},
            "error_hint": {"type": "str", "default": "correct the error, then run again to validate and reload."},
        },
        supports_check_mode=True,
    )
    params = module.params
    reloads = _lsf_admin.reloads(params["lim"], params["mbdrestart"], params["batch"], params["hosts_restart"])
    result = {"changed": bool(reloads), "reloads": [" ".join(argv) for argv in reloads]}
    if module.check_mode:
        module.exit_json(**result)
    lsf = LsfCommands(module.run_command, envdir=params["envdir"], bindir=params["bindir"],
                      path="%s:%s" % (params["path"] or "", os.environ.get("PATH", "")))

    def run(argv):
        return lsf.run(*argv)

    result["checks"], errors = [], []
    for argv in _lsf_admin.CHECKS:
        rc, out, err = run(argv)
        result["checks"].append({"command": " ".join(argv), "rc": rc,
                                 "output": "\n".join(p.strip("\n") for p in (out, err) if p and p.strip())})
        if _lsf_admin.check_failed(rc, out, err):
            errors.append(_lsf_admin.check_report(argv, rc, out, err))
    if errors:
        result["changed"] = False
        module.fail_json(msg="%s\n\nNothing was reloaded. The edited files are in place: %s"
                         % ("\n".join(errors), params["error_hint"]), **result)
    for argv in reloads:
        rc, out, err = run(argv)
        if rc != 0:
            module.fail_json(msg=failure(argv, rc, out, err), **result)
    if params["lim"] and params["resource"] and params["hosts"]:
        rc, out, err = run(_lsf_admin.lshosts_argv(params["resource"]))
        try:
            listed = _lsf_admin.listed_hosts(rc, out, err)
        except ValueError as exc:
            module.fail_json(msg=str(exc), **result)
        result["hosts_with_resource"] = listed
        missing = [host for host in params["hosts"] if host not in listed]
        if missing:
            module.fail_json(msg="After the reload, lshosts does not list the %s resource on %s, although the cluster"
                             " file gives it to them: LSF has not taken the new configuration (check lsadmin reconfig"
                             " and the LIM log)." % (params["resource"], ", ".join(missing)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
