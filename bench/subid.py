#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark of subid_ranges' model: /etc/subuid with 5,000 / 20,000 / 100,000 users, text in, text out.

    python bench/subid.py [--before REV] [--old-max-users 20000] [--runs 5] [--out bench/results/subid.md]

Cases, each on a file where every user owns one range of 40,000 ids (100,000 ranges of 65,536 would not fit
in the 32-bit id space):
* rerun: every user of the file asked for again (the steady state of each converge);
* add 10: ten new users asked for besides (a converge after new accounts).

``--before REV`` loads ``plugins/module_utils/_subid.py`` as it was at REV (``git show``) and times it
beside the current model in the same run, on the same text; sizes above ``--old-max-users`` are left
out for the old model (quadratic in the file, and for each new user quadratic again: minutes per run),
and so are sizes above ``--old-max-add`` for the add case.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

from _collection import ROOT, import_collection  # bench/_collection.py: this script's folder is on sys.path

MODEL = "plugins/module_utils/_subid.py"

import_collection()

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _subid  # noqa: E402


def old_model(rev):
    source = subprocess.run(["git", "-C", str(ROOT), "show", "%s:%s" % (rev, MODEL)], check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType("_subid_before")
    exec(compile(source, "%s@%s" % (MODEL, rev), "exec"), module.__dict__)  # noqa: S102 - our own file at REV
    return module


# 100,000 users of 65,536 ids each would not fit in the 32-bit id space: every size uses 40,000 ids a user.
COUNT = 40000
START = 120000


def subuid_text(users):
    return "".join("user%d:%d:%d\n" % (i, START + i * COUNT, COUNT) for i in range(users))


def measure(model, text, users, runs):
    times = []
    result = None
    while len(times) < runs:
        started = time.process_time()
        result = model.ensure_ranges(text, users, count=COUNT, start=START)
        times.append(time.process_time() - started)
    return times, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="git revision whose model is timed beside the current one")
    parser.add_argument("--old-max-users", type=int, default=20000, help="largest file the old model reruns")
    parser.add_argument("--old-max-add", type=int, default=5000, help="largest file the old model adds users to")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="5000,20000,100000")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    models = [("after", _subid)]
    if args.before:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.before], check=True,
                             capture_output=True, text=True).stdout.strip()
        models.insert(0, ("before (%s)" % rev, old_model(rev)))
    load_before = os.getloadavg()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        text = subuid_text(size)
        existing = ["user%d" % i for i in range(size)]
        for case, users in (("rerun", existing), ("add 10", existing + ["new%d" % i for i in range(10)])):
            outputs = {}
            for label, model in models:
                if label != "after" and size > (args.old_max_users if case == "rerun" else args.old_max_add):
                    rows.append((size, case, label, None, None, None))
                    continue
                runs = args.runs if label == "after" else max(1, min(args.runs, 3 if size <= 5000 else 1))
                times, result = measure(model, text, users, runs)
                outputs[label] = result[:2]
                rows.append((size, case, label, runs, statistics.median(times), min(times)))
                print("%7d users  %-7s %-16s runs %d  median %.3f s" % (size, case, label, runs, statistics.median(times)),
                      flush=True)
            if len(set(repr(o) for o in outputs.values())) > 1:
                sys.exit("the models disagree on %d users, %s" % (size, case))
    load_after = os.getloadavg()
    lines = [
        "# subid_ranges benchmark",
        "",
        "`python bench/subid.py%s` - `ensure_ranges` on `/etc/subuid` text, no file I/O." % (
            " --before %s" % args.before if args.before else ""),
        "",
        "- CPU: %s (%d cores visible)" % (platform.processor() or platform.machine(), os.cpu_count()),
        "- Python: %s (%s)" % (platform.python_version(), platform.python_implementation()),
        "- Run: %s UTC; load average before %s, after %s" % (
            time.strftime("%Y-%m-%d %H:%M", time.gmtime()), " ".join("%.2f" % v for v in load_before),
            " ".join("%.2f" % v for v in load_after)),
        "",
        "CPU time of this process (`time.process_time`). Both models got the same text and gave the same output",
        "(text and assigned ranges). Ranges of %d ids; `add 10` asks for ten users the file lacks besides." % COUNT,
        "",
        "| users in file | case | model | runs | CPU median s | CPU min s |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for size, case, label, runs, median, low in rows:
        if runs is None:
            lines.append("| %d | %s | %s | not run | | |" % (size, case, label))
        else:
            lines.append("| %d | %s | %s | %d | %.3f | %.3f |" % (size, case, label, runs, median, low))
    report = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(report)
    print(report)


if __name__ == "__main__":
    main()
