#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: lsf_application
short_description: Manage LSF application profiles (Docker job profiles) in lsb.applications
version_added: 0.1.0
description:
  - Adds, updates or removes C(Begin Application) ... C(End Application) profiles in an IBM Spectrum LSF
    C(lsb.applications) file, in place.
  - Lines the task does not change stay byte-identical (comments, tabs, continuations, C(#INCLUDE)). A new
    entry is written in the profile's own style (indentation, C(=) column); a new profile is appended after
    the last profile, before any trailing comments, in the style of the last profile.
  - C(CONTAINER) and C(EXEC_DRIVER) are given structurally (O(container), O(exec_driver)) and compared
    structurally, so a value LSF reads the same way (other spacing, other line breaks) is not rewritten.
    Long values are broken over lines with backslash continuations.
  - A C(CONTAINER) or C(EXEC_DRIVER) value in the file that does not follow the grammar (real files have
    them) is kept byte-identical with a warning naming its line; other profiles are still edited and the
    value itself can be replaced.
  - Nothing containing C(#) is ever written into a value (the lsb reader ends a line at any C(#)); such
    input is refused.
  - A malformed file (C(Begin Application) without C(End), a key line outside any profile) fails with
    C(path:line) and is left untouched.
  - Run C(badmin reconfig) afterwards for LSF to read the change.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - hpc.gpu_containers.file_edit
attributes:
  check_mode:
    support: full
    details:
      - Check mode reports exactly the change a real run makes and writes nothing.
  diff_mode:
    support: full
  idempotent:
    description:
      - When run twice with the same arguments, the second run reports no change.
    support: full
    details:
      - Values are compared as LSF reads them, so other spacing or line breaks do not count as a change.
  platform:
    support: full
    platforms: posix
options:
  path:
    description:
      - The C(lsb.applications) file, for example C($LSF_ENVDIR/lsbatch/<cluster>/configdir/lsb.applications).
    type: path
    required: true
    aliases: [dest]
  name:
    description:
      - Name of the profile (its C(NAME)); the single-profile form. Mutually exclusive with O(profiles).
    type: str
  state:
    description:
      - V(present) creates or updates the profile; V(absent) removes the whole profile block.
    type: str
    choices: [present, absent]
    default: present
  description:
    description:
      - The profile's C(DESCRIPTION). Left as it is when omitted.
    type: str
  container:
    description:
      - The profile's C(CONTAINER), structured. Left as it is when omitted.
      - Rendered as C(runtime[image(...) options(... @script ...) clause(...)]).
    type: dict
    suboptions:
      runtime:
        description:
          - Container runtime, for example V(docker), V(nvidia-docker), V(shifter), V(singularity),
            V(podman), V(enroot).
        type: str
        default: docker
      image:
        description:
          - Image for C(image(...)), for example V(registry:5000/powerai/base:4.0.0) or
            V($LSB_CONTAINER_IMAGE) to let users choose it at submission.
        type: str
      options:
        description:
          - C(docker run) options for C(options(...)). An item may hold several words
            (V(--volume /etc/passwd:/etc/passwd:ro)); items are compared word by word.
          - Every word that starts with none of C(-), C(@), C($) must be the value of the flag just before it; a path with
            a blank is refused, as LSF would pass its parts to docker as separate arguments.
          - Items starting with C(@) are options scripts, see O(container.options_scripts).
        type: list
        elements: str
        default: []
      options_scripts:
        description:
          - Paths of scripts whose output LSF adds to the options at run time (written as C(@/path)). They
            must be on a path every execution host can read.
        type: list
        elements: str
        default: []
      clauses:
        description:
          - Further C(keyword(argument)) clauses as keyword and argument, for example key V(starter) with
            value V(root) for the legacy C(starter(root)), or C(container_io) and C(job_pre_post).
        type: dict
        default: {}
  exec_driver:
    description:
      - The profile's C(EXEC_DRIVER), structured. Left as it is when omitted.
      - Rendered as C(context[user(...)] starter[...] controller[...] monitor[...]).
    type: dict
    suboptions:
      user:
        description:
          - User the driver scripts run as (C(context[user(...)])); it must be allowed to run docker.
        type: str
      starter:
        description:
          - Path of the starter script, normally C($LSF_SERVERDIR/docker-starter.py).
        type: str
      controller:
        description:
          - Path of the controller script, normally C($LSF_SERVERDIR/docker-control.py).
        type: str
      monitor:
        description:
          - Path of the monitor script, normally C($LSF_SERVERDIR/docker-monitor.py).
        type: str
  parameters:
    description:
      - Other C(KEY = value) entries of the profile (C(RES_REQ), C(GPU_REQ), C(RUNLIMIT)...). Keys are
        written in upper case and matched case-insensitively.
      - A V(null) value removes the key; V(true)/V(false) are written as C(Y)/C(N).
      - Keys not named here are left as they are, unless O(exclusive=true).
    type: dict
    default: {}
  exclusive:
    description:
      - Make the profile hold only the keys this task names (C(NAME), C(DESCRIPTION), C(CONTAINER),
        C(EXEC_DRIVER) and the O(parameters)); any other key found in it is removed and shown in the diff.
      - Use it when the task owns the whole profile, so that a key added by hand is reported as drift and
        taken out. Keys set under C(#if) (time-based configuration) are kept with a warning.
      - In O(profiles), an item's own C(exclusive) overrides this value.
    type: bool
    default: false
    version_added: 0.2.0
  profiles:
    description:
      - Many profiles in one task (one read, one write, one diff). Each item takes the options of the
        single-profile form. Mutually exclusive with O(name).
    type: list
    elements: dict
    suboptions:
      name:
        description: Name of the profile.
        type: str
        required: true
      state:
        description: V(present) or V(absent).
        type: str
        choices: [present, absent]
        default: present
      description:
        description: The profile's C(DESCRIPTION).
        type: str
      container:
        description: The profile's C(CONTAINER), as O(container).
        type: dict
      exec_driver:
        description: The profile's C(EXEC_DRIVER), as O(exec_driver).
        type: dict
      parameters:
        description: Other entries, as O(parameters).
        type: dict
      exclusive:
        description: As O(exclusive), for this profile; the top-level O(exclusive) when omitted.
        type: bool
        version_added: 0.2.0
  create:
    description:
      - Create the file when it does not exist. With V(false) a missing file is an error, except when
        every profile named is V(absent).
    type: bool
    default: false
notes:
  - A profile that is defined twice in the file cannot be edited (which one LSF uses is not documented);
    the task fails naming the lines.
  - IBM reserves some C(docker run) options for LSF (C(--user), C(--name), C(--cgroup-parent), C(-w),
    C(--ulimit)); they are written when asked for, with a warning. C(--ulimit memlock=...) is not warned
    about - LSF has no job limit for locked memory that it would override, and RDMA needs it raised.
  - LSF splits C(options(...)) at blanks and documents no quoting, so an option value with a blank (a mount
    path with a space) would reach C(docker run) as several arguments; such input is refused.
  - A value or key that would break the file (a line break, a control character, a parameter named
    C(Begin) or C(End)) is refused before the file is read, naming the profile and the key.
seealso:
  - name: lsb.applications reference
    description: IBM Spectrum LSF 10.1 configuration reference.
    link: https://www.ibm.com/docs/en/spectrum-lsf/10.1.0?topic=files-lsbapplications
"""

EXAMPLES = r"""
- name: A Docker application profile for GPU jobs
  hpc.gpu_containers.lsf_application:
    path: /opt/lsf/conf/lsbatch/cluster1/configdir/lsb.applications
    name: pytorch
    description: PyTorch in Docker
    container:
      runtime: docker
      image: registry.cluster:5000/nvidia/pytorch:24.01-py3
      options:
        - --rm
        - --net=host
        - --ipc=host
        - --volume /etc/passwd:/etc/passwd:ro
        - --volume /etc/group:/etc/group:ro
      options_scripts:
        - /shared/lsf/docker-options.sh
    exec_driver:
      user: lsfadmin
      starter: /opt/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-starter.py
      controller: /opt/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-control.py
      monitor: /opt/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-monitor.py
    parameters:
      RES_REQ: select[docker]
    # keys added to the profile by hand are drift: removed, and shown in --diff
    exclusive: true
  notify: Reconfigure mbatchd

- name: Many profiles in one pass; drop an old one
  hpc.gpu_containers.lsf_application:
    path: /opt/lsf/conf/lsbatch/cluster1/configdir/lsb.applications
    backup: true
    profiles:
      - name: docker_user_image
        description: Image chosen at submission with LSB_CONTAINER_IMAGE
        container:
          image: $LSB_CONTAINER_IMAGE
          options: [--rm]
      - name: powerai_legacy
        state: absent
"""

RETURN = r"""
changed_profiles:
  description: Names of the profiles that were (or in check mode would be) added, changed or removed.
  returned: always
  type: list
  elements: str
  sample: [pytorch]
profiles:
  description: Names of all profiles in the file after the task, in file order.
  returned: success
  type: list
  elements: str
  sample: [normal, pytorch]
backup_file:
  description: Name of the backup file.
  returned: when O(backup=true) and the file changed
  type: str
  sample: /opt/lsf/conf/lsbatch/cluster1/configdir/lsb.applications.1234.2026-01-01@10:00:00~
diff:
  description: Before and after text of the file.
  returned: when run with --diff
  type: dict
  sample: {before: "Begin Application\n...", after: "Begin Application\n..."}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_applications import (
    ApplicationsFile,
    LsfSyntaxError,
    apply_profiles,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, exit_edit, input_errors, model_errors

_CONTAINER_OPTIONS = dict(
    runtime=dict(type="str", default="docker"),
    image=dict(type="str"),
    options=dict(type="list", elements="str", default=[]),
    options_scripts=dict(type="list", elements="str", default=[]),
    clauses=dict(type="dict", default={}),
)
_EXEC_DRIVER_OPTIONS = dict(
    user=dict(type="str"),
    starter=dict(type="str"),
    controller=dict(type="str"),
    monitor=dict(type="str"),
)


def _requests(params):
    """The profile requests in the model's form, from either parameter shape."""
    if params["profiles"] is None:
        items = [{key: params[key] for key in ("name", "state", "description", "container", "exec_driver",
                                               "parameters", "exclusive")}]
    else:
        items = params["profiles"]
    requests = []
    for item in items:
        request = dict(item)
        if request.get("exclusive") is None:
            request["exclusive"] = params["exclusive"]
        container = request.get("container")
        if container is not None:
            # nested dicts of list items are not defaulted by AnsibleModule
            unknown = sorted(set(container) - set(_CONTAINER_OPTIONS))
            if unknown:
                raise ValueError("profile %s: unknown container option(s) %s" % (request.get("name"), ", ".join(unknown)))
        exec_driver = request.get("exec_driver")
        if exec_driver is not None:
            unknown = sorted(set(exec_driver) - set(_EXEC_DRIVER_OPTIONS))
            if unknown:
                raise ValueError("profile %s: unknown exec_driver option(s) %s" % (request.get("name"), ", ".join(unknown)))
        requests.append(request)
    return requests


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True, aliases=["dest"]),
            name=dict(type="str"),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            description=dict(type="str"),
            container=dict(type="dict", options=_CONTAINER_OPTIONS),
            exec_driver=dict(type="dict", options=_EXEC_DRIVER_OPTIONS),
            parameters=dict(type="dict", default={}),
            exclusive=dict(type="bool", default=False),
            profiles=dict(type="list", elements="dict", options=dict(
                name=dict(type="str", required=True),
                state=dict(type="str", choices=["present", "absent"], default="present"),
                description=dict(type="str"),
                container=dict(type="dict"),
                exec_driver=dict(type="dict"),
                parameters=dict(type="dict"),
                exclusive=dict(type="bool"),
            )),
            create=dict(type="bool", default=False),
            **FILE_EDIT_ARGS,
        ),
        mutually_exclusive=[["name", "profiles"]],
        required_one_of=[["name", "profiles"]],
        supports_check_mode=True,
    )
    path = module.params["path"]
    with input_errors(module, path):
        requests = _requests(module.params)

    outcome = {"changed_profiles": [], "profiles": []}
    if all(request.get("state") == "absent" for request in requests) and not os.path.lexists(path):
        module.exit_json(changed=False, **outcome)  # nothing to remove from a file that is not there

    def compute(text):
        with model_errors(path, LsfSyntaxError):
            new_text, changed, warnings = apply_profiles(text or "", requests)
            try:
                outcome["profiles"] = ApplicationsFile(new_text).names() if changed else None
            except LsfSyntaxError as err:
                # a line number of the edited text would point at the wrong line of the file
                raise ValueError("internal error, the edited text would not parse (%s); nothing written" % err)
        outcome["changed_profiles"] = changed
        if outcome["profiles"] is None:
            outcome["profiles"] = ApplicationsFile(text or "").names()
        if text is None and not changed:
            new_text = None  # nothing to write: do not create an empty file
        return new_text, ["%s:%s" % (path, warning[len("line "):]) if warning.startswith("line ") else
                          "%s: %s" % (path, warning) for warning in warnings]

    exit_edit(module, path, compute, outcome, create=module.params["create"])


if __name__ == "__main__":
    main()
