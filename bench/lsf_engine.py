#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark of the LSF engine: parse + edit + render, text in, text out.

    python bench/lsf_engine.py [--quick] [--out bench/results/lsf_engine.md]

Cases:
* lsf.cluster with 1k / 10k / 100k hosts (the seed's 8-column Host header, a
  comment every 100 rows, some tab-separated rows): parse+render without edit,
  ``docker`` added to one host, ``docker`` added to every host;
* lsb.applications with 1k profiles: one profile's CONTAINER changed
  (``_lsf_applications.apply_profiles``).

Each case runs N times; the median and the min are reported, with the growth
factor against the next smaller size (target: 10x hosts <= 11x time, and
<= 100 ms for 10k hosts).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from _collection import ROOT, import_collection  # bench/_collection.py: this script's folder is on sys.path

import_collection()

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_cluster_edit import edit_hosts  # noqa: E402
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (  # noqa: E402
    CLUSTER_SHAPES,
    gc_paused,
    parse_document,
)

try:
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_applications import apply_profiles  # noqa: E402
except ImportError:  # pragma: no cover - the lsb.applications model is optional here
    apply_profiles = None


def cluster_text(hosts):
    out = ["# generated lsf.cluster for the benchmark\n", "Begin   ClusterAdmins\n", "Administrators = lsfadmin\n",
           "End    ClusterAdmins\n", "\n", "Begin\tHost\n",
           "HOSTNAME      model  type  server  r1m  mem  swp  RESOURCES    #Keywords\n"]
    for i in range(hosts):
        if i % 100 == 0:
            out.append("# rack %d\n" % (i // 100))
        if i % 7 == 0:
            out.append("host%06d\t!\t!\t1\t3.5\t()\t()\t(mg cs)\n" % i)
        else:
            out.append("host%06d    !      !     1       3.5  ()   ()   (cs)   \n" % i)
    out += ["End     Host\n", "\n", "Begin Parameters\n", "LSF_HOST_ADDR_RANGE=*.*.*.*\n", "End Parameters\n"]
    return "".join(out)


def applications_text(profiles):
    out = ["# generated lsb.applications for the benchmark\n"]
    for i in range(profiles):
        out.append(
            "Begin Application\n"
            "NAME         = app%04d\n"
            "DESCRIPTION  = Docker profile %d\n"
            "CONTAINER    = docker[image(registry:5000/app%04d:1.0) options(--rm --net=host \\\n"
            "                 --ipc=host @/shared/scripts/docker-options.sh)]\n"
            "EXEC_DRIVER  = context[user(lsfadmin)] starter[/lsf/etc/docker-starter.py] \\\n"
            "               controller[/lsf/etc/docker-control.py] monitor[/lsf/etc/docker-monitor.py]\n"
            "End Application\n\n" % (i, i, i))
    return "".join(out)


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "lsf_engine.md"))
    args = parser.parse_args()
    # Shared machines are noisy: enough runs that the median and the min settle.
    reps = {1000: 41, 10000: 21, 100000: 7}
    if args.quick:
        reps = {1000: 5, 10000: 3, 100000: 1}

    load_before = _load()
    # Every case gets a closure; the cases then run in interleaved rounds (one
    # run of each per round, smaller sizes more rounds), so a burst of load from
    # the neighbours lands on all of them alike instead of on one case.
    cases = []
    for case in ("parse+render", "edit 1 host", "edit all hosts"):
        for hosts in (1000, 10000, 100000):
            text = cluster_text(hosts)
            target = ["host%06d" % (hosts // 2 + 1)]
            if case == "parse+render":
                @gc_paused  # as the editors run: the document is built and freed with the collector paused
                def run(text=text):
                    doc = parse_document(text, shapes=CLUSTER_SHAPES)
                    if doc.render() != text:
                        raise SystemExit("round trip broken")
            elif case == "edit 1 host":
                def run(text=text, target=tuple(target)):
                    new, changed, _c, _w = edit_hosts(text, list(target), ["docker"])
                    if changed != list(target):
                        raise SystemExit("edit missed")
            else:
                def run(text=text, hosts=hosts):
                    new, changed, _c, _w = edit_hosts(text, "all", ["docker"])
                    if len(changed) != hosts:
                        raise SystemExit("edit missed")
            cases.append(("lsf.cluster", case, "%d hosts" % hosts, len(text), reps[hosts], run))

    if apply_profiles is not None:
        apps_text = applications_text(1000)
        container = {"runtime": "docker", "image": "registry:5000/app0500:2.0",
                     "options": ["--rm", "--net=host", "--ipc=host"],
                     "options_scripts": ["/shared/scripts/docker-options.sh"]}
        request = [{"name": "app0500", "container": container}]

        def run_apps():
            new, changed, _w = apply_profiles(apps_text, request)
            if changed != ["app0500"]:
                raise SystemExit("profile edit missed: %r" % (changed,))

        cases.append(("lsb.applications", "edit 1 profile", "1000 profiles", len(apps_text),
                      11 if not args.quick else 3, run_apps))

    samples = {index: ([], []) for index in range(len(cases))}
    for round_no in range(max(case[4] for case in cases)):
        for index, (_f, _case, _size, _nbytes, n, fn) in enumerate(cases):
            if round_no < n:
                wall, cpu = samples[index]
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - w0)

    rows = []
    previous = {}
    for index, (f, case, size, nbytes, n, _fn) in enumerate(cases):
        wall, cpu = samples[index]
        median, best = statistics.median(cpu), min(cpu)
        before = previous.get((f, case))
        growth = "" if before is None else "%.1fx / %.1fx" % (median / before[0], best / before[1])
        previous[(f, case)] = (median, best)
        rows.append((f, case, size, nbytes, n, statistics.median(wall), median, best, growth))
        print("%-16s %-15s %14s  cpu median %8.1f ms  min %8.1f ms  %s"
              % (f, case, size, median * 1000, best * 1000, growth))

    ten_k = {r[1]: r[6] for r in rows if r[2] == "10000 hosts"}
    lines = [
        "# LSF engine benchmark",
        "",
        "`python bench/lsf_engine.py` - parse + edit + render, text in and text out (no file I/O).",
        "",
        "- CPU: %s (%d cores visible)" % (cpu_model(), os.cpu_count() or 0),
        "- Python: %s (%s)" % (platform.python_version(), platform.python_implementation()),
        "- OS: %s %s" % (platform.system(), platform.release()),
        "- Run: %s UTC; load average before %s, after %s" % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), load_before, _load()),
        "",
        "CPU time is this process's (`time.process_time`); wall time includes waiting for a busy machine.",
        "",
        "| file | case | size | bytes | runs | CPU median ms | CPU min ms | wall median ms | CPU growth vs 10x smaller (median / min) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for f, case, size, nbytes, n, wall, median, best, growth in rows:
        lines.append("| %s | %s | %s | %d | %d | %.1f | %.1f | %.1f | %s |"
                     % (f, case, size, nbytes, n, median * 1000, best * 1000, wall * 1000, growth))
    lines += [
        "",
        "Target: <= 100 ms for 10k hosts, 10x hosts <= 11x time.",
        "10k hosts (CPU median): " + ", ".join("%s %.1f ms" % (k, v * 1000) for k, v in ten_k.items()) + ".",
        "Growth is given on the medians and on the minimums: on a shared machine the minimum is the steadier"
        " estimate of the work itself.",
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print("written", args.out)


if __name__ == "__main__":
    main()
