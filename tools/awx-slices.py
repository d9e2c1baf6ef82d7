#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the nightly drift check the way AWX runs it with job slicing (docs/scale.md), and join the reports.

    tools/awx-slices.py -i INVENTORY --slices N --out DIR [--compare UNSLICED_DRIFT_JSON]
    tools/awx-slices.py -i INVENTORY --slices N --out DIR --converge

The jobs, each run with ansible-runner as AWX's execution nodes run a job (a private data directory, an
inventory script, the limit and extra variables of the job template), all at once:

- "lsf-master": the LSF master and the registry host, on the whole inventory (--limit lsf_master:registry);
- "slice<k>of<N>", k = 1..N: the job template with N job slices, --limit 'all:!lsf_master:!registry' and
  hpc_site_sliced=true, each on the inventory AWX gives slice k: the enabled hosts by name, every N-th from the
  k-th, every group cut down to them (a group left with no host, child or variable is left out, and every group
  is still a child of all), the variables of all and of the groups as they are, the host variables of the slice's
  hosts only (awx/main/models/inventory.py, Inventory.get_script_data).

Every job runs playbooks/drift.yml in check mode with diff and the drift_report callback, in the same
environment, as the slices of one job template share theirs: HPC_DRIFT_REPORT_DIR=DIR/reports/$JOB_ID, and
JOB_ID the job's own id, as AWX sets it (1 for the first job, 2 for the next, ...); then playbooks/drift_join.yml
joins DIR/reports/* into DIR/joined and removes the jobs' reports (hpc_drift_join_remove_src). With --converge,
every job runs playbooks/site.yml instead (no check mode, no report, nothing joined) and must exit 0. With
--compare, the joined report must have the hosts (each one's changes, diffs, failures and fast-path verdict), the
summary and the unreachable hosts of the unsliced run's drift.json given. Writes DIR/jobs.json (each job's
inventory hosts, limit, exit code and status; for a check, the hosts its report listed and those with drift).
Exits 0 when every job ended as it may (a check: 0 clean or 3 drift found; a converge: 0), the join ran and left
no report behind, and the comparison (if asked) found no difference; 1 otherwise, with what differs.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVICE_LIMIT = "lsf_master:registry"
SLICE_LIMIT = "all:!lsf_master:!registry"
# A drift check's exit codes that are not a failure of the job itself: clean, drift found.
DRIFT_CHECK_CODES = (0, 3)


def exported_inventory(inventory):
    """The inventory as AWX imports it: `ansible-inventory --list --export`, the variables of each group kept on the
    group and each host's own on the host."""
    out = subprocess.run(["ansible-inventory", "-i", inventory, "--list", "--export"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def awx_slice(data, number=1, count=1):
    """The inventory script's data of job slice ``number`` of ``count`` (1-based), from an exported inventory."""
    hostvars = data.get("_meta", {}).get("hostvars", {})
    groups = {name: value for name, value in data.items() if name not in ("_meta", "all")}
    # A group with neither hosts nor variables is only named among all's children; Ansible's own "ungrouped" is
    # no group in AWX (its hosts are all's).
    groups.update({name: {} for name in data.get("all", {}).get("children") or []
                   if name not in groups and name != "ungrouped"})
    every = set(hostvars)
    for value in [data.get("all", {})] + list(groups.values()):
        every.update(value.get("hosts") or [])
    hosts = sorted(every)
    if count > 1:
        hosts = hosts[number - 1::count]
    kept = set(hosts)
    out = {"all": {}}
    if data.get("all", {}).get("vars"):
        out["all"]["vars"] = data["all"]["vars"]
    grouped = set()
    names = []
    for name in sorted(groups):
        value = groups[name]
        info = {}
        members = [host for host in value.get("hosts") or [] if host in kept]
        if members:
            info["hosts"] = members
            grouped.update(members)
        if value.get("children"):
            info["children"] = list(value["children"])
        if value.get("vars"):
            info["vars"] = value["vars"]
        if info:
            out[name] = info
        names.append(name)
    out["all"]["hosts"] = [host for host in hosts if host not in grouped]
    if names:
        out["all"]["children"] = names
    out["_meta"] = {"hostvars": {host: hostvars.get(host, {}) for host in hosts}}
    return out


def inventory_script(data, path):
    """An executable inventory script that prints ``data`` for --list (and {} for --host), as AWX writes one."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("#!%s\nimport sys\nTEXT = %r\nprint(TEXT if '--list' in sys.argv else '{}')\n"
                     % (sys.executable, json.dumps(data, sort_keys=True)))
    os.chmod(path, stat.S_IRWXU)
    return path


def jobs_of(data, count):
    """(name, inventory data, limit, extra variables) of each job: the master's, then each slice's."""
    jobs = [("lsf-master", awx_slice(data), SERVICE_LIMIT, {})]
    for number in range(1, count + 1):
        jobs.append(("slice%dof%d" % (number, count), awx_slice(data, number, count), SLICE_LIMIT,
                     {"hpc_site_sliced": True}))
    return jobs


def report_of(directory):
    """The hosts a job's drift report lists, and those with drift."""
    try:
        with open(os.path.join(directory, "drift.json"), encoding="utf-8") as handle:
            hosts = json.load(handle)["hosts"]
    except OSError:
        return {"hosts": [], "drifted": []}
    return {"hosts": sorted(hosts), "drifted": sorted(host for host, entry in hosts.items() if entry["changed"])}


def run_jobs(jobs, out, converge=False):
    """Run every job at once with ansible-runner; each one's name, hosts, exit code, status and report."""
    import ansible_runner  # pylint: disable=import-outside-toplevel

    playbook, cmdline = ("site.yml", "--diff") if converge else ("drift.yml", "--check --diff")
    started = []
    for job_id, (name, data, limit, extravars) in enumerate(jobs, 1):
        private = os.path.join(out, name)
        os.makedirs(os.path.join(private, "inventory"), exist_ok=True)
        script = inventory_script(data, os.path.join(private, "inventory", "hosts"))
        envvars = {"JOB_ID": str(job_id)}
        if not converge:
            envvars.update(ANSIBLE_CALLBACKS_ENABLED="hpc.gpu_containers.drift_report",
                           HPC_DRIFT_REPORT_DIR=os.path.join(out, "reports", "$JOB_ID"))
        report = os.path.join(out, "reports", str(job_id))
        thread, runner = ansible_runner.run_async(
            private_data_dir=private, project_dir=ROOT, playbook=os.path.join(ROOT, "playbooks", playbook),
            inventory=script, limit=limit, extravars=extravars, envvars=envvars, cmdline=cmdline, quiet=True)
        started.append((name, data, limit, thread, runner, report))
    results = []
    for name, data, limit, thread, runner, report in started:
        thread.join()
        hosts = sorted(data["_meta"]["hostvars"])
        results.append({"job": name, "inventory_hosts": hosts, "limit": limit, "rc": runner.rc,
                        "status": runner.status, "report": report, **({} if converge else report_of(report)),
                        "stdout": os.path.join(runner.config.artifact_dir, "stdout")})
    return results


def join(pattern, dest):
    """playbooks/drift_join.yml over the report directories ``pattern`` matches, removed after; its exit code."""
    return subprocess.run(["ansible-playbook", os.path.join(ROOT, "playbooks", "drift_join.yml"),
                           "-e", json.dumps({"hpc_drift_join_src": [pattern], "hpc_drift_join_dest": dest,
                                             "hpc_drift_join_remove_src": True})],
                          check=False).returncode


def differences(joined, unsliced):
    """What differs between the joined report and the unsliced run's, as lines."""
    lines = []
    for key in ("summary", "unreachable", "drift"):
        if joined.get(key) != unsliced.get(key):
            lines.append("%s: joined %s, unsliced %s" % (key, json.dumps(joined.get(key), sort_keys=True),
                                                         json.dumps(unsliced.get(key), sort_keys=True)))
    for host in sorted(set(joined["hosts"]) | set(unsliced["hosts"])):
        mine, theirs = joined["hosts"].get(host), unsliced["hosts"].get(host)
        if mine != theirs:
            lines.append("host %s: joined %s, unsliced %s"
                         % (host, json.dumps(mine, sort_keys=True), json.dumps(theirs, sort_keys=True)))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-i", "--inventory", required=True)
    parser.add_argument("--slices", type=int, default=2)
    parser.add_argument("--out", required=True)
    parser.add_argument("--compare", help="the unsliced drift check's drift.json")
    parser.add_argument("--converge", action="store_true", help="run site.yml instead of the drift check")
    opts = parser.parse_args(argv)
    if opts.slices < 2:
        parser.error("--slices: at least 2")
    out = os.path.abspath(opts.out)
    os.makedirs(out, exist_ok=True)
    results = run_jobs(jobs_of(exported_inventory(opts.inventory), opts.slices), out, opts.converge)
    with open(os.path.join(out, "jobs.json"), "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=2, sort_keys=True)
    codes = (0,) if opts.converge else DRIFT_CHECK_CODES
    problems = ["job %s (inventory %s, --limit %s) ended %s, exit code %s: see %s"
                % (r["job"], ",".join(r["inventory_hosts"]), r["limit"], r["status"], r["rc"], r["stdout"])
                for r in results if r["rc"] not in codes]
    for r in results:
        print("awx-slices: %s: inventory %s, --limit %s: exit code %s" % (
            r["job"], ",".join(r["inventory_hosts"]), r["limit"], r["rc"]))
    if opts.converge:
        for problem in problems:
            print("awx-slices: FAILED: %s" % problem, file=sys.stderr)
        return 1 if problems else 0
    dest = os.path.join(out, "joined")
    rc = join(os.path.join(out, "reports", "*"), dest)
    if rc not in (0, 2) or not os.path.exists(os.path.join(dest, "drift.json")):
        problems.append("drift_join.yml exited %s and wrote no %s" % (rc, os.path.join(dest, "drift.json")))
    elif os.listdir(os.path.join(out, "reports")):
        problems.append("drift_join.yml left %s" % ", ".join(sorted(os.listdir(os.path.join(out, "reports")))))
    elif opts.compare:
        with open(os.path.join(dest, "drift.json"), encoding="utf-8") as handle:
            joined = json.load(handle)
        with open(opts.compare, encoding="utf-8") as handle:
            unsliced = json.load(handle)
        problems += ["the joined report differs from %s: %s" % (opts.compare, line)
                     for line in differences(joined, unsliced)]
    for problem in problems:
        print("awx-slices: FAILED: %s" % problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
