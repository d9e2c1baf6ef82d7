#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seed 001's comparison as a command: one workload bare metal, in Docker, rootless podman, udocker, charliecloud.

    python3 bench/runtimes.py --rootfs ROOTFS.tar --user USER [--runs N] [--workload cpu|gpu]
                              [--gpu-command CMD] [--where TEXT] [--out bench/results/runtimes.md]
    python3 bench/runtimes.py --node CONTAINER --rootfs ROOTFS.tar --user USER ...

``--node`` runs the same measurement inside a node container of the test bed
(``docker cp`` of this script and the rootfs, then ``docker exec``) and writes
the report here. Without ``--rootfs`` and ``--user`` (``make bench``) it
says what it needs and exits 0: it measures nothing by itself.

Run it as root on a node that the ``rootless_runtimes`` role converged (and that
has a Docker engine for the Docker column). ``ROOTFS.tar`` is a root filesystem
with ``python3`` (for ``--workload gpu`` one with the GPU framework); it is
imported once into each runtime, outside the timings:

* bare metal - the workload as USER on the node;
* docker - ``docker run --rm`` (root's engine; ``--gpus all`` for GPU runs);
* podman (rootless) - ``podman run --rm --userns=keep-id`` as USER
  (``--device nvidia.com/gpu=all`` for GPU runs: the CDI spec the role wrote);
* podman (root) - ``podman run --rm`` as root;
* udocker - ``udocker run`` as USER in execution mode P1 (``udocker setup
  --nvidia`` first for GPU runs, its output checked);
* charliecloud - ``ch-run`` on the unpacked tree as USER, when ``ch-run`` exists.

Each runtime runs the workload N times, one after the other. Two numbers per
run: the wall time of the whole command (start-up included) and the compute
time the workload measures itself (``compute_s=``), so start-up cost and
steady-state speed are told apart. The table gives median, min-max and the
ratio of the medians to bare metal. Runtimes that are not installed, or
whose first run fails, are listed with the error and left out of the table.

On a GPU node, ``--workload gpu --gpu-command 'python3 /bench/tf_cnn.py'``
times that command instead; it must print ``compute_s=<seconds>`` (the
seed's scripts print their mean time per batch: wrap them so).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

CPU_WORKLOAD = (
    "import time\n"
    "t = time.perf_counter()\n"
    "s = 0\n"
    "for i in range(3_000_000):\n"
    "    s += i * i % 7\n"
    "print('compute_s=%.4f' % (time.perf_counter() - t))\n"
)
IMAGE = "localhost/hpc/bench-runtimes:1"
UDOCKER_NAME = "bench-runtimes"


def run(argv, user=None, check=True, timeout=600):
    if user:
        argv = ["runuser", "-l", user, "-c", " ".join(shlex.quote(a) for a in argv)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[-400:]
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv[-3:]), proc.returncode, detail))
    return proc


def home_of(user):
    return run(["sh", "-c", "getent passwd %s | cut -d: -f6" % shlex.quote(user)]).stdout.strip()


def setup(args):
    """Import the rootfs into every runtime; return {runtime: error or None}."""
    status = {}
    home = home_of(args.user)
    tar = os.path.join(home, "bench-rootfs.tar")
    shutil.copyfile(args.rootfs, tar)
    os.chmod(tar, 0o644)
    steps = {
        "docker": lambda: run(["docker", "import", args.rootfs, IMAGE]),
        "podman (root)": lambda: run(["podman", "import", "-q", args.rootfs, IMAGE]),
        "podman (rootless)": lambda: run(["podman", "import", "-q", tar, IMAGE], user=args.user),
        "udocker": lambda: run(["sh", "-c", "udocker -q rm %s >/dev/null 2>&1; udocker -q rmi bench-runtimes:1 >/dev/null 2>&1; "
                                "udocker -q import %s bench-runtimes:1 "
                                "&& udocker -q create --name=%s bench-runtimes:1" % (UDOCKER_NAME, tar, UDOCKER_NAME)],
                               user=args.user),
        "charliecloud": lambda: run(["sh", "-c", "rm -rf $HOME/bench-ch && mkdir $HOME/bench-ch && "
                                     "tar -C $HOME/bench-ch -xf %s 2>/dev/null; test -x $HOME/bench-ch/usr/bin/python3"
                                     % tar], user=args.user),
    }
    tools = {"docker": "docker", "podman (root)": "podman", "podman (rootless)": "podman",
             "udocker": "udocker", "charliecloud": "ch-run"}
    for name, step in steps.items():
        if not shutil.which(tools[name]):
            status[name] = "%s is not installed" % tools[name]
            continue
        try:
            step()
            status[name] = None
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            status[name] = str(err)
    if args.workload == "gpu" and status.get("udocker") is None:
        out = run(["udocker", "setup", "--nvidia", UDOCKER_NAME], user=args.user, check=False)
        # Its exit code is 0 even when it found no NVIDIA library: read what it says.
        if "nvidia" not in (out.stdout + out.stderr).lower() or "not found" in (out.stdout + out.stderr).lower():
            status["udocker"] = "udocker setup --nvidia found no NVIDIA libraries: %s" % (out.stdout + out.stderr)[-300:]
    return status


def commands(args):
    home = home_of(args.user)
    work = args.gpu_command.split() if args.workload == "gpu" else ["python3", "-c", CPU_WORKLOAD]
    gpu = args.workload == "gpu"
    return {
        "bare metal": (work, args.user),
        "docker": (["docker", "run", "--rm", "--network=none"] + (["--gpus", "all"] if gpu else []) + [IMAGE] + work, None),
        "podman (rootless)": (["podman", "run", "--rm", "--network=none", "--userns=keep-id"]
                              + (["--device", "nvidia.com/gpu=all"] if gpu else []) + [IMAGE] + work, args.user),
        "podman (root)": (["podman", "run", "--rm", "--network=none"]
                          + (["--device", "nvidia.com/gpu=all"] if gpu else []) + [IMAGE] + work, None),
        "udocker": (["udocker", "-q", "run", "--nobanner", UDOCKER_NAME] + work, args.user),
        "charliecloud": (["ch-run", os.path.join(home, "bench-ch"), "--"] + work, args.user),
    }


def measure(argv, user):
    start = time.perf_counter()
    out = run(argv, user=user)
    wall = time.perf_counter() - start
    compute = None
    for line in out.stdout.splitlines():
        if line.startswith("compute_s="):
            compute = float(line.split("=", 1)[1])
    if compute is None:
        raise RuntimeError("no compute_s= in the output: %r" % out.stdout[-200:])
    return wall, compute


def fmt(values):
    return "%.3f" % statistics.median(values), "%.3f-%.3f" % (min(values), max(values))


def in_node(args):
    """Copy this script and the rootfs into a node container, run there, write the report here."""
    where = "/var/tmp/bench-runtimes"
    run(["docker", "exec", args.node, "mkdir", "-p", where])
    run(["docker", "cp", os.path.abspath(__file__), "%s:%s/runtimes.py" % (args.node, where)])
    run(["docker", "cp", args.rootfs, "%s:%s/rootfs.tar" % (args.node, where)])
    argv = ["docker", "exec", args.node, "python3", where + "/runtimes.py", "--rootfs", where + "/rootfs.tar",
            "--user", args.user, "--runs", str(args.runs), "--workload", args.workload, "--out", "-",
            "--where", args.where or "node container %s" % args.node]
    if args.gpu_command:
        argv += ["--gpu-command", args.gpu_command]
    write_report(run(argv, timeout=3600).stdout, args.out)
    return 0


def write_report(text, out):
    """The report to ``out``, a file, or stdout for ``-``."""
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w", encoding="utf-8") as handle:
            handle.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rootfs", help="root filesystem tar with python3")
    parser.add_argument("--user", help="unprivileged user for bare metal, rootless podman, udocker")
    parser.add_argument("--node", help="run inside this node container (docker exec) and write the report here")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workload", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--gpu-command", default="", help="GPU workload command (prints compute_s=)")
    parser.add_argument("--where", default="", help="where this ran, for the report")
    parser.add_argument("--out", default="-")
    args = parser.parse_args()
    if not args.rootfs or not args.user:
        print("bench/runtimes.py: SKIPPED, nothing measured: needs --rootfs ROOTFS.tar and --user USER on a node "
              "converged with the rootless_runtimes role (or --node CONTAINER); see the docstring.")
        return 0
    if args.node:
        return in_node(args)
    if args.workload == "gpu" and not args.gpu_command:
        parser.error("--workload gpu needs --gpu-command")
    if os.geteuid() != 0:
        parser.error("run as root (Docker and root podman; the others run as --user)")

    began = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    status = setup(args)
    status["bare metal"] = None
    results = {}
    for name, (argv, user) in commands(args).items():
        if status.get(name):
            continue
        try:
            measure(argv, user)  # warm-up, not counted (page cache, first layer mount)
            timings = [measure(argv, user) for _run in range(args.runs)]
        except (RuntimeError, subprocess.TimeoutExpired) as err:
            status[name] = str(err)
            continue
        results[name] = ([wall for wall, _c in timings], [compute for _w, compute in timings])
    ended = datetime.datetime.now(datetime.timezone.utc)

    base_wall = statistics.median(results["bare metal"][0])
    base_compute = statistics.median(results["bare metal"][1])
    lines = [
        "# Runtimes: bare metal, Docker, podman, udocker, charliecloud",
        "",
        "Generated by `bench/runtimes.py --runs %d --workload %s` (%s to %s UTC)."
        % (args.runs, args.workload, began.strftime("%Y-%m-%d %H:%M"), ended.strftime("%H:%M")),
        "",
        "| | |",
        "|---|---|",
        "| where | %s |" % (args.where or platform.node()),
        "| machine | %d CPUs, kernel %s, %s |" % (os.cpu_count(), platform.release(), platform.machine()),
        "| load average before / after | %s / %s |" % (" ".join("%.2f" % x for x in load_before),
                                                       " ".join("%.2f" % x for x in os.getloadavg())),
        "| workload | %s |" % ("`python3`: 3,000,000 iterations of `s += i * i % 7`, timed inside (`compute_s`)"
                               if args.workload == "cpu" else "`%s`" % args.gpu_command),
        "| runs | %d per runtime after one warm-up run, one runtime after the other |" % args.runs,
        "",
        "Wall: the whole command, container start-up and removal included. Compute: what the workload "
        "measured itself. Ratios are medians over the bare-metal median (1.00 = no overhead).",
        "",
        "| runtime | wall median (s) | wall min-max | wall / bare | compute median (s) | compute min-max | compute / bare |",
        "|---|---:|---|---:|---:|---|---:|",
    ]
    for name, (walls, computes) in results.items():
        wm, wr = fmt(walls)
        cm, cr = fmt(computes)
        lines.append("| %s | %s | %s | %.2f | %s | %s | %.2f |" % (
            name, wm, wr, statistics.median(walls) / base_wall, cm, cr, statistics.median(computes) / base_compute))
    skipped = {k: v for k, v in status.items() if v}
    if skipped:
        lines += ["", "Not measured:", ""]
        lines += ["* %s: %s" % (k, v.replace("\n", " ")) for k, v in skipped.items()]
    write_report("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
