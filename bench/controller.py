#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller benchmark: what the controller's own settings do to the nightly drift check of a large clean site.

    python bench/controller.py [--size 100] [--runs 3] [--keep] [--out bench/results/controller.md]

Unattended, end to end, on bench/scale.py's site (a converged GPU node copied ``--size`` times, the LSF master
converged for them, every node's fingerprint recorded; no baseline):

1. the drift check (``playbooks/drift.yml --check --diff``, drift_report callback) under each of the variants
   below, ``--runs`` rounds, each round every variant once in turn (so that the machine's pace, which changes
   over minutes, falls on all of them alike): wall time, controller CPU (ansible-playbook and its forks), the main
   process's peak memory, task results, and the exit code, which must be 0 with every node cleared by the fast
   path, or the run says which differed;
2. ``bench/results/controller.md``: medians and the ratio of each variant to the first (the site templates'
   settings), raw figures in .cache/bench-controller/raw.json (``--render-from`` rewrites the results file);
3. the nodes and the seed image removed (unless ``--keep``).

The variants change only what a site's ansible.cfg or environment changes: forks, the progress callback,
the default stdout callback's listing of ok and skipped hosts. Not measured, and why (the results file says it
too): a ``free`` or ``host_pinned`` strategy (the fast path play decides the LSF master after every node's
fingerprint is in: a strategy that lets hosts run ahead would decide it early, so the playbooks do not allow it);
fact caching (the drift check of a clean node gathers no facts).

Without a Docker engine the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import drift  # noqa: E402  pylint: disable=wrong-import-position
import scale  # noqa: E402  pylint: disable=wrong-import-position

ROOT = drift.ROOT
STATE = ROOT / ".cache" / "bench-controller"

# name, what it is, environment over the site templates' settings (forks 25, the progress callback on, the
# default stdout callback listing every host's result).
VARIANTS = (
    ("template", "the site templates' ansible.cfg: forks 25, the progress callback, every result listed", {}),
    ("forks-50", "forks 50", {"ANSIBLE_FORKS": "50"}),
    ("forks-100", "forks 100 (docs/scale.md's setting for a controller with the cores for it)",
     {"ANSIBLE_FORKS": "100"}),
    ("quiet", "ok and skipped results not listed (display_ok_hosts, display_skipped_hosts false)",
     {"ANSIBLE_DISPLAY_OK_HOSTS": "0", "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "0"}),
    ("no-progress", "without the progress callback", {"BENCH_CALLBACKS_EXTRA": ""}),
)
FORKS = 25


def log(msg):
    print("controller-bench: %s" % msg, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--size", type=int, default=100, help="GPU nodes (default 100)")
    parser.add_argument("--runs", type=int, default=3, help="rounds of every variant (default 3)")
    parser.add_argument("--image", default=drift.IMAGE)
    parser.add_argument("--variants", default=",".join(name for name, _what, _env in VARIANTS),
                        help="the variants to run, comma-separated, in this order (default: all)")
    parser.add_argument("--keep", action="store_true", help="leave the nodes running")
    parser.add_argument("--reuse", action="store_true",
                        help="measure on the nodes an earlier --keep run left (the LSF master converged and every "
                             "fingerprint recorded again: the collection may have changed since)")
    parser.add_argument("--note", default="", help="a line for the results file (e.g. the machine's load)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "controller.md"))
    parser.add_argument("--render-from", help="only rewrite the results file from a raw.json of an earlier run")
    opts = parser.parse_args(argv)
    if opts.render_from:
        scale.write_report(json.loads(Path(opts.render_from).read_text()), opts.out, render)
        return 0
    chosen = [name for name in opts.variants.split(",") if name]
    unknown = sorted(set(chosen) - {name for name, _what, _env in VARIANTS})
    if unknown or not chosen:
        parser.error("--variants: one or more of %s (not %s)" % (
            ", ".join(name for name, _what, _env in VARIANTS), ", ".join(unknown) or "none"))
    variants = [next(v for v in VARIANTS if v[0] == name) for name in chosen]
    if opts.size < 1:
        parser.error("--size: at least 1 GPU node")
    if not drift.docker_ok():
        log("SKIPPED: no Docker engine answers (docker info failed)")
        return 0
    scale.check_inotify(parser, opts.size + 1)
    # The shared helpers keep their logs, reports and the seed's items under this benchmark's state.
    drift.STATE = scale.STATE = STATE
    STATE.mkdir(parents=True, exist_ok=True)
    env = drift.ansible_env(FORKS)
    env["BENCH_CALLBACKS_EXTRA"] = "hpc.gpu_containers.progress"
    raw = {"opts": {"size": opts.size, "runs": opts.runs, "note": opts.note, "variants": chosen}, "info": drift.machine(),
           "load_before": drift.loadavg(),
           "started": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
           "variants": {name: {"what": what, "env": extra, "runs": []} for name, what, extra in variants}}
    site = scale.Site(opts.image)
    try:
        if opts.reuse:
            site.adopt(opts.size)
            raw["seed"] = {"items_file": str(STATE / "items.json"), "reused": True}
        else:
            raw["seed"] = scale.seed(env, site, False)
            log("starting %d copies" % len(site.grow(opts.size)))
        raw["settle"] = scale.settle(env, site, opts.size, raw["seed"]["items_file"], False)
        for round_ in range(1, opts.runs + 1):
            for name, _what, extra in variants:
                raw["variants"][name]["runs"].append(scale.measured(
                    dict(env, **extra), site, "playbooks/drift.yml", ["--check", "--diff"],
                    "%s-%d" % (name, round_)))
                scale.write_raw(raw)
        raw["memory"] = scale.memory_in_use()
    finally:
        scale.finish(raw, site, opts.keep)
    scale.write_report(raw, opts.out, render)
    return 0


def render(raw):
    opts, info = raw["opts"], raw["info"]
    lines = ["# The controller's settings and the drift check (bench/controller.py)", "",
             "`python bench/controller.py --size %d --runs %d%s%s`, %s to %s UTC; %d CPUs (%s), %s, Docker %s, %s, "
             "Python %s; load %s before, %s after.%s" % (
                 opts["size"], opts["runs"],
                 "" if opts.get("variants", list(raw["variants"])) == [v[0] for v in VARIANTS]
                 else " --variants " + ",".join(opts["variants"]),
                 " --reuse" if (raw.get("seed") or {}).get("reused") else "", raw["started"], raw.get("finished", "?"),
                 info["cpus"], info["model"],
                 info["mem"], info["engine"], info["ansible"], info["python"], raw["load_before"],
                 raw.get("load_after", "?"), (" " + opts["note"]) if opts.get("note") else ""), "",
             "bench/scale.py's site at %d GPU nodes and the head (copies of one converged GPU node, the LSF master "
             "converged for them, every fingerprint recorded); the nightly drift check of that clean site under "
             "each variant, %d rounds of every variant in turn. Controller CPU: ansible-playbook and its forks. "
             "Ratio: the variant's median wall time over the first one's." % (opts["size"], opts["runs"]), "",
             "| variant | settings | wall (median) | runs | ratio | controller CPU | peak memory (main process) "
             "| task results | cleared by the fast path | exit |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---|"]
    first = None
    problems = []
    for name, entry in raw["variants"].items():
        runs = entry["runs"]
        if not runs:
            lines.append("| %s | %s | not reached | | | | | | | |" % (name, entry["what"]))
            continue
        wall = drift.median([r["wall"] for r in runs])
        first = first or wall
        clean = sorted({(r["fast_path"] or {}).get("clean", 0) for r in runs})
        lines.append("| %s | %s | %.1f s | %s | %.2f | %.1f s | %.0f MiB | %d | %s of %d | %s |" % (
            name, entry["what"], wall, ", ".join("%.1f" % r["wall"] for r in runs), wall / first,
            drift.median([r["cpu"] for r in runs]), max(r["rss_kib"] for r in runs) / 1024,
            drift.median([r["results"] for r in runs]), "/".join(str(c) for c in clean), opts["size"] + 1,
            "/".join(sorted({str(r["rc"]) for r in runs}))))
        for number, run in enumerate(runs, 1):
            differing = scale.differences_text(run)
            if differing or run["rc"]:
                problems.append("**%s, round %d was not a clean site's check** (exit %d): %s." % (
                    name, number, run["rc"], differing or "see its log"))
    lines += [""] + [line for problem in problems for line in (problem, "")]
    lines += ["Not measured: a `free` or `host_pinned` strategy (the fast path play decides whether the LSF master "
              "is clean once every node's fingerprint is in; a strategy that lets hosts run ahead would decide it "
              "early, so the playbooks keep the linear strategy), and fact caching (the check of a clean node "
              "gathers no facts).", ""]
    return lines


if __name__ == "__main__":
    sys.exit(main())
