#!/usr/bin/env python3
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one rolling step did on this node of the volclava cluster, as one JSON object on stdout.

    collect_node.py SINCE [JOB_OUTPUT]

Run on every node by step.yml (ansible.builtin.script) after a step. SINCE: the step's start (Unix seconds).

* lsf_name: the node's short host name (its name in lsf.cluster.volclava);
* docker_started: when dockerd last started (systemd's ActiveEnterTimestamp), Unix seconds;
* verify_starts: when verification containers (label hpc.gpu_containers.verify) started since SINCE;
* events: on the master (where mbatchd keeps it), the records of volclava's event log (lsb.events) since SINCE
  that say who closed or opened a host and when a job ended: HOST_CTRL and JOB_STATUS;
* hosts: every host's status and admin comment, from the real `bhosts -l`;
* job_output: the file JOB_OUTPUT, when given and present on this node.
"""

import datetime
import json
import os
import shlex
import socket
import subprocess
import sys
import time

EVENT_LOG = "/opt/volclava/work/logdir/lsb.events"
# lsb.events' HOST_CTRL opCode (lsbatch.h: HOST_OPEN 1, HOST_CLOSE 2).
HOST_OPS = {"1": "open", "2": "close"}


def run(argv):
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def docker_started():
    value = run(["systemctl", "show", "docker", "--property=ActiveEnterTimestamp", "--timestamp=us+utc",
                 "--value"]).stdout.strip()
    # 'Sat 2026-11-28 23:10:00.123456 UTC'
    stamp = " ".join(value.split()[1:3])
    if not stamp:
        return None
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()


def verify_starts(since):
    out = run(["docker", "events", "--since", "%d" % since, "--until", "%d" % (time.time() + 1),
               "--filter", "label=hpc.gpu_containers.verify", "--filter", "event=start", "--format", "{{.TimeNano}}"])
    return sorted(int(word) / 1e9 for word in out.stdout.split())


def events(since):
    """HOST_CTRL: "HOST_CTRL" "<version>" <time> <opCode> "<host>" <?> "<user>" "<comment>";
    JOB_STATUS: "JOB_STATUS" "<version>" <time> <jobId> <jStatus> ... (lsb.events(5))."""
    found = []
    if not os.path.exists(EVENT_LOG):
        return found
    with open(EVENT_LOG, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if not line.startswith(('"HOST_CTRL"', '"JOB_STATUS"')):
                continue
            words = shlex.split(line)
            if int(words[2]) < int(since):
                continue
            if words[0] == "HOST_CTRL":
                found.append({"type": "HOST_CTRL", "time": int(words[2]), "op": HOST_OPS.get(words[3], words[3]),
                              "host": words[4], "user": words[6], "comment": words[7] if len(words) > 7 else ""})
            else:
                found.append({"type": "JOB_STATUS", "time": int(words[2]), "job": int(words[3]),
                              "status": int(words[4])})
    return found


def hosts():
    """bhosts -l: per host "HOST  <name>", a STATUS header, the status row, ... "ADMIN ACTION COMMENT:  <text>"."""
    out = run(["bash", "-lc", "bhosts -l"]).stdout.splitlines()
    states, name = {}, None
    for number, line in enumerate(out):
        if line.startswith("HOST "):
            name = line.split()[1]
            states[name] = {"status": None, "comment": ""}
        elif name and line.startswith("STATUS ") and number + 1 < len(out):
            states[name]["status"] = out[number + 1].split()[0]
        elif name and line.startswith("ADMIN ACTION COMMENT:"):
            states[name]["comment"] = line.split(":", 1)[1].strip()
    return states


def read_text(path):
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def main(argv):
    since = float(argv[1])
    job_output = argv[2] if len(argv) > 2 else ""
    out = {
        "lsf_name": socket.gethostname().split(".")[0],
        "docker_started": docker_started(),
        "verify_starts": verify_starts(since),
        "events": events(since),
        "hosts": hosts(),
        "job_output": read_text(job_output),
    }
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
