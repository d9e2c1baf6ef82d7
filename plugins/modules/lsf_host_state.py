#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: lsf_host_state
short_description: Close an IBM Spectrum LSF host, wait until its jobs have ended, reopen it
version_added: 0.2.0
description:
  - Reads the host's batch state with C(bhosts -l) and, for the wanted O(state), runs C(badmin hclose) or
    C(badmin hopen) on it. It runs where the LSF commands are (any LSF server host; usually the host itself).
  - "O(state=closed) closes the host with the comment C(<owner>: <reason>) (C(badmin hclose -C)), so that LSF
    dispatches no new job to it. A host an administrator closed already (C(closed_Adm)) is left as it is, with
    its comment, whoever closed it."
  - O(state=drained) closes it the same way, then waits until no job holds processes on it (C(bjobs -u all -w
    -m <host>) lists none in C(RUN), C(PROV), C(SSUSP), C(USUSP), C(WAIT) or C(UNKWN)), asking every O(poll)
    seconds for at most O(timeout) seconds. What happens at the timeout is O(on_timeout).
  - "O(state=open) reopens the host (C(badmin hopen)) only when its close comment starts with C(<owner>:), that
    is when this module closed it; a host an administrator closed for another reason stays closed."
  - O(state=query) only reads the state.
  - A long wait can be cut into slices (O(return_after), O(since)) - the call returns while jobs still run, with
    RV(waiting=true) and a RV(progress) line that names the host, the jobs left and how long it has waited; the
    caller calls again (an C(until) loop) and the C(hpc.gpu_containers.progress) callback prints each line.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  host:
    description:
      - The LSF host name. The short host name of the machine the module runs on when omitted.
    type: str
  state:
    description:
      - V(closed), V(drained), V(open) or V(query) (read only), as described above.
    type: str
    choices: [closed, drained, open, query]
    default: query
  reason:
    description:
      - "Why the host is closed or opened; the comment is C(<owner>: <reason>) on one line, at most 512 characters."
      - Required with O(state=closed) and O(state=drained).
    type: str
  on_timeout:
    description:
      - V(fail) fails the host when jobs still run at the timeout; it stays closed (with the comment), so that no
        new job lands there, and the run names the jobs.
      - V(proceed) returns with RV(timed_out=true) and the jobs still running, and the caller goes on (a Docker
        restart then relies on live restore to keep the jobs' containers running).
    type: str
    choices: [fail, proceed]
    default: fail
  profile:
    description:
      - C(profile.lsf) to source before the LSF commands. Without it the login environment (C(/etc/profile.d))
        must put them on the C(PATH), as it does on an LSF host.
    type: path
extends_documentation_fragment:
  - hpc.gpu_containers.host_drain
attributes:
  check_mode:
    support: full
    description: Reads the state (C(bhosts), C(bjobs)), predicts the change, and never runs C(badmin) or waits.
  diff_mode:
    support: none
    description: Nothing is written to a file.
  idempotent:
    support: full
    description: A host already in the wanted state is left alone and RV(ignore:changed=false).
  platform:
    support: full
    platforms: posix
    description: A host with the LSF commands (an LSF server or client host).
notes:
  - C(badmin hclose) and C(badmin hopen) need root or an LSF administrator.
  - Closing a host stops new dispatches only; running jobs go on (draining waits for them).
  - A host an administrator closed keeps its own comment; this module never overwrites it.
seealso:
  - module: hpc.gpu_containers.container_verify
"""

EXAMPLES = r"""
- name: Close gpu01 and wait up to an hour for its jobs to end
  hpc.gpu_containers.lsf_host_state:
    host: gpu01
    state: drained
    reason: Docker engine upgrade
    timeout: 3600

- name: Reopen gpu01 if this collection closed it
  hpc.gpu_containers.lsf_host_state:
    host: gpu01
    state: open
    reason: verified after the Docker engine upgrade

- name: Read gpu01's batch state
  hpc.gpu_containers.lsf_host_state:
    host: gpu01
  register: gpu01_state
"""

RETURN = r"""
host:
  description: The LSF host name.
  returned: always
  type: str
  sample: gpu01
status:
  description: The host's status after the module (C(ok), C(closed_Adm), C(closed_Full) ...); predicted in check mode.
  returned: always
  type: str
  sample: closed_Adm
comment:
  description: The administrator comment after the module; predicted in check mode.
  returned: always
  type: str
  sample: "hpc.gpu_containers: restart of dockerd (daemon.json: log-opts.max-file)"
closed:
  description: The host is closed by an administrator (C(closed_Adm)) after the module.
  returned: always
  type: bool
  sample: true
owned:
  description: The host is closed with a comment of O(owner) after the module (the module may reopen it).
  returned: always
  type: bool
  sample: true
previous:
  description: Status and comment before the module.
  returned: always
  type: dict
  sample: {status: ok, comment: ""}
note:
  description: Why the module did what it did.
  returned: always
  type: str
  sample: closed already by an administrator (operator - fan replacement); left as it is
jobs:
  description: Ids of the jobs that hold processes on the host when the module returned (O(state=drained)).
  returned: always
  type: list
  elements: int
  sample: []
waited:
  description: Seconds O(state=drained) waited for the jobs.
  returned: always
  type: float
  sample: 42.1
timed_out:
  description: Jobs were still running at the timeout (O(on_timeout=proceed)).
  returned: always
  type: bool
  sample: false
since:
  description: Unix time (on the host the module ran on) when the wait began - O(since), or the start of this call.
  returned: always
  type: float
  sample: 1764150000.5
  version_added: 0.2.0
waiting:
  description: Jobs still run and the timeout has not passed; the call returned because of O(return_after).
  returned: always
  type: bool
  sample: false
  version_added: 0.2.0
progress:
  description: One line on the wait - the host, the jobs left and how long it has waited of O(timeout).
  returned: always
  type: str
  sample: "gpu01: 2 job(s) left (1201, 1202); waited 1m05s of 60m00s"
  version_added: 0.2.0
commands:
  description: The C(badmin) commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
  sample: [[badmin, hclose, -C, "hpc.gpu_containers: restart of dockerd", gpu01]]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._host_drain import WAIT_OPTIONS
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_command import LsfCommandError, LsfCommands, failure
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_host_state import (
    ADMIN_CLOSED,
    LsfOutputError,
    close_comment,
    decide,
    no_jobs_message,
    parse_bhosts_long,
    parse_bjobs,
    started_jobs_on,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_drain import Scheduler, run_drain


class _Lsf(Scheduler):
    """The host's batch state, its jobs and its close and open, through bhosts, bjobs and badmin."""

    NAME, STATE, MARK, CLOSED, HELD = "host", "status", "comment", "closed", "the host stays closed (%s)"
    mark = staticmethod(close_comment)

    def __init__(self, module, host):
        super().__init__(module, host)
        # In a login shell, after sourcing the given profile.lsf when there is one.
        self.lsf = LsfCommands(module.run_command, profile=module.params["profile"])

    def state(self):
        rc, out, err = self.lsf.run("bhosts", "-l", self.name)
        if rc != 0:
            self.fail(failure(["bhosts", "-l", self.name], rc, out, err))
        try:
            hosts = parse_bhosts_long(out)
        except LsfOutputError as exc:
            self.fail(str(exc))
        if self.name not in hosts:
            self.fail("bhosts -l %s does not list the host: %s" % (self.name, (out or err).strip()[-500:]))
        return hosts[self.name]

    def jobs(self):
        rc, out, err = self.lsf.run("bjobs", "-u", "all", "-w", "-m", self.name)
        if rc != 0 and not no_jobs_message(out + err):
            self.fail(failure(["bjobs", "-u", "all", "-w", "-m", self.name], rc, out, err))
        try:
            return [job["job"] for job in started_jobs_on(parse_bjobs(out), self.name)]
        except LsfOutputError as exc:
            self.fail(str(exc))

    def decide(self, wanted, before, owner):
        return decide(wanted, before["status"], before["comment"], owner)

    def argv(self, action, mark):
        return ["badmin", action, "-C", mark, self.name]

    def predict(self, before, action, mark):
        return {"status": ADMIN_CLOSED if action == "hclose" else "ok", "comment": mark}

    def apply(self, action, argv):
        try:
            self.lsf.check(*argv)
        except LsfCommandError as exc:
            self.fail(str(exc))
        after = self.state()
        if action == "hclose" and after["status"] != ADMIN_CLOSED:
            self.fail("badmin hclose ran, but bhosts shows the host %s" % after["status"], commands=[argv])
        return after

    def is_closed(self, state):
        return state["status"] == ADMIN_CLOSED


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str"),
            state=dict(type="str", default="query", choices=["closed", "drained", "open", "query"]),
            reason=dict(type="str"),
            profile=dict(type="path"),
            **WAIT_OPTIONS,
        ),
        required_if=[("state", "closed", ["reason"]), ("state", "drained", ["reason"])],
        supports_check_mode=True,
    )
    run_drain(module, _Lsf)


if __name__ == "__main__":
    main()
