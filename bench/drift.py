#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Drift rerun benchmark: the collection against the way the anchors do it.

    python bench/drift.py [--runs N] [--gpu-nodes K] [--forks F] [--keep] [--no-mitogen]
                          [--connections docker,ssh] [--out bench/results/drift.md]

Unattended, end to end:

1. three clusters of real nodes from the test-bed image (containers
   ``bench-ours-*``, ``bench-scoped-*`` and ``bench-base-*``, one head + K GPU nodes each, named
   head, gpu01 ... inside, as the LSF cluster file expects); for the ssh
   connection, openssh-server from the Debian archive and root's key on every
   node; then prepared with molecule/default/prepare.yml (LSF tree, stubs,
   stand-in NVIDIA repository);
2. a fresh converge of each, one after the other: ``playbooks/site.yml`` on the
   first, the same limited to the baseline's scope (``--tags docker,nvidia,lsf``)
   on the second, ``bench/baseline/site.yml`` on the third (one run each);
3. the end state compared: sha256 of lsf.conf, lsf.shared, lsf.cluster.*,
   lsb.applications and daemon.json, and the docker group's members, node by
   node, between the two clusters; the first cluster is then removed;
4. ``playbooks/site.yml`` over the baseline's cluster: it must leave the
   compared files alone (it adds what the baseline leaves out), and the
   baseline's ``blockinfile`` then still finds its markers, so neither side
   reports drift on the measured nodes; its end records the drift
   fingerprint on each node;
5. on that cluster, N rounds, on each connection (``docker exec``; SSH with
   ControlPersist), each round in turn: the drift check as it runs nightly
   (``playbooks/drift.yml --check --diff`` with the drift_report callback:
   the fast path), the full check (``-e hpc_drift_fast_path=false``), the
   full check limited to the baseline's scope (``--tags docker,nvidia,lsf``),
   and the baseline's ``--check --diff``; then (unless ``--no-mitogen``) the
   fast path and the full check again with mitogen's linear strategy, the
   optional accelerator (pip-installed under .cache/bench-drift/mitogen);
6. the idempotent rerun of each side's site playbook (not in check mode,
   ``--reruns`` times in turn; ours as it runs by default, where a full converge takes the drift fast path,
   with the fast path off, and on the baseline's scope); then one node drifted: daemon.json of gpu01
   changed (a key the collection sets removed), the drift check run once
   (the fast path must clear the other GPU node and name the file), the file
   put back and the check run again;
7. the floor: one ``ping`` per task and host on each connection, bare
   ``docker exec``, and the main process's cost per task result (``debug``
   tasks on 100 local-connection hosts at 5 and 50 forks);
8. ``bench/results/drift.md``: median wall time per run, module executions
   and task results per host, the ratios side by side, the targets, per-task
   cost, controller CPU, the 1,000-node estimate, the machine, load, node and
   fork counts; the raw figures in .cache/bench-drift/raw.json
   (``--render-from`` rewrites the results file from it);
9. the nodes removed (unless --keep).

Per-task timing comes from a small callback written next to the run's
state (``bench_timing``): for every host and task, start to result, the
action, and whether a module ran on the node (controller-side actions such as
set_fact, assert, debug, include_* and meta do not count; every loop item
that runs counts once).

``--inventory DIR`` measures an existing, converged cluster instead (steps 1-4,
6 and 9 are skipped; its inventory's connection is used); the inventory must have the site playbook's groups.
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
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _collection import ROOT, link_collection  # bench/_collection.py: this script's folder is on sys.path

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
# What the baseline does: the engine, the NVIDIA runtime, the LSF files; not the registry, the verification or
# the catalogue's images (their pull on each node is tagged images as well as lsf).
BASELINE_SCOPE = ["--tags", BASELINE_SCOPE_TAGS, "--skip-tags", "images"]
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
        self.inventories = {"docker": STATE / label / "inventory", "ssh": STATE / label / "inventory-ssh"}
        self.inventory = self.inventories["docker"]
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
        for node in self.nodes:
            self.start(node)
        self.write_inventory()

    def start(self, node, image=None):
        """One node container from ``image`` (default: the cluster's), on the cluster's network under its name."""
        caps = [arg for cap in CAPABILITIES for arg in ("--cap-add", cap)]
        # Options as molecule/default/molecule.yml (molecule/README.md).
        run(["docker", "run", "-d", "--name", self.container(node), "--hostname", node,
             "--network", self.network, "--network-alias", node, *caps,
             "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
             "--cgroupns=host", "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
             "-v", "/var/lib/docker", "-v", "%s:/usr/share/lsf" % self.lsf_volume,
             "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp",
             "--stop-signal", "SIGRTMIN+3", "--label", "hpc.gpu_containers.bench=drift",
             image or self.image, "/lib/systemd/systemd"], stdout=subprocess.DEVNULL)

    def wait_booted(self, timeout=300):
        """Wait for systemd in every node: a module unpacked in /tmp while
        systemd-tmpfiles still runs at boot can lose its files."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            # Under load systemd may not even have started when docker run returns.
            while True:
                state = self.exec_out(node, "systemctl", "is-system-running", "--wait").strip()
                if state in ("running", "degraded"):
                    break
                if time.monotonic() > deadline:
                    raise SystemExit("%s did not boot (systemd: %s)" % (self.container(node), state or "not up"))
                time.sleep(1)

    def write_inventory(self, connection="docker", key=None):
        """The inventory for one connection: ``docker`` (``docker exec``) or ``ssh`` (to each node's address,
        as root with ``key``); the same groups and group_vars, so both reach the same converged nodes."""
        inventory = self.inventories[connection]
        inventory.mkdir(parents=True, exist_ok=True)
        if connection == "ssh":
            lines = ["all:", "  vars:", "    ansible_connection: ansible.builtin.ssh", "    ansible_user: root",
                     "    ansible_ssh_private_key_file: %s" % key, "  children:"]
        else:
            lines = ["all:", "  vars:", "    ansible_connection: community.docker.docker", "  children:"]
        for group in ["lsf_master", "registry", "docker_hosts", "gpu_nodes"]:
            lines += ["    %s:" % group, "      hosts:"]
            for node in self.nodes:
                if group in self.groups(node):
                    address = self.address(node) if connection == "ssh" else self.container(node)
                    lines.append("        %s: {ansible_host: %s}" % (node, address))
        (inventory / "hosts.yml").write_text("\n".join(lines) + "\n")
        link = inventory / "group_vars"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(ROOT / "molecule" / "default" / "group_vars")

    def address(self, node):
        return run(["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                    self.container(node)], stdout=subprocess.PIPE).stdout.strip()

    def add_sshd(self, key):
        """openssh-server from the Debian archive on every node, root's authorized key, and the SSH
        inventory. Done before prepare, so both clusters and every run see the same package set."""
        procs = [subprocess.Popen(
            ["docker", "exec", "-e", "DEBIAN_FRONTEND=noninteractive", self.container(node), "sh", "-c",
             "apt-get update -qq && apt-get install -y -qq --no-install-recommends openssh-server >/dev/null"
             " && systemctl enable --now ssh"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for node in self.nodes]
        for node, proc in zip(self.nodes, procs):
            _out, err = proc.communicate()
            if proc.returncode:
                raise SystemExit("openssh-server on %s failed: %s" % (self.container(node), err.strip()[-400:]))
        public = Path(str(key) + ".pub").read_bytes()
        for node in self.nodes:
            run(["docker", "exec", "-i", self.container(node), "sh", "-c",
                 "umask 077 && mkdir -p /root/.ssh && cat > /root/.ssh/authorized_keys"],
                input=public.decode(), stdout=subprocess.DEVNULL)
        self.write_inventory("ssh", key)

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
    collections = link_collection(STATE / "collections")
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
        # SSH as docs/scale.md sets it: one master connection per host, kept between tasks.
        "ANSIBLE_SSH_ARGS": "-o ControlMaster=auto -o ControlPersist=10m -o StrictHostKeyChecking=no"
                            " -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        "ANSIBLE_HOST_KEY_CHECKING": "0",
        "MOLECULE_EPHEMERAL_DIRECTORY": str(STATE / "stage"),
        "MOLECULE_PROJECT_DIRECTORY": str(ROOT),
    })
    (STATE / "stage").mkdir(parents=True, exist_ok=True)
    return env


def mitogen_env(env):
    """``env`` with mitogen's linear strategy (installed once under the benchmark's state); None when it cannot
    be installed (the runs without it still happen)."""
    target = STATE / "mitogen"
    if not (target / "ansible_mitogen").is_dir():
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                               "--target", str(target), "mitogen==%s" % MITOGEN_VERSION], check=False)
        if proc.returncode:
            log("mitogen %s could not be installed: the accelerator runs are left out" % MITOGEN_VERSION)
            return None
    return dict(env, ANSIBLE_STRATEGY_PLUGINS=str(target / "ansible_mitogen" / "plugins" / "strategy"),
                ANSIBLE_STRATEGY="mitogen_linear",
                PYTHONPATH=os.pathsep.join(filter(None, [str(target), env.get("PYTHONPATH")])))


def ssh_key():
    """The controller's key for the SSH runs (made once, kept under the benchmark's state)."""
    key = STATE / "ssh" / "id_ed25519"
    if not key.exists():
        key.parent.mkdir(parents=True, exist_ok=True)
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench-drift", "-f", str(key)])
    return key


def playbook(env, inventory, name, args, label, prefix=()):
    """Run ansible-playbook (behind the ``prefix`` command, if any); return wall seconds, rc, per-task records,
    recap."""
    logs = STATE / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    timing = logs / ("%s.timing.json" % label)
    report = STATE / "drift-report" / label
    shutil.rmtree(report, ignore_errors=True)
    run_env = dict(env, BENCH_TIMING_JSON=str(timing), HPC_DRIFT_REPORT_DIR=str(report))
    # BENCH_CALLBACKS_EXTRA: callbacks a benchmark adds (bench/controller.py: the site templates' progress).
    run_env["ANSIBLE_CALLBACKS_ENABLED"] = ",".join(
        ["bench_timing"] + (["hpc.gpu_containers.drift_report"] if "drift" in name else [])
        + [cb for cb in env.get("BENCH_CALLBACKS_EXTRA", "").split(",") if cb])
    argv = [*prefix, str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), *args,
            str(ROOT / name)]
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
    log("%-32s rc=%d %6.1f s, %d task results changed" % (label, proc.returncode, wall, changed))
    fast_path = None
    if (report / "drift.json").exists():
        drift = json.loads((report / "drift.json").read_text())
        fast_path = {"clean": drift["summary"].get("hosts_clean_by_fast_path", 0),
                     "differences": {host: (entry.get("fast_path") or {}).get("differences", [])
                                     for host, entry in drift["hosts"].items()}}
    timing.unlink(missing_ok=True)
    return {"wall": wall, "cpu": cpu, "rc": proc.returncode, "records": records, "changed": changed,
            "fast_path": fast_path, "log": str(logs / ("%s.log" % label))}


# Controller-side actions (no module on the node); the callback applies the same list.
CONTROLLER_ACTIONS = {name for short in (
    "set_fact", "assert", "debug", "fail", "meta", "include_tasks", "import_tasks", "include_role",
    "import_role", "include_vars", "add_host", "group_by", "set_stats", "validate_argument_spec")
    for name in (short, "ansible.builtin." + short)}


def module_runs(rec):
    return 0 if rec["action"] in CONTROLLER_ACTIONS else rec["runs"]


def per_host(records):
    """Host -> (module executions, seconds spent in that host's tasks, task results)."""
    out = {}
    for rec in records:
        runs, secs, results = out.get(rec["host"], (0, 0.0, 0))
        out[rec["host"]] = (runs + module_runs(rec), secs + rec["duration"], results + 1)
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


def floor(env, inventory, containers, reps=10, label="floor"):
    """Per-execution cost on these nodes: ``ansible.builtin.ping`` tasks (the smallest module: AnsiballZ
    payload, ``docker exec``, Python start-up on the node, result), and below Ansible the bare
    ``docker exec true`` and ``docker exec python3 -c pass`` of one node, ``reps`` times each."""
    path = STATE / "floor.yml"
    tasks = ["    - name: ping %d\n      ansible.builtin.ping:\n" % (i + 1) for i in range(reps)]
    path.write_text(FLOOR_PLAYBOOK % "".join(tasks))
    result = playbook(env, inventory, str(path), [], label)
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


MAIN_PROCESS_PLAYBOOK = """---
- name: The main process's cost per task result (bench/drift.py)
  hosts: all
  gather_facts: false
  tasks:
%s"""


def main_process(env, hosts=100, reps=10, forks=(5, 50)):
    """What one task result costs Ansible's main process, whatever the task does: ``reps``
    ``ansible.builtin.debug`` tasks on ``hosts`` inventory hosts on the local connection (no node, no
    module: the strategy, the fork of a worker per host and task, the result queue and the callbacks),
    at each number of ``forks``. Seconds of wall time per task result, and the run's controller CPU."""
    inventory = STATE / "main-process" / "hosts.yml"
    inventory.parent.mkdir(parents=True, exist_ok=True)
    lines = ["all:", "  vars:", "    ansible_connection: local",
             "    ansible_python_interpreter: %s" % sys.executable, "  hosts:"]
    lines += ["    probe%04d:" % i for i in range(1, hosts + 1)]
    inventory.write_text("\n".join(lines) + "\n")
    path = STATE / "main-process" / "debug.yml"
    tasks = ["    - name: result %d\n      ansible.builtin.debug:\n        msg: x\n      changed_when: false\n" % (i + 1)
             for i in range(reps)]
    path.write_text(MAIN_PROCESS_PLAYBOOK % "".join(tasks))
    out = {}
    for count in forks:
        result = playbook(dict(env, ANSIBLE_FORKS=str(count)), inventory, str(path), [], "main-process-%d" % count)
        results = len(result["records"])
        out[str(count)] = {"wall": result["wall"], "cpu": result["cpu"], "results": results,
                           "per_result": result["wall"] / results if results else 0.0}
    return {"hosts": hosts, "reps": reps, "forks": out}


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
    host_results = {h: [] for h in hosts}
    for r in runs:
        ph = per_host(r["records"])
        for h in hosts:
            runs_h, secs_h, results_h = ph.get(h, (0, 0.0, 0))
            host_runs[h].append(runs_h)
            host_secs[h].append(secs_h)
            host_results[h].append(results_h)
    return {
        "wall": median(walls), "walls": walls,
        "execs": {h: median(host_runs[h]) for h in hosts},
        "secs": {h: median(host_secs[h]) for h in hosts},
        "results": {h: median(host_results[h]) for h in hosts},
        "clean": [(r.get("fast_path") or {}).get("clean", "-") for r in runs],
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


KINDS = (
    # key, label, playbook, arguments (ours: plus --skip-tags when given)
    ("fast", "ours, fast path", "playbooks/drift.yml", ["--check", "--diff"]),
    ("full", "ours, full check", "playbooks/drift.yml", ["--check", "--diff", "-e", "hpc_drift_fast_path=false"]),
    ("scoped", "ours, full check, baseline scope", "playbooks/drift.yml",
     ["--check", "--diff", "-e", "hpc_drift_fast_path=false", *BASELINE_SCOPE]),
    ("baseline", "baseline", "bench/baseline/site.yml", ["--check", "--diff"]),
)
# The accelerator, optional (docs/scale.md): the same drift runs with mitogen's linear strategy.
MITOGEN_VERSION = "0.3.54"
MITOGEN_KINDS = (
    ("fast-mitogen", "ours, fast path, mitogen", "playbooks/drift.yml", ["--check", "--diff"]),
    ("full-mitogen", "ours, full check, mitogen", "playbooks/drift.yml",
     ["--check", "--diff", "-e", "hpc_drift_fast_path=false"]),
)
ALL_KINDS = KINDS + MITOGEN_KINDS
KIND_LABELS = {key: label for key, label, _name, _args in ALL_KINDS}
# The targets for the drift check of a clean cluster, per node.
TARGET_RATIO, TARGET_EXECS, TARGET_RESULTS = 0.25, 6, 15


def gpu_hosts(hosts):
    return [h for h in hosts if h != "head"] or hosts


def worst(values):
    return max(values) if values else 0


def targets_section(sums, connections, hosts):
    """The fast path against the targets, per connection: ratio, executions and task results per node."""
    lines = ["## The targets (clean cluster, fast path)", "",
             "| connection | fast path / baseline (median wall) | target | most module executions on a node"
             " | target | most task results on a node | target | met |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for conn in connections:
        fast, base = sums.get(conn + "/fast"), sums.get(conn + "/baseline")
        if not fast or not base or not base["wall"]:
            continue
        ratio = fast["wall"] / base["wall"]
        execs = worst(list(fast["execs"].values()))
        results = worst(list(fast["results"].values()))
        met = ratio <= TARGET_RATIO and execs <= TARGET_EXECS and results <= TARGET_RESULTS
        lines.append("| %s | %.2f (%.1fx faster) | %.2f | %s | %d | %s | %d | %s |" % (
            conn, ratio, 1 / ratio if ratio else float("inf"), TARGET_RATIO, fmt_execs(execs), TARGET_EXECS,
            fmt_execs(results), TARGET_RESULTS, "**yes**" if met else "**no**"))
    lines += ["", "Task results count every result Ansible's main process handles for the node: module"
              " executions, skipped tasks and controller-side tasks (set_fact, group_by, assert) alike; a loop"
              " counts once. A task that runs once for the whole play (`run_once`: the pre-flight's inventory"
              " checks, the drift gate) counts on the host it ran on, the first of the run; tasks on"
              " `localhost` are not counted.", ""]
    return lines


def estimate(sums, connections, hosts, main_cost, nodes=1000, forks=100, cores=16):
    """The 1,000-node drift check on paper, from the measured per-node figures and the main process's cost."""
    gpu = gpu_hosts(hosts)
    per_result = 0.0
    if main_cost:
        biggest = max(main_cost["forks"], key=int)
        per_result = main_cost["forks"][biggest]["per_result"]
    out = ["## On paper: a drift check of %d nodes at forks=%d" % (nodes, forks), "",
           "From the medians above. Three bounds; the largest wins:", "",
           "* **main process**: Ansible's main process is one thread that handles every task result in turn"
           " (strategy, a worker forked per host and task, the result queue, callbacks): nodes x task results"
           " per node x %.1f ms, measured below with `debug` tasks on %d local hosts;" % (
               per_result * 1000, main_cost["hosts"] if main_cost else 0),
           "* **nodes**: with the linear strategy every task waits for its slowest host; %d hosts run at once,"
           " in %d batches: (nodes / forks) x one GPU node's task seconds;" % (forks, -(-nodes // forks)),
           "* **controller CPU**: the run's controller CPU (`ansible-playbook`, its workers and the connection"
           " clients) per task result, x the node's task results x nodes, over %d cores (an upper bound: the"
           " measured CPU includes Ansible's start-up and the LSF master's share)." % cores,
           "",
           "| run | connection | task results per GPU node | GPU node task s | controller CPU s per result |"
           " main process (s) | nodes (s) | controller CPU (s) | estimate (s) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for conn in connections:
        for key in ("fast", "full", "baseline"):
            s = sums.get("%s/%s" % (conn, key))
            if not s:
                continue
            results = median([s["results"][h] for h in gpu])
            node_s = median([s["secs"][h] for h in gpu])
            cpu_per_result = s["cpu"] / s["tasks_total"] if s["tasks_total"] else 0.0
            main_bound = nodes * results * per_result
            node_bound = -(-nodes // forks) * node_s
            cpu_bound = nodes * results * cpu_per_result / cores
            out.append("| %s | %s | %s | %.1f | %.3f | %.0f | %.0f | %.0f | **%.0f** |" % (
                KIND_LABELS[key], conn, fmt_execs(results), node_s, cpu_per_result, main_bound, node_bound,
                cpu_bound, max(main_bound, node_bound, cpu_bound)))
    out += [""]
    if main_cost:
        out += ["The main process's cost per task result (%d `ansible.builtin.debug` tasks on %d hosts of the"
                " local connection):" % (main_cost["reps"], main_cost["hosts"]), "",
                "| forks | task results | wall (s) | ms per task result | controller CPU (s) |",
                "|---:|---:|---:|---:|---:|"]
        for count, m in sorted(main_cost["forks"].items(), key=lambda item: int(item[0])):
            out.append("| %s | %d | %.1f | %.1f | %.1f |" % (count, m["results"], m["wall"], m["per_result"] * 1000,
                                                             m["cpu"]))
        out.append("")
    out += ["Settings that get there (docs/scale.md): `forks = 100`; `pipelining = True`; SSH"
            " `ControlPersist` so each host keeps one connection; `strategy = free` so a slow host does not hold"
            " each task's batch (the node bound above is the linear worst case). On the fast path the nodes"
            " gather no facts and the plays after it have no hosts.", ""]
    return out


def floor_section(floors, sums, hosts):
    """What one module execution costs here, per connection."""
    gpu = gpu_hosts(hosts)
    lines = ["## The cost of one module execution", "",
             "Measured after the drift runs, on the same nodes: `ansible.builtin.ping` tasks per host (the"
             " smallest module: AnsiballZ payload, the connection, Python start-up on the node, the result back),"
             " and below Ansible bare `docker exec` calls into one node.", "",
             "| connection | what | median (s) |", "|---|---|---:|"]
    for conn, floor_cost in floors.items():
        for label, secs in sorted(floor_cost["bare"].items()):
            lines.append("| %s | `%s` into `%s` | %.3f |" % (conn, label, floor_cost["node"], secs))
        lines.append("| %s | one `ansible.builtin.ping` task, per host (%d results) | %.3f |" % (
            conn, floor_cost["ping_runs"], floor_cost["ping"]))
    lines += ["", "Per GPU node (median over the GPU nodes):", "",
              "| run | connection | module executions | task results | measured task seconds |"
              " seconds per execution |", "|---|---|---:|---:|---:|---:|"]
    for conn in floors:
        for key, label, _name, _args in ALL_KINDS:
            s = sums.get("%s/%s" % (conn, key))
            if not s:
                continue
            execs = median([s["execs"][h] for h in gpu])
            secs = median([s["secs"][h] for h in gpu])
            lines.append("| %s | %s | %s | %s | %.1f | %.2f |" % (
                label, conn, fmt_execs(execs), fmt_execs(median([s["results"][h] for h in gpu])), secs,
                secs / execs if execs else 0.0))
    lines.append("")
    return lines


def mitogen_section(sums, connections, hosts):
    """The accelerator beside the plain runs: median walls, the ratio, and the same work done."""
    rows = []
    for conn in connections:
        for plain, accel in (("fast", "fast-mitogen"), ("full", "full-mitogen")):
            a, b = sums.get("%s/%s" % (conn, plain)), sums.get("%s/%s" % (conn, accel))
            if not a or not b:
                continue
            same = all(a["execs"][h] == b["execs"][h] for h in hosts)
            rows.append("| %s | %s | %.1f | %.1f | %.2f | %s | %s | %s |" % (
                KIND_LABELS[plain], conn, a["wall"], b["wall"], b["wall"] / a["wall"] if a["wall"] else float("nan"),
                "yes" if same else "**no**", ", ".join(str(c) for c in b["changed"]), ", ".join(str(c) for c in b["rcs"])))
    if not rows:
        return []
    return ["## Accelerator: mitogen (optional)", "",
            "The same runs with mitogen %s's linear strategy (`ANSIBLE_STRATEGY=mitogen_linear`, mitogen installed"
            " beside Ansible, nothing on the nodes), in the same rounds as the plain runs:" % MITOGEN_VERSION, "",
            "| run | connection | plain median wall (s) | with mitogen (s) | ratio | same module executions per host"
            " | changed results (mitogen) | exit codes (mitogen) |", "|---|---|---:|---:|---:|---|---|---|"] + rows + [""]


def tamper_section(tamper, order=None):
    """One node drifted: the fast path clears the others, and the drifted one is checked by the roles that own
    what differs (the roles that ran a task there, from the timing records)."""
    if not tamper:
        return []
    caveat = [ORDER_CAVEAT, ""] if order != "ours-first" else []
    lines = ["## One node drifted (fast path)", "",
             "After the measured runs, `%s` on %s was changed behind the collection's back (%s), the drift check"
             " run once, the file put back byte for byte, and the check run again." % (
                 tamper["path"], tamper["node"], tamper["how"]), "", *caveat,
             "| run | wall (s) | exit code | changed results | hosts cleared by the fast path |"
             " fast path differences |", "|---|---:|---:|---:|---:|---|"]
    for label, r in (("drifted", tamper["drifted"]), ("put back", tamper["restored"])):
        fast = r.get("fast_path") or {}
        diffs = "; ".join("%s: %s" % (host, ", ".join(d)) for host, d in sorted(fast.get("differences", {}).items())
                          if d) or "none"
        row = (label, r["wall"], r["rc"], r["changed"], fast.get("clean", "-"), diffs.replace("|", "/"))
        lines.append("| %s | %.1f | %d | %d | %s | %s |" % row)
    changed = sorted({"%s: %s" % (rec["host"], rec["task"]) for rec in tamper["drifted"]["records"]
                      if rec["changed"] and rec["status"] != "skipped"})
    lines += ["", "Changed results of the drifted run (its check's diff):", ""]
    lines += ["* %s" % item for item in changed] or ["* none"]
    ran = sorted({rec["role"] for rec in tamper["drifted"]["records"]
                  if rec["host"] == tamper["node"] and rec["role"] and rec["status"] != "skipped"})
    lines += ["", "Roles that ran a task on %s in the drifted run (skipped tasks left out): %s." % (
        tamper["node"], ", ".join(ran) or "none"), ""]
    return lines


def render(opts, info, load_before, load_after, hosts, fresh, state_cmp, sums, tasks, started, finished,
           over=None, over_cmp=None, roles=None, extra=None):
    extra = extra or {}
    connections = opts.connections
    lines = [
        "# Drift rerun: hpc.gpu_containers against the anchors' way",
        "",
        "Generated by `bench/drift.py --runs %d%s` (%s to %s UTC)." % (
            opts.runs, "" if opts.gpu_nodes == 2 else " --gpu-nodes %d" % opts.gpu_nodes, started, finished),
        "",
        "* **ours, fast path**: `playbooks/drift.yml --check --diff` with the `drift_report` callback, as the"
        " nightly drift check runs by default: one `drift_fingerprint` module per node compares the node with"
        " what the last full converge recorded, and only a node that differs gets the full check"
        " (docs/drift-fast-path.md).",
        "* **ours, full check**: the same with `-e hpc_drift_fast_path=false`: every role of `site.yml` in check"
        " mode on every node (engine, NVIDIA runtime, registry, LSF, verification containers, image variants).",
        "* **ours, full check, baseline scope**: the full check with `%s` (what the baseline covers)."
        % " ".join(BASELINE_SCOPE),
        "* **baseline**: `bench/baseline/site.yml --check --diff`: `lineinfile`/`blockinfile` per LSF"
        " edit, `copy` of a whole daemon.json, a guarded `nvidia-ctk runtime configure`, `user` for the"
        " docker group (bench/baseline/README.md).",
        "",
        "All against the same nodes, converged by the baseline and then by ours (so neither reports"
        " drift: see the last sections), the four in turn in each round, on each connection: `docker`"
        " (`docker exec`, whose CLI runs on the controller and counts in its CPU) and `ssh` (sshd on every"
        " node, root with a key, `ControlMaster=auto`, `ControlPersist=10m`); pipelining on,"
        " `interpreter_python=/usr/bin/python3`.",
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
        "| runs | %d of each, in turn, per connection (%s) |" % (opts.runs, ", ".join(connections)),
    ]
    if opts.note:
        lines.append("| note | %s |" % opts.note)
    if opts.skip_tags:
        lines.append("| site.yml tags skipped | %s (every converge and drift run) |" % opts.skip_tags)
    lines += [
        "",
        "## Drift rerun (converged nodes, no drift)",
        "",
        "| run | connection | median wall (s) | runs (s) | module executions per host | task results per host"
        " | hosts cleared by the fast path | changed results | exit codes |",
        "|---|---|---:|---|---|---|---|---|---|",
    ]
    for conn in connections:
        for key, label, _name, _args in ALL_KINDS:
            s = sums.get("%s/%s" % (conn, key))
            if not s:
                continue
            lines.append("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s |" % (
                label, conn, s["wall"], ", ".join("%.1f" % w for w in s["walls"]),
                ", ".join("%s %s" % (h, fmt_execs(s["execs"][h])) for h in hosts),
                ", ".join("%s %s" % (h, fmt_execs(s["results"][h])) for h in hosts),
                ", ".join(str(c) for c in s["clean"]) if key.startswith("fast") else "-",
                ", ".join(str(c) for c in s["changed"]), ", ".join(str(c) for c in s["rcs"])))
    lines += ["", "Ratios of the median walls, measured side by side (below 1: ours is faster):", "",
              "| connection | fast path / baseline | full check / baseline | full check, baseline scope / baseline"
              " | full check / fast path |", "|---|---:|---:|---:|---:|"]
    for conn in connections:
        base = sums.get(conn + "/baseline", {}).get("wall")
        walls = {key: sums.get("%s/%s" % (conn, key), {}).get("wall") for key in ("fast", "full", "scoped")}
        if not base:
            continue
        lines.append("| %s | **%.2f** | %.2f | %.2f | %.1f |" % (
            conn, walls["fast"] / base, walls["full"] / base, walls["scoped"] / base,
            walls["full"] / walls["fast"] if walls["fast"] else float("nan")))
    lines += [
        "",
        "\"module executions\" counts results that ran a module on the node (each loop item once;"
        " set_fact/assert/debug/group_by/include/meta do not count); \"task results\" counts every result.",
        "",
    ]
    lines += targets_section(sums, connections, hosts)
    lines += mitogen_section(sums, connections, hosts)
    lines += tamper_section(extra.get("tamper"), extra.get("rerun_order"))
    lines += reruns_section(extra.get("reruns"), hosts, extra.get("rerun_order"))
    if extra.get("floors"):
        lines += floor_section(extra["floors"], sums, hosts)
    lines += estimate(sums, connections, hosts, extra.get("main_process"))
    if fresh:
        lines += [
            "## Fresh converge",
            "",
            "Each on its own freshly prepared cluster (same image, same prepare), one after the other:",
            "",
            "| | wall (s) | module executions per host | task results per host | changed results | exit code |",
            "|---|---:|---|---|---:|---:|",
        ]
        for label, r in fresh:
            ph = per_host(r["records"])
            lines.append("| %s | %.1f | %s | %s | %d | %d |" % (
                label, r["wall"], ", ".join("%s %d" % (h, ph.get(h, (0, 0, 0))[0]) for h in hosts),
                ", ".join("%s %d" % (h, ph.get(h, (0, 0, 0))[2]) for h in hosts), r["changed"], r["rc"]))
        walls = {label.split(" (")[0]: r["wall"] for label, r in fresh}
        if walls.get("baseline"):
            ratios = ["%s %.2f" % (label, wall / walls["baseline"]) for label, wall in walls.items() if label != "baseline"]
            lines += ["", "Ratios to the baseline's (one run each, so only indicative): %s; the target: the baseline's"
                      " scope at most 1." % "; ".join(ratios)]
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
        lines += ["## Ours per role (full check, docker connection)", "",
                  "Median per run: module executions, seconds (task start to result) and fact gatherings"
                  " (`setup`/gather_facts) per host; '-' is the playbooks' own tasks.", "",
                  "| role | %s |" % " | ".join(hosts), "|---|%s" % ("---:|" * len(hosts))]
        for role, cells in roles:
            lines.append("| %s | %s |" % (role, " | ".join(
                "%s exec, %.1f s%s" % (fmt_execs(cells[h][0]), cells[h][1],
                                       ", %s facts" % fmt_execs(cells[h][2]) if cells[h][2] else "")
                for h in hosts)))
        lines.append("")
    for title, rows in tasks:
        lines += ["## %s" % title, "",
                  "Median per run; seconds per host (task start to result), module executions per host in brackets;"
                  " costliest first.", "",
                  "| role | task | action | %s |" % " | ".join(hosts), "|---|---|---|%s" % ("---:|" * len(hosts))]
        for _total, role, task, action, execs, secs in rows:
            lines.append("| %s | %s | %s | %s |" % (
                role, task.replace("|", "/"), action,
                " | ".join("%.2f (%s)" % (secs[h], fmt_execs(execs[h])) for h in hosts)))
        lines.append("")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=5, help="drift reruns of each kind (default 5)")
    parser.add_argument("--reruns", type=int, default=2,
                        help="idempotent reruns of each site playbook, not in check mode (default 2)")
    parser.add_argument("--gpu-nodes", type=int, default=2, help="GPU nodes besides head (default 2)")
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--image", default=os.environ.get("BENCH_IMAGE", IMAGE))
    parser.add_argument("--inventory", help="measure this converged cluster instead of bringing one up")
    parser.add_argument("--keep", action="store_true", help="leave the nodes running")
    parser.add_argument("--no-fresh", action="store_true",
                        help="skip the baseline cluster (fresh converge timing and end-state comparison)")
    parser.add_argument("--skip-tags", default="",
                        help="tags of site.yml to leave out of every converge and drift run (e.g. verify)")
    parser.add_argument("--connections", default="docker,ssh",
                        help="comma-separated: docker (docker exec), ssh (sshd added to every node); default both")
    parser.add_argument("--no-mitogen", action="store_true",
                        help="leave out the runs with mitogen's strategy (the optional accelerator)")
    parser.add_argument("--note", default="", help="a line for the results table (e.g. the machine's load)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "drift.md"))
    parser.add_argument("--render-from", help="only rewrite the results file from a raw.json of an earlier run")
    opts = parser.parse_args(argv)
    opts.connections = ["inventory"] if opts.inventory else [c for c in opts.connections.split(",") if c]
    unknown = set(opts.connections) - {"docker", "ssh", "inventory"}
    if unknown:
        parser.error("--connections: unknown %s (docker, ssh)" % ", ".join(sorted(unknown)))
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
    # The fresh converge on the baseline's scope (the target compares that one with the baseline's).
    scoped_c = None if (opts.no_fresh or opts.inventory) else Cluster("scoped", opts.gpu_nodes, opts.image)
    clusters = [c for c in (ours_c, base_c, scoped_c) if c]
    fresh, state_cmp, over, over_cmp, extra = [], {}, None, {}, {}
    try:
        if opts.inventory:
            inventories = {"inventory": Path(opts.inventory)}
            hosts = None
        else:
            for cluster in clusters:
                cluster.down()
                log("starting %s" % ", ".join(cluster.container(n) for n in cluster.nodes))
                cluster.up()
            for cluster in clusters:
                cluster.wait_booted()
                if "ssh" in opts.connections:
                    cluster.add_sshd(ssh_key())
                r = playbook(env, cluster.inventory, "molecule/default/prepare.yml", [], "prepare-%s" % cluster.label)
                if r["rc"]:
                    raise SystemExit("prepare failed: see %s" % r["log"])
            r = playbook(env, ours_c.inventory, "playbooks/site.yml", ["--diff", *skip], "converge-ours")
            if r["rc"]:
                raise SystemExit("site.yml failed: see %s" % r["log"])
            fresh.append(("ours (playbooks/site.yml)", r))
            if scoped_c:
                r = playbook(env, scoped_c.inventory, "playbooks/site.yml", ["--diff", *BASELINE_SCOPE],
                             "converge-ours-scoped")
                fresh.append(("ours, baseline scope (%s)" % " ".join(BASELINE_SCOPE), r))
                if not opts.keep:
                    scoped_c.down()
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
                # Its end records the fingerprint the fast path compares with.
                r = playbook(env, base_c.inventory, "playbooks/site.yml", ["--diff", *skip],
                             "converge-ours-over-baseline")
                if r["rc"]:
                    raise SystemExit("site.yml over the baseline failed: see %s" % r["log"])
                over = r
                after = base_c.end_state()
                over_cmp = {node: (b[node], after[node]) for node in base_c.nodes}
            measured = base_c or ours_c
            inventories = {conn: measured.inventories[conn] for conn in opts.connections}
            hosts = measured.nodes

        accel = None if opts.no_mitogen else mitogen_env(env)
        kinds = KINDS + (MITOGEN_KINDS if accel else ())
        results = {"%s/%s" % (conn, key): [] for conn in opts.connections for key, _l, _n, _a in kinds}
        for i in range(1, opts.runs + 1):
            for conn in opts.connections:
                for key, _label, name, args in kinds:
                    results["%s/%s" % (conn, key)].append(playbook(
                        accel if key.endswith("-mitogen") else env, inventories[conn], name,
                        args + ([] if key == "baseline" else skip), "drift-%s-%s-%d" % (conn, key, i)))
        if hosts is None:
            hosts = sorted({rec["host"] for runs in results.values() for r in runs for rec in r["records"]}
                           - {"localhost"})
        if not opts.inventory:
            # The baseline's rerun rewrites files ours manages (its whole daemon.json, its LSF lines): ours'
            # reruns and the drifted-node check go first, on the state ours' last converge recorded.
            extra["reruns"] = reruns(env, measured, skip, opts.reruns, ("ours", "full", "scoped"))
            extra["tamper"] = tamper(env, measured, skip)
            extra["reruns"].update(reruns(env, measured, skip, opts.reruns, ("baseline",)))
            extra["rerun_order"] = "ours-first"
        extra["floors"] = {conn: floor(env, inventories[conn],
                                       [measured.container(hosts[-1])] if conn == "docker" else [],
                                       label="floor-%s" % conn)
                           for conn in opts.connections}
        extra["main_process"] = main_process(env)
    finally:
        if not opts.keep and not opts.inventory:
            for cluster in clusters:
                cluster.down()
    finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    raw = {"opts": {k: getattr(opts, k) for k in ("runs", "gpu_nodes", "forks", "note", "skip_tags", "connections")},
           "info": info, "load_before": load_before, "load_after": loadavg(), "hosts": hosts,
           "fresh": fresh, "state_cmp": state_cmp, "started": started,
           "finished": finished, "over": over, "over_cmp": over_cmp, "results": results, "extra": extra}
    (STATE / "raw.json").write_text(json.dumps(raw))
    write_report(raw, opts.out)
    return 0


def reruns(env, cluster, skip, count, sides):
    """The idempotent rerun (not in check mode) of the given sides' site playbooks on the converged cluster,
    ``count`` times in turn, on the docker connection: ``ours`` (``playbooks/site.yml``: a full converge, which
    takes the drift fast path), ``full`` (the same with ``-e hpc_drift_fast_path=false``: every role on every
    node, the verification container included), ``scoped`` (ours on the baseline's scope) and ``baseline``."""
    argv = {"ours": ("playbooks/site.yml", ["--diff", *skip]),
            "full": ("playbooks/site.yml", ["--diff", "-e", "hpc_drift_fast_path=false", *skip]),
            "scoped": ("playbooks/site.yml", ["--diff", *BASELINE_SCOPE, *skip]),
            "baseline": ("bench/baseline/site.yml", ["--diff"])}
    out = {side: [] for side in sides}
    for i in range(1, count + 1):
        for side in sides:
            name, args = argv[side]
            out[side].append(playbook(env, cluster.inventory, name, args, "rerun-%s-%d" % (
                side if side in ("ours", "baseline") else "ours-" + side, i)))
    return out


ORDER_CAVEAT = (
    "**Not valid in this run**: its reruns went in turn (ours, ours on the baseline's scope, baseline), and the"
    " baseline's rerun rewrites files ours manages (a whole daemon.json, its LSF lines: its changed results). So"
    " ours' later reruns repaired them (their changed results), and the drifted-node check (\"One node drifted\")"
    " started from the baseline's files on every node. bench/drift.py now reruns ours first, then the drifted-node check,"
    " then the baseline.")


def reruns_section(runs, hosts, order=None):
    if not runs or not runs.get("ours"):
        return []
    lines = ["## Idempotent rerun (not in check mode)", "",
             ("`playbooks/site.yml` (as it runs by default, with the fast path off, and on the baseline's scope,"
              " in turn) runs again on the converged cluster, then, after the drifted-node check,"
              " `bench/baseline/site.yml`, docker connection. By default a full converge takes the drift fast path:"
              " a node as its last full converge left it is left out; with `-e hpc_drift_fast_path=false` every"
              " role runs on every node, the verification container included." if order == "ours-first"
              else ORDER_CAVEAT), "",
             "| run | median wall (s) | runs (s) | module executions per host | task results per host |"
             " changed results | exit codes |", "|---|---:|---|---|---|---|---|"]
    for label, key in (("ours (playbooks/site.yml)", "ours"),
                       ("ours, fast path off (-e hpc_drift_fast_path=false)", "full"),
                       ("ours, baseline scope (%s)" % " ".join(BASELINE_SCOPE), "scoped"),
                       ("baseline (bench/baseline/site.yml)", "baseline")):
        if not runs.get(key):
            continue
        s = summarize(runs[key], hosts)
        lines.append("| %s | %.1f | %s | %s | %s | %s | %s |" % (
            label, s["wall"], ", ".join("%.1f" % w for w in s["walls"]),
            ", ".join("%s %s" % (h, fmt_execs(s["execs"][h])) for h in hosts),
            ", ".join("%s %s" % (h, fmt_execs(s["results"][h])) for h in hosts),
            ", ".join(str(c) for c in s["changed"]), ", ".join(str(c) for c in s["rcs"])))
    base = median([r["wall"] for r in runs["baseline"]])
    ours = median([r["wall"] for r in runs["ours"]])
    ratio = ours / base if base else float("nan")
    lines += ["", "**Ratio ours/baseline (median wall): %.2f** (the target: at most 1)." % ratio]
    for key, label in (("full", "Ours with the fast path off"), ("scoped", "Ours on the baseline's scope")):
        if runs.get(key) and base:
            lines.append("%s / baseline: %.2f." % (label, median([r["wall"] for r in runs[key]]) / base))
    lines.append("")
    return lines


def tamper(env, cluster, skip):
    """daemon.json of the first GPU node changed (a key the collection sets, ``log-driver``, removed), the
    drift check run once on the docker connection, the file put back byte for byte (same inode, mode and
    owner), and run again."""
    node, path = cluster.nodes[1], "/etc/docker/daemon.json"
    original = subprocess.run(["docker", "exec", cluster.container(node), "cat", path], stdout=subprocess.PIPE,
                              check=True).stdout
    document = json.loads(original)
    removed = {key: document.pop(key) for key in ("log-driver",) if key in document}

    def write(data):
        subprocess.run(["docker", "exec", "-i", cluster.container(node), "sh", "-c", "cat > %s" % path],
                       input=data, stdout=subprocess.DEVNULL, check=True)

    write(json.dumps(document, indent=2).encode() + b"\n")
    try:
        drifted = playbook(env, cluster.inventory, "playbooks/drift.yml", ["--check", "--diff", *skip],
                           "drift-tampered")
    finally:
        write(original)
    restored = playbook(env, cluster.inventory, "playbooks/drift.yml", ["--check", "--diff", *skip], "drift-put-back")
    how = ", ".join("`\"%s\": %s` removed" % (key, json.dumps(value)) for key, value in removed.items())
    return {"node": node, "path": path, "how": how or "nothing removed: no log-driver key",
            "drifted": drifted, "restored": restored}


def write_report(raw, out):
    """Render a raw.json (this run's, or --render-from) into the results file."""
    opts = argparse.Namespace(**raw["opts"])
    hosts, results = raw["hosts"], raw["results"]
    sums = {key: summarize(runs, hosts) for key, runs in results.items()}
    first = opts.connections[0]
    tasks = [("Where the full check's time goes (%s connection)" % first, task_table(results[first + "/full"], hosts)),
             ("The fast path's tasks (%s connection)" % first, task_table(results[first + "/fast"], hosts))]
    roles = role_table([r["records"] for r in results[first + "/full"]], hosts)
    lines = render(opts, raw["info"], raw["load_before"], raw["load_after"], hosts,
                   [tuple(item) for item in raw["fresh"]], raw["state_cmp"], sums, tasks,
                   raw["started"], raw["finished"], raw["over"], raw["over_cmp"], roles, raw.get("extra"))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines))
    log("wrote %s" % out)


if __name__ == "__main__":
    sys.exit(main())
