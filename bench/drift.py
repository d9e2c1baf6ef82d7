#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift rerun benchmark: the collection against the way the anchors do it.

    python bench/drift.py [--runs N] [--gpu-nodes K] [--forks F] [--keep]
                          [--out bench/results/drift.md]

Unattended, end to end:

1. two clusters of real nodes from the test-bed image (containers
   ``bench-ours-*`` and ``bench-base-*``, one head + K GPU nodes each, named
   head, gpu01 ... inside, as the LSF cluster file expects), prepared with
   molecule/default/prepare.yml (LSF tree, stubs, stand-in NVIDIA repository);
2. a fresh converge of each: ``playbooks/site.yml`` on the first,
   ``bench/baseline/site.yml`` on the second (timed, informational);
3. the end state compared: sha256 of lsf.conf, lsf.shared, lsf.cluster.*,
   lsb.applications and daemon.json, and the docker group's members, node by
   node, between the two clusters; the first cluster is then removed;
4. ``playbooks/site.yml`` over the baseline's cluster: it must leave the
   compared files alone (it adds what the baseline leaves out), and the
   baseline's ``blockinfile`` then still finds its markers, so neither side
   reports drift on the measured nodes;
5. on that cluster, N times alternately: the drift check
   (``playbooks/drift.yml --check --diff`` with the drift_report callback),
   the same limited to the baseline's scope (``--tags docker,nvidia,lsf``),
   and the baseline's ``--check --diff``;
6. ``bench/results/drift.md``: median wall time per run and per host, module
   executions per host, the ratio ours/baseline, per-task cost, controller
   CPU, the 1,000-node estimate, the machine, load, node and fork counts;
   the raw figures in .cache/bench-drift/raw.json (``--render-from`` rewrites
   the results file from it);
7. the nodes removed (unless --keep).

Per-task timing comes from a small callback written next to the run's
state (``bench_timing``): for every host and task, start to result, the
action, and whether a module ran on the node (controller-side actions such as
set_fact, assert, debug, include_* and meta do not count; every loop item
that runs counts once).

``--inventory DIR`` measures an existing, converged cluster instead (steps 1-4
and 7 are skipped); the inventory must have the site playbook's groups.
Without a Docker engine the script says so and exits 0 (``make bench``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = ROOT / ".cache" / "bench-drift"
IMAGE = "localhost/hpc-gpu-node:debian12"
LSF_CONF = "/usr/share/lsf/conf"
COMPARED_FILES = [
    LSF_CONF + "/lsf.conf",
    LSF_CONF + "/lsf.shared",
    LSF_CONF + "/lsf.cluster.gpucluster",
    LSF_CONF + "/lsbatch/gpucluster/configdir/lsb.applications",
    "/etc/docker/daemon.json",
]
# The scope the baseline covers: engine, NVIDIA runtime, LSF.
BASELINE_SCOPE_TAGS = "docker,nvidia,lsf"
CAPABILITIES = (
    "CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP LINUX_IMMUTABLE "
    "NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO "
    "SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE "
    "AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ"
).split()

TIMING_CALLBACK = '''
# Written by bench/drift.py: per host and task, start to result.
from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_timing
type: aggregate
short_description: per host and task timing for bench/drift.py
description: [Writes BENCH_TIMING_JSON.]
"""

# Actions that run on the controller only: no module reaches the node.
CONTROLLER_ACTIONS = {
    "set_fact", "assert", "debug", "fail", "meta", "include_tasks", "import_tasks",
    "include_role", "import_role", "include_vars", "add_host", "group_by", "set_stats",
    "ansible.builtin.set_fact", "ansible.builtin.assert", "ansible.builtin.debug",
    "ansible.builtin.fail", "ansible.builtin.meta", "ansible.builtin.include_tasks",
    "ansible.builtin.import_tasks", "ansible.builtin.include_role", "ansible.builtin.import_role",
    "ansible.builtin.include_vars", "ansible.builtin.add_host", "ansible.builtin.group_by",
    "ansible.builtin.set_stats", "validate_argument_spec", "ansible.builtin.validate_argument_spec",
}


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timing"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._start = {}
        self._records = []

    def _key(self, host, task):
        return (host, task._uuid)

    def v2_runner_on_start(self, host, task):
        self._start[self._key(host.get_name(), task)] = time.monotonic()

    def _done(self, result, status):
        host = result._host.get_name()
        task = result._task
        began = self._start.pop(self._key(host, task), None)
        duration = time.monotonic() - began if began is not None else 0.0
        res = result._result
        action = task.action
        if status == "skipped" or action in CONTROLLER_ACTIONS:
            runs = 0
        elif isinstance(res.get("results"), list):
            runs = sum(1 for item in res["results"] if not item.get("skipped"))
        else:
            runs = 1
        role = task._role.get_name() if task._role else ""
        self._records.append({
            "host": host, "task": task.get_name(), "role": role, "action": action,
            "status": status, "changed": bool(res.get("changed")), "runs": runs,
            "duration": round(duration, 4), "delegated": bool(task.delegate_to),
        })

    def v2_runner_on_ok(self, result):
        self._done(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._done(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._done(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._done(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("BENCH_TIMING_JSON")
        if path:
            with open(path, "w") as out:
                json.dump(self._records, out)
'''


def log(msg):
    print("drift-bench: %s" % msg, flush=True)


def run(argv, check=True, **kwargs):
    return subprocess.run(argv, check=check, text=True, **kwargs)


def docker_ok():
    return subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, check=False).returncode == 0


# --------------------------------------------------------------------------
# Nodes
# --------------------------------------------------------------------------
class Cluster:
    """A head node and K GPU nodes, as containers <prefix><name>."""

    def __init__(self, label, gpu_nodes, image):
        self.label = label
        self.prefix = "bench-%s-" % label
        self.network = "bench-%s" % label
        self.image = image
        self.nodes = ["head"] + ["gpu%02d" % i for i in range(1, gpu_nodes + 1)]
        self.inventory = STATE / label / "inventory"
        # LSF_TOP shared by the nodes, as in the molecule scenario and on real clusters.
        self.lsf_volume = "bench-%s-lsf-top" % label

    def container(self, node):
        return self.prefix + node

    def groups(self, node):
        if node == "head":
            return ["lsf_master", "registry", "docker_hosts"]
        return ["gpu_nodes", "docker_hosts"]

    def up(self):
        if run(["docker", "network", "inspect", self.network], check=False,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            run(["docker", "network", "create", self.network], stdout=subprocess.DEVNULL)
        caps = [arg for cap in CAPABILITIES for arg in ("--cap-add", cap)]
        for node in self.nodes:
            name = self.container(node)
            # Options as molecule/default/molecule.yml (molecule/README.md).
            run(["docker", "run", "-d", "--name", name, "--hostname", node,
                 "--network", self.network, "--network-alias", node, *caps,
                 "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                 "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
                 "-v", "/var/lib/docker", "-v", "%s:/usr/share/lsf" % self.lsf_volume,
                 "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
                 "--stop-signal", "SIGRTMIN+3", "--label", "hpc.gpu_containers.bench=drift",
                 self.image, "/lib/systemd/systemd"], stdout=subprocess.DEVNULL)
        self.write_inventory()

    def wait_booted(self):
        """Wait for systemd in every node: a module unpacked in /tmp while
        systemd-tmpfiles still runs at boot can lose its files."""
        deadline = time.monotonic() + 300
        for node in self.nodes:
            # Under load systemd may not even have started when docker run returns.
            while True:
                state = self.exec_out(node, "systemctl", "is-system-running", "--wait").strip()
                if state in ("running", "degraded"):
                    break
                if time.monotonic() > deadline:
                    raise SystemExit("%s did not boot (systemd: %s)" % (self.container(node), state or "not up"))
                time.sleep(1)

    def write_inventory(self):
        self.inventory.mkdir(parents=True, exist_ok=True)
        lines = ["all:", "  vars:", "    ansible_connection: community.docker.docker", "  children:"]
        for group in ["lsf_master", "registry", "docker_hosts", "gpu_nodes"]:
            lines += ["    %s:" % group, "      hosts:"]
            for node in self.nodes:
                if group in self.groups(node):
                    lines.append("        %s: {ansible_host: %s}" % (node, self.container(node)))
        (self.inventory / "hosts.yml").write_text("\n".join(lines) + "\n")
        link = self.inventory / "group_vars"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(ROOT / "molecule" / "default" / "group_vars")

    def down(self):
        names = [self.container(n) for n in self.nodes]
        run(["docker", "rm", "-f", "-v", *names], check=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run(["docker", "network", "rm", self.network], check=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run(["docker", "volume", "rm", self.lsf_volume], check=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def exec_out(self, node, *argv):
        proc = run(["docker", "exec", self.container(node), *argv], check=False,
                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return proc.stdout

    def end_state(self):
        """Per node: sha256 of the compared files, and the docker group."""
        state = {}
        for node in self.nodes:
            entry = {}
            for path in COMPARED_FILES:
                proc = subprocess.run(["docker", "exec", self.container(node), "cat", path],
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
                entry[path] = hashlib.sha256(proc.stdout).hexdigest()[:16] if proc.returncode == 0 else "absent"
                if path.endswith("lsb.applications") and proc.returncode == 0:
                    # The baseline's blockinfile adds two marker comment lines; the rest must be equal.
                    kept = b"".join(line for line in proc.stdout.splitlines(True)
                                    if not line.startswith((b"# BEGIN Docker application profiles",
                                                            b"# END Docker application profiles")))
                    entry["lsb.applications without blockinfile markers"] = hashlib.sha256(kept).hexdigest()[:16]
            entry["docker group"] = self.exec_out(node, "getent", "group", "docker").strip().rsplit(":", maxsplit=1)[-1]
            state[node] = entry
        return state


# --------------------------------------------------------------------------
# Ansible runs
# --------------------------------------------------------------------------
def ansible_env(forks):
    env = dict(os.environ)
    collections = STATE / "collections"
    (collections / "ansible_collections" / "hpc").mkdir(parents=True, exist_ok=True)
    link = collections / "ansible_collections" / "hpc" / "gpu_containers"
    if not link.is_symlink():
        link.symlink_to(ROOT)
    plugins = STATE / "callback_plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    (plugins / "bench_timing.py").write_text(TIMING_CALLBACK)
    venv_bin = str(Path(sys.executable).parent)
    env.update({
        "PATH": venv_bin + os.pathsep + env.get("PATH", ""),
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "ANSIBLE_CALLBACK_PLUGINS": str(plugins),
        "ANSIBLE_PIPELINING": "1",
        "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        "ANSIBLE_FORKS": str(forks),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "MOLECULE_EPHEMERAL_DIRECTORY": str(STATE / "stage"),
        "MOLECULE_PROJECT_DIRECTORY": str(ROOT),
    })
    (STATE / "stage").mkdir(parents=True, exist_ok=True)
    return env


def playbook(env, inventory, name, args, label):
    """Run ansible-playbook; return wall seconds, rc, per-task records, recap."""
    logs = STATE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    timing = logs / ("%s.timing.json" % label)
    report = STATE / "drift-report" / label
    run_env = dict(env, BENCH_TIMING_JSON=str(timing), HPC_DRIFT_REPORT_DIR=str(report))
    run_env["ANSIBLE_CALLBACKS_ENABLED"] = "bench_timing" + (
        ",hpc.gpu_containers.drift_report" if "drift" in name else "")
    argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), *args, str(ROOT / name)]
    # (ROOT / name is name itself when name is an absolute path)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    with open(logs / ("%s.log" % label), "w") as out:
        proc = subprocess.run(argv, env=run_env, stdout=out, stderr=subprocess.STDOUT, cwd=str(ROOT), check=False)
    wall = time.monotonic() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Controller CPU: ansible-playbook and its forks (the docker CLI included).
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    records = json.loads(timing.read_text()) if timing.exists() else []
    changed = sum(1 for rec in records if rec["changed"] and rec["status"] != "skipped")
    log("%-28s rc=%d %6.1f s, %d task results changed" % (label, proc.returncode, wall, changed))
    return {"wall": wall, "cpu": cpu, "rc": proc.returncode, "records": records, "changed": changed,
            "log": str(logs / ("%s.log" % label))}


# Controller-side actions (no module on the node); the callback applies the same list.
CONTROLLER_ACTIONS = {name for short in (
    "set_fact", "assert", "debug", "fail", "meta", "include_tasks", "import_tasks", "include_role",
    "import_role", "include_vars", "add_host", "group_by", "set_stats", "validate_argument_spec")
    for name in (short, "ansible.builtin." + short)}


def module_runs(rec):
    return 0 if rec["action"] in CONTROLLER_ACTIONS else rec["runs"]


def per_host(records):
    """Host -> (module executions, seconds spent in that host's tasks)."""
    out = {}
    for rec in records:
        runs, secs = out.get(rec["host"], (0, 0.0))
        out[rec["host"]] = (runs + module_runs(rec), secs + rec["duration"])
    return out


def per_task(records):
    """(role, task, action) -> {host: (runs, seconds)} for one run."""
    out = {}
    for rec in records:
        key = (rec["role"] or "-", rec["task"], rec["action"])
        runs, secs = out.setdefault(key, {}).get(rec["host"], (0, 0.0))
        out[key][rec["host"]] = (runs + module_runs(rec), secs + rec["duration"])
    return out


# --------------------------------------------------------------------------
# The floor: what one module execution costs, whatever the module does
# --------------------------------------------------------------------------
FLOOR_PLAYBOOK = """---
- name: The cost of one module execution (bench/drift.py)
  hosts: all
  gather_facts: false
  tasks:
%s"""


def floor(env, inventory, containers, reps=10):
    """Per-execution cost on these nodes: ``ansible.builtin.ping`` tasks (the smallest module: AnsiballZ
    payload, ``docker exec``, Python start-up on the node, result), and below Ansible the bare
    ``docker exec true`` and ``docker exec python3 -c pass`` of one node, ``reps`` times each."""
    path = STATE / "floor.yml"
    tasks = ["    - name: ping %d\n      ansible.builtin.ping:\n" % (i + 1) for i in range(reps)]
    path.write_text(FLOOR_PLAYBOOK % "".join(tasks))
    result = playbook(env, inventory, str(path), [], "floor")
    pings = [rec["duration"] for rec in result["records"] if rec["action"].endswith("ping")]
    bare = {}
    probes = (("docker exec true", ["true"]), ("docker exec python3 -c pass", ["python3", "-c", "pass"]))
    for label, argv in probes if containers else ():
        times = []
        for _rep in range(reps):
            began = time.monotonic()
            run(["docker", "exec", containers[0], *argv], stdout=subprocess.DEVNULL)
            times.append(time.monotonic() - began)
        bare[label] = median(times)
    return {"ping": median(pings), "ping_runs": len(pings), "wall": result["wall"], "bare": bare,
            "node": containers[0] if containers else None, "reps": reps}


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------
def machine():
    cpus = os.cpu_count()
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = "%.1f GiB" % (int(line.split()[1]) / 1048576)
    except OSError:
        pass
    engine = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False).stdout.strip()
    ansible = subprocess.run([str(Path(sys.executable).parent / "ansible"), "--version"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False).stdout.splitlines()
    return {"cpus": cpus, "model": model, "mem": mem, "engine": engine,
            "ansible": ansible[0] if ansible else "", "python": platform.python_version(),
            "kernel": platform.release()}


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def median(values):
    return statistics.median(values) if values else 0.0


def summarize(runs, hosts):
    """Median wall, per-host executions and seconds over a list of runs."""
    walls = [r["wall"] for r in runs]
    host_runs = {h: [] for h in hosts}
    host_secs = {h: [] for h in hosts}
    for r in runs:
        ph = per_host(r["records"])
        for h in hosts:
            runs_h, secs_h = ph.get(h, (0, 0.0))
            host_runs[h].append(runs_h)
            host_secs[h].append(secs_h)
    return {
        "wall": median(walls), "walls": walls,
        "execs": {h: median(host_runs[h]) for h in hosts},
        "secs": {h: median(host_secs[h]) for h in hosts},
        "changed": [r["changed"] for r in runs], "rcs": [r["rc"] for r in runs],
        "cpu": median([r.get("cpu", 0.0) for r in runs]),
        "execs_total": median([sum(module_runs(rec) for rec in r["records"]) for r in runs]),
        "tasks_total": median([len(r["records"]) for r in runs]),
    }


def task_table(runs, hosts, limit=40):
    """Median seconds and executions per task and host, costliest first."""
    acc = {}
    for r in runs:
        for key, by_host in per_task(r["records"]).items():
            slot = acc.setdefault(key, {h: ([], []) for h in hosts})
            for h in hosts:
                runs_h, secs_h = by_host.get(h, (0, 0.0))
                slot[h][0].append(runs_h)
                slot[h][1].append(secs_h)
    rows = []
    for (role, task, action), slot in acc.items():
        execs = {h: median(slot[h][0]) for h in hosts}
        secs = {h: median(slot[h][1]) for h in hosts}
        rows.append((sum(secs.values()), role, task, action, execs, secs))
    rows.sort(key=lambda row: -row[0])
    return rows[:limit]


def role_table(runs, hosts):
    """Median module executions and seconds per role (playbook tasks: '-') and host."""
    acc = {}
    for records in runs:
        per = {}
        for rec in records:
            runs_h, secs_h, gathers = per.setdefault((rec["role"] or "-", rec["host"]), (0, 0.0, 0))
            gathering = rec["action"] in ("gather_facts", "ansible.builtin.gather_facts", "setup",
                                          "ansible.builtin.setup") and rec["status"] != "skipped"
            per[(rec["role"] or "-", rec["host"])] = (runs_h + module_runs(rec), secs_h + rec["duration"],
                                                      gathers + (1 if gathering else 0))
        for key, value in per.items():
            acc.setdefault(key, []).append(value)
    roles = sorted({role for role, _host in acc})
    rows = []
    for role in roles:
        cells = {}
        for h in hosts:
            values = acc.get((role, h), [])
            cells[h] = (median([v[0] for v in values]), median([v[1] for v in values]),
                        median([v[2] for v in values]))
        rows.append([role, cells])
    return rows


def fmt_execs(value):
    return ("%d" % value) if float(value).is_integer() else ("%.1f" % value)


def compare_table(state_cmp, left, right):
    lines = ["| node | file | %s | %s | same |" % (left, right), "|---|---|---|---|---|"]
    same_all = True
    for node, (a, b) in state_cmp.items():
        for key in a:
            same = a[key] == b.get(key)
            same_all = same_all and same
            lines.append("| %s | %s | %s | %s | %s |" % (node, key, a[key], b.get(key), "yes" if same else "**no**"))
    return lines, same_all


def estimate(ours, base, hosts, nodes=1000, forks=100, cores=16):
    """The 1,000-node drift check on paper, from the measured per-host figures."""
    gpu = [h for h in hosts if h != "head"] or hosts
    out = ["## On paper: a drift check of %d nodes at forks=%d" % (nodes, forks), "",
           "From the medians above. Two bounds, the larger one wins:", "",
           "* **nodes**: with the linear strategy every task waits for its slowest host, %d hosts run in"
           " %d batches, so the node side costs about (nodes / forks) x (one GPU node's task seconds);" % (
               forks, -(-nodes // forks)),
           "* **controller**: every module execution costs the controller CPU (fork, module payload, result,"
           " callbacks); measured as the CPU time of `ansible-playbook` and its children per module execution"
           " (skipped and controller-side tasks included), spread over %d controller cores." % cores,
           "",
           "| | GPU node task s | module executions per GPU node | controller CPU s per execution |"
           " node bound (s) | controller bound (s) | estimate (min) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for label, s in (("ours", ours), ("baseline", base)):
        node_s = median([s["secs"][h] for h in gpu])
        execs = median([s["execs"][h] for h in gpu])
        per_exec = s["cpu"] / s["execs_total"] if s["execs_total"] else 0.0
        node_bound = -(-nodes // forks) * node_s
        ctrl_bound = nodes * execs * per_exec / cores
        out.append("| %s | %.1f | %s | %.3f | %.0f | %.0f | %.1f |" % (
            label, node_s, fmt_execs(execs), per_exec, node_bound, ctrl_bound,
            max(node_bound, ctrl_bound) / 60))
    out += ["",
            "Settings that get there: `forks = 100` (the controller needs the cores and about 100 x 60 MB"
            " of memory); `pipelining = True` (one remote exec per module instead of three transfers);"
            " SSH `ControlPersist=10m` so each host keeps one connection; facts limited to what the roles"
            " read (`gather_subset: [min]`) and cached (`fact_caching = jsonfile`, `gathering = smart`,"
            " a timeout longer than the drift interval) so the nightly rerun gathers nothing;"
            " `strategy = free` so a slow host does not hold each task's batch (the linear estimate above"
            " is the worst case); the LSF master's work (one play on one host) runs once and is small"
            " next to the node side. The module-execution count per node is the lever the collection"
            " controls: both bounds scale with it.", ""]
    return out


def floor_section(floor_cost, sums, hosts):
    """What one module execution costs here, and what that means for the target."""
    gpu = [h for h in hosts if h != "head"] or hosts
    ping = floor_cost["ping"]
    lines = ["## What bounds it: the cost of one module execution", "",
             "Measured after the drift runs, on the same nodes: %d `ansible.builtin.ping` tasks per host (the"
             " smallest module: AnsiballZ payload, `docker exec`, Python start-up on the node, the result back),"
             " and below Ansible %d bare `docker exec` calls into `%s`." % (
                 floor_cost["reps"], floor_cost["reps"], floor_cost["node"] or "n/a"), "",
             "| what | median (s) |", "|---|---:|"]
    for label, secs in sorted(floor_cost["bare"].items()):
        lines.append("| `%s` | %.3f |" % (label.replace("docker exec", "docker exec <node>"), secs))
    lines.append("| one `ansible.builtin.ping` task, per host (%d results) | %.3f |" % (floor_cost["ping_runs"], ping))
    lines.append("")
    if not ping:
        return lines
    rows = []
    for label, key in (("ours (drift.yml)", "ours"), ("ours, baseline scope", "ours_scoped"), ("baseline", "baseline")):
        execs = median([sums[key]["execs"][h] for h in gpu])
        secs = median([sums[key]["secs"][h] for h in gpu])
        per_exec = secs / execs if execs else 0.0
        rows.append("| %s | %s | %.1f | %.1f | %.2f |" % (label, fmt_execs(execs), execs * ping, secs, per_exec))
    base_secs = median([sums["baseline"]["secs"][h] for h in gpu])
    header = "| | module executions | executions x ping floor (s) | measured task seconds | seconds per execution |"
    target = ("The target (ours at 0.25 of the baseline) means at most %.1f task seconds per GPU node, which at the"
              " measured floor of %.3f s is **%.1f module executions, fact gathering included**, whatever each"
              " one does." % (base_secs / 4, ping, base_secs / 4 / ping))
    lines += ["Per GPU node (median over the GPU nodes):", "", header, "|---|---:|---:|---:|---:|"]
    lines += rows + ["", target, ""]
    return lines


def render(opts, info, load_before, load_after, hosts, fresh, state_cmp, sums, tasks, started, finished,
           over=None, over_cmp=None, roles=None, floor_cost=None):
    ours, scoped, base = sums["ours"], sums["ours_scoped"], sums["baseline"]
    ratio = ours["wall"] / base["wall"] if base["wall"] else float("nan")
    ratio_scoped = scoped["wall"] / base["wall"] if base["wall"] else float("nan")
    lines = [
        "# Drift rerun: hpc.gpu_containers against the anchors' way",
        "",
        "Generated by `bench/drift.py --runs %d%s` (%s to %s UTC)." % (
            opts.runs, "" if opts.gpu_nodes == 2 else " --gpu-nodes %d" % opts.gpu_nodes, started, finished),
        "",
        "* **ours**: `playbooks/drift.yml --check --diff` with the `drift_report` callback (the nightly"
        " drift check, every role of `site.yml`: engine, NVIDIA runtime, registry, LSF, verification"
        " containers).",
        "* **ours, baseline scope**: the same run with `--tags %s` (what the baseline covers)." % BASELINE_SCOPE_TAGS,
        "* **baseline**: `bench/baseline/site.yml --check --diff`: `lineinfile`/`blockinfile` per LSF"
        " edit, `copy` of a whole daemon.json, a guarded `nvidia-ctk runtime configure`, `user` for the"
        " docker group (bench/baseline/README.md).",
        "",
        "All against the same nodes, converged by the baseline and then by ours (so neither reports"
        " drift: see the last sections), alternating ours / ours-scoped / baseline in each round;"
        " pipelining on, `interpreter_python=/usr/bin/python3`, Docker connection (`docker exec`, whose"
        " CLI runs on the controller and counts in its CPU).",
        "",
        "## Setup",
        "",
        "| | |",
        "|---|---|",
        "| machine | %s CPUs (%s), %s RAM, kernel %s |" % (info["cpus"], info["model"] or "n/a", info["mem"], info["kernel"]),
        "| load average (1/5/15 min) | before: %s; after: %s |" % (load_before, load_after),
        "| Docker engine | %s |" % info["engine"],
        "| Ansible | %s, Python %s |" % (info["ansible"], info["python"]),
        "| nodes | %d (%s) |" % (len(hosts), ", ".join(hosts)),
        "| forks | %d |" % opts.forks,
        "| runs | %d of each, alternating |" % opts.runs,
    ]
    if opts.note:
        lines.append("| note | %s |" % opts.note)
    if opts.skip_tags:
        lines.append("| site.yml tags skipped | %s (every converge and drift run) |" % opts.skip_tags)
    lines += [
        "",
        "## Drift rerun (converged nodes, no drift)",
        "",
        "| | median wall (s) | runs (s) | per host (s) | module executions per host | changed results | exit codes |",
        "|---|---:|---|---|---|---|---|",
    ]
    for label, s in (("ours (drift.yml)", ours), ("ours, baseline scope", scoped), ("baseline", base)):
        lines.append("| %s | %.1f | %s | %s | %s | %s | %s |" % (
            label, s["wall"], ", ".join("%.1f" % w for w in s["walls"]),
            ", ".join("%s %.1f" % (h, s["secs"][h]) for h in hosts),
            ", ".join("%s %s" % (h, fmt_execs(s["execs"][h])) for h in hosts),
            ", ".join(str(c) for c in s["changed"]), ", ".join(str(c) for c in s["rcs"])))
    lines += [
        "",
        "**Ratio ours/baseline (median wall): %.2f** (full drift check) and **%.2f** (baseline scope)."
        " Below 1 means ours is faster; the target is 0.25 (4x faster)." % (ratio, ratio_scoped),
        "",
        "\"per host\" is the sum of that host's task times (start to result, so a task waiting on"
        " other hosts' forks counts for each); \"module executions\" counts results that ran a module"
        " on the node (each loop item once; set_fact/assert/debug/include/meta do not count).",
        "",
    ]
    if floor_cost:
        lines += floor_section(floor_cost, sums, hosts)
    lines += estimate(ours, base, hosts)
    if fresh:
        lines += [
            "## Fresh converge (informational)",
            "",
            "Each on its own freshly prepared cluster (same image, same prepare):",
            "",
            "| | wall (s) | module executions per host | changed results | exit code |",
            "|---|---:|---|---:|---:|",
        ]
        for label, r in fresh:
            ph = per_host(r["records"])
            lines.append("| %s | %.1f | %s | %d | %d |" % (
                label, r["wall"], ", ".join("%s %d" % (h, ph.get(h, (0, 0))[0]) for h in hosts),
                r["changed"], r["rc"]))
        lines.append("")
    if state_cmp:
        table, same_all = compare_table(state_cmp, "ours", "baseline")
        lines += ["## End state: ours vs baseline", "",
                  "sha256 (first 16 hex digits) of each file after each fresh converge; docker group members.", ""]
        lines += table
        lines += ["", "**All compared files and group memberships identical: %s.**" % ("yes" if same_all else "no"), ""]
    if over is not None:
        changed = sorted({"%s: %s" % (rec["host"], rec["task"]) for rec in over["records"]
                          if rec["changed"] and rec["status"] != "skipped"})
        table, same_all = compare_table(over_cmp, "baseline", "then ours")
        lines += ["## Ours over the baseline's end state", "",
                  "`playbooks/site.yml` run (not in check mode) on the baseline-converged cluster, which is then"
                  " the one measured above: rc %d, %.1f s, %d changed results:" % (over["rc"], over["wall"], len(changed)),
                  ""]
        lines += ["* %s" % item for item in changed] or ["* none"]
        lines += ["", "Compared files before and after:", ""] + table
        lines += ["", "**Ours left every compared file as the baseline wrote it: %s.**" % ("yes" if same_all else "no"), ""]
    if roles:
        lines += ["## Ours per role (full drift check)", "",
                  "Median per run: module executions, seconds (task start to result) and fact gatherings"
                  " (`setup`/gather_facts) per host; '-' is the playbooks' own tasks.", "",
                  "| role | %s |" % " | ".join(hosts), "|---|%s" % ("---:|" * len(hosts))]
        for role, cells in roles:
            lines.append("| %s | %s |" % (role, " | ".join(
                "%s exec, %.1f s%s" % (fmt_execs(cells[h][0]), cells[h][1],
                                       ", %s facts" % fmt_execs(cells[h][2]) if cells[h][2] else "")
                for h in hosts)))
        lines.append("")
    lines += ["## Where the drift check's time goes (ours, full run)", "",
              "Median per run; seconds per host (task start to result), module executions per host in brackets;"
              " costliest first.", "",
              "| role | task | action | %s |" % " | ".join(hosts), "|---|---|---|%s" % ("---:|" * len(hosts))]
    for _total, role, task, action, execs, secs in tasks:
        lines.append("| %s | %s | %s | %s |" % (
            role, task.replace("|", "/"), action,
            " | ".join("%.2f (%s)" % (secs[h], fmt_execs(execs[h])) for h in hosts)))
    lines.append("")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=5, help="drift reruns of each kind (default 5)")
    parser.add_argument("--gpu-nodes", type=int, default=2, help="GPU nodes besides head (default 2)")
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--image", default=os.environ.get("BENCH_IMAGE", IMAGE))
    parser.add_argument("--inventory", help="measure this converged cluster instead of bringing one up")
    parser.add_argument("--keep", action="store_true", help="leave the nodes running")
    parser.add_argument("--no-fresh", action="store_true",
                        help="skip the baseline cluster (fresh converge timing and end-state comparison)")
    parser.add_argument("--skip-tags", default="",
                        help="tags of site.yml to leave out of every converge and drift run (e.g. verify)")
    parser.add_argument("--note", default="", help="a line for the results table (e.g. the machine's load)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "drift.md"))
    parser.add_argument("--render-from", help="only rewrite the results file from a raw.json of an earlier run")
    opts = parser.parse_args(argv)
    if opts.render_from:
        write_report(json.loads(Path(opts.render_from).read_text()), opts.out)
        return 0

    if not docker_ok() and not opts.inventory:
        log("SKIPPED: no Docker engine answers (docker info failed)")
        return 0
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    load_before = loadavg()
    env = ansible_env(opts.forks)
    skip = ["--skip-tags", opts.skip_tags] if opts.skip_tags else []
    info = machine()
    ours_c = Cluster("ours", opts.gpu_nodes, opts.image)
    base_c = None if (opts.no_fresh or opts.inventory) else Cluster("base", opts.gpu_nodes, opts.image)
    clusters = [c for c in (ours_c, base_c) if c]
    fresh, state_cmp, over, over_cmp = [], {}, None, {}
    try:
        if opts.inventory:
            inventory = Path(opts.inventory)
            hosts = None
        else:
            for cluster in clusters:
                cluster.down()
                log("starting %s" % ", ".join(cluster.container(n) for n in cluster.nodes))
                cluster.up()
            for cluster in clusters:
                cluster.wait_booted()
                r = playbook(env, cluster.inventory, "molecule/default/prepare.yml", [], "prepare-%s" % cluster.label)
                if r["rc"]:
                    raise SystemExit("prepare failed: see %s" % r["log"])
            r = playbook(env, ours_c.inventory, "playbooks/site.yml", ["--diff", *skip], "converge-ours")
            if r["rc"]:
                raise SystemExit("site.yml failed: see %s" % r["log"])
            fresh.append(("ours (playbooks/site.yml)", r))
            if base_c:
                r = playbook(env, base_c.inventory, "bench/baseline/site.yml", ["--diff"], "converge-baseline")
                if r["rc"]:
                    raise SystemExit("baseline failed: see %s" % r["log"])
                fresh.append(("baseline (bench/baseline/site.yml)", r))
                a, b = ours_c.end_state(), base_c.end_state()
                state_cmp = {node: (a[node], b[node]) for node in ours_c.nodes}
                if not opts.keep:
                    ours_c.down()
                # The measured cluster is converged by both: the baseline's
                # blockinfile finds only its own markers, and ours must take
                # the baseline's end state as converged (it changes what the
                # baseline leaves out: registry, verification, CDI spec).
                r = playbook(env, base_c.inventory, "playbooks/site.yml", ["--diff", *skip],
                             "converge-ours-over-baseline")
                if r["rc"]:
                    raise SystemExit("site.yml over the baseline failed: see %s" % r["log"])
                over = r
                after = base_c.end_state()
                over_cmp = {node: (b[node], after[node]) for node in base_c.nodes}
            measured = base_c or ours_c
            inventory = measured.inventory
            hosts = measured.nodes

        results = {"ours": [], "ours_scoped": [], "baseline": []}
        for i in range(1, opts.runs + 1):
            results["ours"].append(playbook(env, inventory, "playbooks/drift.yml", ["--check", "--diff", *skip],
                                            "drift-ours-%d" % i))
            results["ours_scoped"].append(playbook(env, inventory, "playbooks/drift.yml",
                                                   ["--check", "--diff", "--tags", BASELINE_SCOPE_TAGS, *skip],
                                                   "drift-ours-scoped-%d" % i))
            results["baseline"].append(playbook(env, inventory, "bench/baseline/site.yml", ["--check", "--diff"],
                                                "drift-baseline-%d" % i))
        if hosts is None:
            hosts = sorted({rec["host"] for r in results["ours"] for rec in r["records"]} - {"localhost"})
        floor_cost = floor(env, inventory, [] if opts.inventory else [measured.container(hosts[-1])])
    finally:
        if not opts.keep and not opts.inventory:
            for cluster in clusters:
                cluster.down()
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    raw = {"opts": {k: getattr(opts, k) for k in ("runs", "gpu_nodes", "forks", "note", "skip_tags")},
           "info": info, "load_before": load_before, "load_after": loadavg(), "hosts": hosts,
           "fresh": fresh, "state_cmp": state_cmp, "started": started,
           "finished": finished, "over": over, "over_cmp": over_cmp, "results": results, "floor": floor_cost}
    (STATE / "raw.json").write_text(json.dumps(raw))
    write_report(raw, opts.out)
    return 0


def write_report(raw, out):
    """Render a raw.json (this run's, or --render-from) into the results file."""
    opts = argparse.Namespace(**raw["opts"])
    hosts, results = raw["hosts"], raw["results"]
    sums = {key: summarize(runs, hosts) for key, runs in results.items()}
    tasks = task_table(results["ours"], hosts)
    roles = role_table([r["records"] for r in results["ours"]], hosts)
    lines = render(opts, raw["info"], raw["load_before"], raw["load_after"], hosts,
                   [tuple(item) for item in raw["fresh"]], raw["state_cmp"], sums, tasks,
                   raw["started"], raw["finished"], raw["over"], raw["over_cmp"], roles, raw.get("floor"))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines))
    log("wrote %s" % out)


if __name__ == "__main__":
    sys.exit(main())
