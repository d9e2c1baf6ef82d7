#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Scale benchmark: the nightly drift check of a clean site at growing node counts.

    python bench/scale.py [--sizes 10,30,100] [--runs 3] [--forks 25] [--no-baseline] [--keep]
                          [--out bench/results/scale.md]

Unattended, end to end:

1. the seed: a head node and one GPU node from the test-bed image (containers ``bench-scale-*``),
   prepared with molecule/default/prepare.yml, converged by the baseline (``bench/baseline/site.yml``, unless
   ``--no-baseline``) and then by ``playbooks/site.yml`` (the defaults), as bench/drift.py measures both;
2. the GPU node's filesystem committed as an image (its Docker data, a volume, is not: each copy's engine
   starts empty, and records that);
3. for each size N, smallest first: copies of the GPU node started under their own names (gpu02 ... gpuN,
   each its own systemd, Docker engine and host name, on the site's network with the shared LSF_TOP), then
   the LSF master converged for the N-node inventory (the baseline's, then ``site.yml --limit head``: its LSF files list every
   node, and it records its fingerprint with the N-node inputs), then each GPU node's fingerprint recorded
   with one module run (the items the seed's converge recorded, this host's inputs digest and its own
   state: what a full converge records there);
4. at each N, ``--runs`` drift checks as they run nightly (``playbooks/drift.yml --check --diff`` with the
   drift_report callback): wall time, controller CPU (ansible-playbook and its forks), the controller's
   peak memory (the largest process: the main one), task results, module executions; every node must be
   cleared by the fast path, or the run says which differed and why;
5. at the largest N: one node drifted (daemon.json of gpu01, as bench/drift.py does it) and put back, the
   idempotent rerun of the full converge (``site.yml``, not in check mode), and the baseline's way
   (``bench/baseline/site.yml --check --diff``) once, side by side;
6. the fit: wall = a + b * N (least squares over the medians), the marginal cost per node between sizes,
   the 1,000- and 10,000-node figures with their spread; ``bench/results/scale.md``, raw figures in
   .cache/bench-scale/raw.json (``--render-from`` rewrites the results file from it);
7. the nodes and the seed image removed (unless ``--keep``).

Without a Docker engine the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pstats
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import drift  # noqa: E402  pylint: disable=wrong-import-position

ROOT = drift.ROOT
STATE = ROOT / ".cache" / "bench-scale"
SEED_IMAGE = "localhost/hpc-gpu-node-scale:seed"
RECORD = "/var/lib/hpc-gpu-containers/drift-fingerprint.json"
# inotify instances one converged node container holds (systemd and its services, dockerd): 16 on the machine with
# 2 node containers, 248 with 31. At the kernel's default limit, 128, gpu18's systemd (the 19th node) did not start.
INOTIFY_PER_NODE = 8
# Beside the nodes: the engine's and the controller's own (0 measured with 2 nodes; kept for what else runs).
INOTIFY_HEADROOM = 16

# The controller's peak memory: the largest process among ansible-playbook and its forks, the main process.
PEAK_RSS = '''
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
with open(sys.argv[1], "w") as out:
    out.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)
'''

RECORD_PLAYBOOK = """---
# Written by bench/scale.py: what site.yml's last play records after a full converge, on copies of a converged
# GPU node (the items its converge recorded, with their owners; this host's inputs, taken as site.yml's first play
# takes them).
- name: Record each GPU node's drift fingerprint
  hosts: gpu_nodes
  gather_facts: false
  become: true
  tasks:
    - name: Take the digest of this run's inputs
      ansible.builtin.set_fact:
        hpc_drift_inputs: "{{ lookup('hpc.gpu_containers.drift_inputs') }}"
    - name: Record what the roles manage on this node
      hpc.gpu_containers.drift_fingerprint:
        state: record
        inputs: "{{ hpc_drift_inputs }}"
        items: "{{ bench_scale_items }}"
        owned_items: "{{ bench_scale_owned_items }}"
      changed_when: false
"""


def log(msg):
    print("scale-bench: %s" % msg, flush=True)


class Site(drift.Cluster):
    """The seed's head and GPU node, and the GPU node's copies."""

    def __init__(self, image):
        super().__init__("scale", 1, image)

    @staticmethod
    def copies(first, size):
        """The names of GPU nodes ``first`` to ``size``."""
        return ["gpu%02d" % i for i in range(first, size + 1)]

    def adopt(self, size):
        """The copies up to gpu<size> that an earlier run left running (--keep), in the inventory again."""
        self.nodes = ["head"] + self.copies(1, size)
        self.write_inventory()

    def grow(self, size):
        """Copies of gpu01 up to gpu<size>; return the names of the new ones."""
        new = self.copies(len(self.nodes), size)
        for node in new:
            self.start(node, SEED_IMAGE)
            self.nodes.append(node)
        self.write_inventory()
        self.add_lsf_hosts(new)
        return new

    def add_lsf_hosts(self, nodes):
        """A row in the Host section of the shared lsf.cluster for each node the test bed's LSF tree does not list
        (it lists head, gpu01 and gpu02), as a site's LSF installation has them before the collection runs."""
        path = drift.LSF_CONF + "/lsf.cluster.gpucluster"
        listed = set(self.exec_out("head", "awk", "/^Begin[ \t]+Host/{on=1;next} /^End[ \t]+Host/{on=0} on{print $1}",
                                   path).split())
        rows = "".join("%s   !   !   1   ()\\n" % node for node in nodes if node not in listed)
        if rows:
            drift.run(["docker", "exec", self.container("head"), "sed", "-i",
                       "/^End[[:space:]]*Host/i %s" % rows[:-2], path])

    def down(self):
        super().down()
        drift.run(["docker", "image", "rm", SEED_IMAGE], check=False,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def counted(result):
    """A drift.playbook result as the raw figures keep it: its task records replaced by their counts."""
    records = result.pop("records")
    result["results"] = len(records)
    result["execs"] = sum(drift.module_runs(rec) for rec in records)
    return result


def measured(env, site, name, args, label):
    """drift.playbook, counted, with the controller's peak memory (KiB) added."""
    wrapper = STATE / "peak_rss.py"
    wrapper.write_text(PEAK_RSS)
    rss = STATE / ("%s.rss" % label)
    result = drift.playbook(env, site.inventory, name, args, label,
                            prefix=(sys.executable, str(wrapper), str(rss)))
    result["rss_kib"] = int(rss.read_text()) if rss.exists() else 0
    return counted(result)


def must(env, site, name, args, label):
    """drift.playbook for a step the measurement needs: its failure ends the benchmark, naming its log."""
    result = drift.playbook(env, site.inventory, name, args, label)
    if result["rc"]:
        raise SystemExit("%s (%s) failed: see %s" % (name, " ".join(args) or "no options", result["log"]))
    return result


def seed(env, site, baseline):
    site.down()
    log("seed: %s" % ", ".join(site.container(n) for n in site.nodes))
    site.up()
    site.wait_booted()
    steps = [("molecule/default/prepare.yml", [], "seed-prepare")]
    if baseline:
        # As bench/drift.py: the baseline's converge first, ours over it, so that the baseline's check is a clean one.
        steps.append(("bench/baseline/site.yml", ["--diff"], "seed-baseline"))
    steps.append(("playbooks/site.yml", ["--diff"], "seed-converge"))
    for name, args, label in steps:
        must(env, site, name, args, label)
    record = json.loads(site.exec_out("gpu01", "cat", RECORD) or "{}")
    if not record.get("items"):
        raise SystemExit("the seed's converge left no drift record on gpu01 (%s)" % RECORD)
    drift.run(["docker", "commit", site.container("gpu01"), SEED_IMAGE], stdout=subprocess.DEVNULL)
    items = STATE / "items.json"
    items.write_text(json.dumps({"bench_scale_items": record["items"],
                                 "bench_scale_owned_items": record.get("owned_items") or {}}))
    return {"items": len(record["items"]), "items_file": str(items)}


def settle(env, site, size, items_file, baseline):
    """The LSF master converged for ``size`` nodes (by the baseline first, when it is measured), every GPU node's
    fingerprint recorded."""
    began = time.monotonic()
    site.wait_booted(timeout=300 + 10 * len(site.nodes))
    boot = time.monotonic() - began
    if baseline:
        must(env, site, "bench/baseline/site.yml", ["--diff", "--limit", "head"], "head-baseline-%d" % size)
    head = must(env, site, "playbooks/site.yml", ["--diff", "--limit", "head"], "head-%d" % size)
    path = STATE / "record.yml"
    path.write_text(RECORD_PLAYBOOK)
    recorded = must(env, site, str(path), ["-e", "@" + items_file], "record-%d" % size)
    return {"boot": boot, "head": head["wall"], "record": recorded["wall"]}


def fit(points):
    """Least squares wall = a + b * N over (N, wall); the largest relative residual."""
    count = len(points)
    mean_n = sum(n for n, _w in points) / count
    mean_w = sum(w for _n, w in points) / count
    var = sum((n - mean_n) ** 2 for n, _w in points)
    slope = sum((n - mean_n) * (w - mean_w) for n, w in points) / var if var else 0.0
    icept = mean_w - slope * mean_n
    worst = max((abs(icept + slope * n - w) / w for n, w in points if w), default=0.0)
    return icept, slope, worst


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", default="10,30,100", help="GPU node counts, comma-separated (default 10,30,100)")
    parser.add_argument("--runs", type=int, default=3, help="drift checks at each size (default 3)")
    parser.add_argument("--forks", type=int, default=25, help="as the site templates' ansible.cfg (default 25)")
    parser.add_argument("--image", default=drift.IMAGE)
    parser.add_argument("--no-baseline", action="store_true", help="leave out the baseline's check at the largest N")
    parser.add_argument("--profile", action="store_true",
                        help="one more drift check at the largest N with the main process under cProfile")
    parser.add_argument("--keep", action="store_true", help="leave the nodes running")
    parser.add_argument("--note", default="", help="a line for the results file (e.g. the machine's load)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "scale.md"))
    parser.add_argument("--render-from", help="only rewrite the results file from a raw.json of an earlier run")
    opts = parser.parse_args(argv)
    if opts.render_from:
        write_report(json.loads(Path(opts.render_from).read_text()), opts.out)
        return 0
    sizes = sorted({int(size) for size in opts.sizes.split(",") if size})
    if not sizes or sizes[0] < 1:
        parser.error("--sizes: one or more GPU node counts of at least 1")
    if not drift.docker_ok():
        log("SKIPPED: no Docker engine answers (docker info failed)")
        return 0
    check_inotify(parser, sizes[-1] + 1)
    drift.STATE = STATE  # the shared helpers keep their logs and reports under this benchmark's state
    STATE.mkdir(parents=True, exist_ok=True)
    env = drift.ansible_env(opts.forks)
    raw = {"opts": {"sizes": sizes, "runs": opts.runs, "forks": opts.forks, "note": opts.note},
           "info": drift.machine(), "load_before": drift.loadavg(),
           "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
           "sizes": {}, "largest": {}}
    site = Site(opts.image)
    try:
        raw["seed"] = seed(env, site, not opts.no_baseline)
        for size in sizes:
            log("N=%d: starting %d copies" % (size, len(site.grow(size))))
            entry = {"settle": settle(env, site, size, raw["seed"]["items_file"], not opts.no_baseline), "runs": []}
            for i in range(1, opts.runs + 1):
                entry["runs"].append(measured(env, site, "playbooks/drift.yml", ["--check", "--diff"],
                                              "drift-%d-%d" % (size, i)))
            entry["memory"] = memory_in_use()
            raw["sizes"][str(size)] = entry
            write_raw(raw)
        largest = raw["largest"]
        tampered = drift.tamper(env, site, [])
        largest["tamper"] = {key: counted(value) if key in ("drifted", "restored") else value
                             for key, value in tampered.items()}
        largest["rerun"] = measured(env, site, "playbooks/site.yml", ["--diff"], "rerun-%d" % sizes[-1])
        if opts.profile:
            largest["profile"] = profile(env, site, sizes[-1])
        if not opts.no_baseline:
            largest["baseline"] = measured(env, site, "bench/baseline/site.yml", ["--check", "--diff"],
                                           "baseline-%d" % sizes[-1])
    finally:
        finish(raw, site, opts.keep)
    write_report(raw, opts.out)
    return 0


def finish(raw, site, keep):
    """The end of a benchmark's run, also of one that failed: the load and the time, the raw figures written, the
    nodes removed unless ``keep``."""
    raw["load_after"] = drift.loadavg()
    raw["finished"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    write_raw(raw)
    if not keep:
        site.down()


def profile(env, site, size, top=15):
    """One drift check with ansible-playbook's main process under cProfile (its forks are not profiled): the
    functions with the most own time, and the run's wall time (the profiler's overhead included)."""
    out = STATE / ("profile-%d.pstats" % size)
    result = drift.playbook(env, site.inventory, "playbooks/drift.yml", ["--check", "--diff"], "profile-%d" % size,
                            prefix=(sys.executable, "-m", "cProfile", "-o", str(out)))
    stats = pstats.Stats(str(out))
    total = stats.total_tt
    rows = []
    for (path, line, func), (_cc, calls, own, cumulative, _callers) in sorted(
            stats.stats.items(), key=lambda item: item[1][2], reverse=True)[:top]:
        where = "/".join(Path(path).parts[-3:]) if path != "~" else "(built-in)"
        rows.append({"function": "%s:%d %s" % (where, line, func), "calls": calls, "own": own,
                     "cumulative": cumulative})
    # The strategy's main thread sleeps while it waits for the forks' results; the rest is its work.
    waiting = sum(own for (_path, _line, func), (_cc, _calls, own, _cum, _callers) in stats.stats.items()
                  if func == "<built-in method time.sleep>")
    return {"wall": result["wall"], "rc": result["rc"], "main_wall": total, "waiting": waiting,
            "results": len(result["records"]), "top": rows}


def memory_in_use():
    """The machine's memory in use, MiB (MemTotal - MemAvailable): the nodes, their engines and the controller."""
    fields = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        name, _sep, value = line.partition(":")
        fields[name] = int(value.split()[0])
    return round((fields["MemTotal"] - fields["MemAvailable"]) / 1024)


def differences_text(run):
    """The hosts of a drift check that the fast path did not clear, each with its first three differences
    ("gpu01: path:/etc/docker/daemon.json; head: ..."); "" when it cleared every one."""
    differences = (run["fast_path"] or {}).get("differences") or {}
    return "; ".join("%s: %s" % (host, ", ".join(diff[:3])) for host, diff in sorted(differences.items()) if diff)


def check_inotify(parser, nodes):
    """Stop (parser.error) when the kernel's inotify limit cannot hold ``nodes`` node containers."""
    limit = int(Path("/proc/sys/fs/inotify/max_user_instances").read_text())
    needed = INOTIFY_PER_NODE * nodes
    if limit < needed + INOTIFY_HEADROOM:
        parser.error("%d node containers need about %d inotify instances (their systemd and engines), "
                     "fs.inotify.max_user_instances is %d: raise it (sysctl -w fs.inotify.max_user_instances=%d) "
                     "or measure fewer nodes" % (nodes, needed, limit, needed + INOTIFY_HEADROOM))


def write_raw(raw):
    (STATE / "raw.json").write_text(json.dumps(raw, indent=1))


def write_report(raw, out, renderer=None):
    """The results file ``out``, by ``renderer`` (this benchmark's render by default)."""
    lines = (renderer or render)(raw)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("\n".join(lines) + "\n")
    log("wrote %s" % out)


def render(raw):
    opts, info = raw["opts"], raw["info"]
    lines = ["# The drift check at scale (bench/scale.py)", "",
             "`python bench/scale.py --sizes %s --runs %d --forks %d`, %s to %s UTC; %d CPUs (%s), %s, Docker %s, %s, "
             "Python %s; load %s before, %s after.%s" % (
                 ",".join(str(s) for s in opts["sizes"]), opts["runs"], opts["forks"], raw["started"],
                 raw.get("finished", "?"), info["cpus"], info["model"], info["mem"], info["engine"],
                 info["ansible"], info["python"], raw["load_before"], raw.get("load_after", "?"),
                 (" " + opts["note"]) if opts.get("note") else ""), "",
             "Every GPU node is a copy of one converged GPU node (its own systemd, Docker engine and host name; the "
             "copies' engines start without the seed's images, and each node's record says so), with its "
             "fingerprint recorded by one module run; the LSF master is converged for each N. "
             "Nodes below = GPU nodes + the head.", "",
             "## The nightly drift check of a clean site", "",
             "| GPU nodes | wall (median) | runs | controller CPU | peak memory (main process) | task results |"
             " module executions | cleared by the fast path | per node | machine memory in use |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    points = []
    for size in opts["sizes"]:
        entry = raw["sizes"].get(str(size))
        if not entry:
            lines.append("| %d | not reached | | | | | | | | |" % size)
            continue
        runs = entry["runs"]
        wall = drift.median([r["wall"] for r in runs])
        points.append((size + 1, wall))
        clean = sorted({(r["fast_path"] or {}).get("clean", 0) for r in runs})
        lines.append("| %d | %.1f s | %s | %.1f s | %.0f MiB | %d | %d | %s of %d | %.2f s | %d MiB |" % (
            size, wall, ", ".join("%.1f" % r["wall"] for r in runs), drift.median([r["cpu"] for r in runs]),
            max(r["rss_kib"] for r in runs) / 1024, drift.median([r["results"] for r in runs]),
            drift.median([r["execs"] for r in runs]), "/".join(str(c) for c in clean), size + 1, wall / (size + 1),
            entry["memory"]))
    lines += [""]
    for size in opts["sizes"]:
        for number, run in enumerate((raw["sizes"].get(str(size)) or {}).get("runs", []), 1):
            differing = differences_text(run)
            if differing or run["rc"]:
                lines += ["**At %d GPU nodes, run %d was not a clean site's check** (exit %d): %s." % (
                    size, number, run["rc"], differing or "see its log"), ""]
    if len(points) >= 2:
        icept, slope, worst = fit(points)
        margins = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(points, points[1:])]
        low, high = min(margins + [slope]), max(margins + [slope])
        lines += ["## Growth", "",
                  "Least squares over the medians: **wall = %.1f s + %.3f s × nodes** (largest residual %.0f %%). "
                  "Marginal cost per node between sizes: %s." % (
                      icept, slope, worst * 100,
                      ", ".join("%d→%d: %.3f s" % (a[0], b[0], m) for a, b, m in zip(points, points[1:], margins))),
                  "",
                  "At this machine's %d cores and %d forks: 1,000 nodes ≈ **%.0f s** (%.0f-%.0f s with the "
                  "lowest and highest marginal cost), 10,000 nodes ≈ %.0f s (%.0f-%.0f s), in one run; "
                  "docs/scale.md says how a site splits that." % (
                      raw["info"]["cpus"], opts["forks"], icept + slope * 1000, icept + low * 1000,
                      icept + high * 1000, icept + slope * 10000, icept + low * 10000, icept + high * 10000), ""]
    largest = raw.get("largest") or {}
    if largest:
        size = opts["sizes"][-1]
        lines += ["## At %d GPU nodes" % size, "", "| run | wall | controller CPU | task results | result |",
                  "|---|---:|---:|---:|---|"]
        fast = raw["sizes"][str(size)]["runs"]
        lines.append("| drift check, clean (median) | %.1f s | %.1f s | %d | every run exit %s |" % (
            drift.median([r["wall"] for r in fast]), drift.median([r["cpu"] for r in fast]),
            drift.median([r["results"] for r in fast]), "/".join(sorted({str(r["rc"]) for r in fast}))))
        tamper = largest.get("tamper") or {}
        for key, what in (("drifted", "one node drifted (%s on %s, %s)" % (
                tamper.get("path"), tamper.get("node"), tamper.get("how"))), ("restored", "the file put back")):
            run = tamper.get(key)
            if run:
                lines.append("| %s | %.1f s | %.1f s | %d | exit %d; cleared by the fast path: %s; differing: %s |" % (
                    what, run["wall"], run["cpu"], run["results"], run["rc"],
                    (run["fast_path"] or {}).get("clean", "-"), differences_text(run) or "none"))
        for key, what in (("rerun", "full converge, idempotent rerun (`site.yml`)"),
                          ("baseline", "the baseline's way (`bench/baseline/site.yml --check --diff`)")):
            run = largest.get(key)
            if run:
                lines.append("| %s | %.1f s | %.1f s | %d | exit %d, %d changed |" % (
                    what, run["wall"], run["cpu"], run["results"], run["rc"], run["changed"]))
        prof = largest.get("profile")
        if prof:
            lines += ["", "### The main process under cProfile (one drift check at %d GPU nodes)" % size, "",
                      "Wall %.1f s with the profiler, exit %d; the main process's profiled time %.1f s (its clock, profiler included); the functions with "
                      "the most own time:" % (prof["wall"], prof["rc"], prof["main_wall"]), "",
                      "| function | calls | own | cumulative |", "|---|---:|---:|---:|"]
            lines += ["| `%s` | %d | %.2f s | %.2f s |" % (row["function"], row["calls"], row["own"], row["cumulative"])
                      for row in prof["top"]]
            if prof.get("results"):
                busy = prof["main_wall"] - prof.get("waiting", 0.0)
                lines += ["", "The main thread's time less its waits for the forks (`time.sleep`): %.1f s for "
                          "%d task results, **%.1f ms per task result**. The profiler's clock is wall time, and here "
                          "the main thread shares %d cores with %d forks and the nodes: an upper bound of its own "
                          "work (bench/results/drift.md's \"On paper\" measured 8.5 ms per result on debug tasks)." % (
                              busy, prof["results"], 1000 * busy / prof["results"], raw["info"]["cpus"], opts["forks"])]
        base = largest.get("baseline")
        if base and fast:
            lines += ["", "Ours against the baseline's way at %d GPU nodes: %.2f of its wall time." % (
                size, drift.median([r["wall"] for r in fast]) / base["wall"])]
            if base["rc"]:
                lines += ["", "The baseline's check failed (exit %d, its log: %s): a task it did not finish on some "
                          "nodes left the tasks after it unrun there, so its time is a lower bound." % (
                              base["rc"], Path(base["log"]).name)]
        lines.append("")
    return lines


if __name__ == "__main__":
    sys.exit(main())
