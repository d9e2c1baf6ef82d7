#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: slurm_node_state
short_description: Drain a Slurm compute node, wait until its jobs have ended, resume it
version_added: 0.3.0
description:
  - Reads the node's state with C(scontrol --oneliner show node) and, for the wanted O(state), drains it
    (C(scontrol update NodeName=<node> State=DRAIN Reason=...)) or resumes it (C(State=RESUME)). It runs where
    the Slurm client commands and the cluster's configuration are (a compute node itself, or the controller) as
    root or a Slurm administrator.
  - "O(state=drain) drains the node with the reason C(<owner>: <reason>), so that Slurm starts no new job on it.
    A node drained already is left as it is, with its reason, whoever drained it (a second drain would replace
    an operator's reason)."
  - O(state=drained) drains it the same way, then waits until no job of the node is running, suspended,
    completing, configuring, stopped, signalled or staging out (C(squeue --nodelist)), asking every O(poll)
    seconds for at most O(timeout) seconds. What happens at the timeout is O(on_timeout).
  - "O(state=resume) resumes the node only when its reason starts with C(<owner>:), that is when this module
    drained it; a node an operator drained for another reason stays drained."
  - O(state=query) only reads the state.
  - A long wait can be cut into slices (O(return_after), O(since)), as with M(hpc.gpu_containers.lsf_host_state);
    the call returns while jobs still run, with RV(waiting=true) and a RV(progress) line for the
    C(hpc.gpu_containers.progress) callback.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  node:
    description:
      - The Slurm node name (C(NodeName)). The short host name of the machine the module runs on when omitted.
    type: str
  state:
    description:
      - V(drain), V(drained), V(resume) or V(query) (read only), as described above.
    type: str
    choices: [drain, drained, resume, query]
    default: query
  reason:
    description:
      - "Why the node is drained; the reason is C(<owner>: <reason>) on one line."
      - Required with O(state=drain) and O(state=drained).
    type: str
  on_timeout:
    description:
      - V(fail) fails the host when jobs still run at the timeout; the node stays drained, so that no new job
        starts there, and the run names the jobs.
      - V(proceed) returns with RV(timed_out=true) and the jobs still running, and the caller goes on.
    type: str
    choices: [fail, proceed]
    default: fail
extends_documentation_fragment:
  - hpc.gpu_containers.host_drain
attributes:
  check_mode:
    support: full
    description: Reads the state (C(scontrol show node), C(squeue)), predicts the change, and never updates the
      node or waits.
  diff_mode:
    support: none
    description: Nothing is written to a file.
  idempotent:
    support: full
    description: A node already in the wanted state is left alone and RV(ignore:changed=false).
  platform:
    support: full
    platforms: posix
    description: A host with the Slurm client commands and the cluster's configuration.
notes:
  - Draining a node stops new jobs only; running jobs go on (O(state=drained) waits for them).
  - A node an operator drained keeps its own reason; this module never replaces it.
  - Tested against Slurm 22.05 (Debian's C(slurm-wlm)).
seealso:
  - module: hpc.gpu_containers.lsf_host_state
"""

EXAMPLES = r"""
- name: Drain node01 and wait up to an hour for its jobs to end
  hpc.gpu_containers.slurm_node_state:
    node: node01
    state: drained
    reason: Docker engine upgrade
    timeout: 3600

- name: Resume node01 if this collection drained it
  hpc.gpu_containers.slurm_node_state:
    node: node01
    state: resume
"""

RETURN = r"""
node:
  description: The Slurm node name.
  returned: always
  type: str
  sample: node01
state:
  description: The node's C(State) after the module; predicted in check mode.
  returned: always
  type: str
  sample: MIXED+DRAIN
reason:
  description: The node's reason after the module (Slurm adds C([user@time])); predicted in check mode.
  returned: always
  type: str
  sample: "hpc.gpu_containers: restart of dockerd (daemon.json: live-restore) [root@2026-11-27T04:19:59]"
drained:
  description: The node has the C(DRAIN) flag after the module (drained, or draining while jobs run).
  returned: always
  type: bool
  sample: true
owned:
  description: The node is drained with a reason of O(owner) after the module (the module may resume it).
  returned: always
  type: bool
  sample: true
previous:
  description: State and reason before the module.
  returned: always
  type: dict
  sample: {state: IDLE, reason: ""}
note:
  description: Why the module did what it did.
  returned: always
  type: str
  sample: drained already by an operator (operator - fan replacement [root@2026-11-27T04:20:00]); left as it is
jobs:
  description: Ids of the node's jobs when the module returned (O(state=drained)).
  returned: always
  type: list
  elements: str
  sample: ["1201", "1202_3"]
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
waiting:
  description: Jobs still run and the timeout has not passed; the call returned because of O(return_after).
  returned: always
  type: bool
  sample: false
progress:
  description: One line on the wait - the node, the jobs left and how long it has waited of O(timeout).
  returned: always
  type: str
  sample: "node01: 1 job(s) left (1201); waited 1m05s of 60m00s"
commands:
  description: The C(scontrol update) commands run (or, in check mode, that would run).
  returned: always
  type: list
  elements: list
  sample: [[scontrol, update, NodeName=node01, State=DRAIN, "Reason=hpc.gpu_containers: restart of dockerd"]]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils._host_drain import WAIT_OPTIONS
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_drain import Scheduler, run_drain
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_node_state import (
    DRAIN,
    JOB_STATES,
    decide,
    is_drained,
    parse_job_ids,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_nodes import parse_nodes


class _Slurm(Scheduler):
    """The node's state, its jobs and its updates, through scontrol and squeue."""

    NAME, STATE, MARK, CLOSED, HELD = "node", "state", "reason", "drained", "the node stays drained (%s)"

    def __init__(self, module, node):
        super().__init__(module, node)
        self.scontrol = module.get_bin_path("scontrol", required=True)
        self.squeue = module.get_bin_path("squeue", required=True)

    def _run(self, argv, what):
        rc, out, err = self.module.run_command(argv)
        if rc != 0:
            self.fail("%s failed (rc=%d): %s" % (what, rc, (err or out).strip()))
        return out

    def state(self):
        out = self._run([self.scontrol, "--oneliner", "show", "node", self.name], "scontrol show node %s" % self.name)
        for node in parse_nodes(out):
            if node["name"] == self.name:
                return node
        return self.fail("scontrol show node %s does not list the node: %s" % (self.name, out.strip()[-500:]))

    def jobs(self):
        return parse_job_ids(self._run(
            [self.squeue, "--noheader", "--nodelist=%s" % self.name, "--states=%s" % ",".join(JOB_STATES),
             "--format=%i"], "squeue --nodelist=%s" % self.name))

    def decide(self, wanted, before, owner):
        return decide(wanted, before, owner)

    def argv(self, action, mark):
        argv = ["scontrol", "update", "NodeName=%s" % self.name, "State=%s" % action]
        return argv + ["Reason=%s" % mark] if action == DRAIN else argv

    def predict(self, before, action, mark):
        base = (before["state"] or "IDLE").split("+", 1)[0]
        return dict(before, state=base + "+" + DRAIN if action == DRAIN else base,
                    reason=mark if action == DRAIN else None)

    def apply(self, action, argv):
        self._run([self.scontrol] + argv[1:], " ".join(argv))
        after = self.state()
        if is_drained(after) != (action == DRAIN):
            self.fail("%s ran, but scontrol shows the node %s" % (" ".join(argv), after["state"]), commands=[argv])
        return after

    def is_closed(self, state):
        return is_drained(state)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node=dict(type="str"),
            state=dict(type="str", default="query", choices=["drain", "drained", "resume", "query"]),
            reason=dict(type="str"),
            **WAIT_OPTIONS,
        ),
        required_if=[("state", "drain", ["reason"]), ("state", "drained", ["reason"])],
        supports_check_mode=True,
    )
    run_drain(module, _Slurm)


if __name__ == "__main__":
    main()
