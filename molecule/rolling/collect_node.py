#!/usr/bin/env python3
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What one step of the rolling scenario did on this node, as one JSON object on stdout.

    collect_node.py LOG_START SINCE [JOB [JOB_OUTPUT]]

Run on every node by side_effect.yml (ansible.builtin.script) after a step:

* calls: the LSF stub log entries of the step (those after line LOG_START);
* docker_started: when dockerd last started (systemd's ActiveEnterTimestamp, microseconds, UTC);
* verify_starts: when verification containers (label hpc.gpu_containers.verify) started since
  SINCE (Unix seconds), in nanoseconds, from the engine's events;
* hosts: the LSF host states the stubs keep (badmin hclose/hopen), shared by every node;
* job, job_output: the record and the output file of batch job JOB, when given.
"""

import json
import os
import socket
import subprocess
import sys
import time

STUB_LOG = "/var/log/lsf-stub/calls.jsonl"
CLUSTER_STATE = "/usr/share/lsf/work/gpucluster/lsf-stub"


def read_json(path, default):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def main(argv):
    start, since = int(argv[1]), int(argv[2])
    job = argv[3] if len(argv) > 3 and argv[3] else None
    job_output = argv[4] if len(argv) > 4 and argv[4] else None
    calls = []
    if os.path.exists(STUB_LOG):
        with open(STUB_LOG, encoding="utf-8") as handle:
            lines = [line for line in handle.read().splitlines() if line.strip()]
        calls = [json.loads(line) for line in lines[start:]]
    started = subprocess.run(
        ["systemctl", "show", "docker", "--property=ActiveEnterTimestamp", "--timestamp=us+utc", "--value"],
        capture_output=True, text=True, check=False).stdout.strip()
    events = subprocess.run(
        ["docker", "events", "--since", str(since), "--until", str(int(time.time()) + 1),
         "--filter", "label=hpc.gpu_containers.verify", "--filter", "event=start", "--format", "{{.TimeNano}}"],
        capture_output=True, text=True, check=False)
    out = {
        "lsf_name": socket.gethostname().split(".")[0],
        "calls": calls,
        "docker_started": started,
        "verify_starts": sorted(int(word) for word in events.stdout.split()),
        "events_error": events.stderr.strip() if events.returncode else "",
        "hosts": read_json(os.path.join(CLUSTER_STATE, "hosts.json"), {}),
        "job": read_json(os.path.join(CLUSTER_STATE, "jobs", "%s.json" % job), None) if job else None,
        "job_output": None,
    }
    if job_output and os.path.exists(job_output):
        with open(job_output, encoding="utf-8", errors="replace") as handle:
            out["job_output"] = handle.read()
    sys.stdout.write(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
