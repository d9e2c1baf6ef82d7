# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/scale.py's fit and results file, from figures shaped as its runs record them (no node is started)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def load_bench(name="scale"):
    """bench/<name>.py as a module (its imports of the other bench scripts found beside it)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("%s_bench" % name, ROOT / "bench" / ("%s.py" % name))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


scale = load_bench()


def drift_run(wall, hosts, rc=0, differing=None):
    """One drift check as bench/scale.py keeps it."""
    differences = {host: [] for host in hosts}
    differences.update(differing or {})
    return {"wall": wall, "cpu": wall / 2, "rc": rc, "rss_kib": 65536, "results": 3 * len(hosts) + 7,
            "execs": len(hosts), "changed": 0, "log": "x.log", "per_host": {},
            "fast_path": {"clean": sum(1 for diff in differences.values() if not diff), "differences": differences}}


def raw_for(walls, runs=3, **changes):
    sizes = sorted(walls)
    raw = {"opts": {"sizes": sizes, "runs": runs, "forks": 25, "note": ""},
           "info": {"cpus": 2, "model": "cpu", "mem": "24 GiB", "engine": "20.10", "ansible": "ansible [core 2.19]",
                    "python": "3.11"},
           "load_before": "1 1 1", "load_after": "2 2 2", "started": "2026-11-29 12:00", "finished": "2026-11-29 13:00",
           "sizes": {}, "largest": {}}
    for size, wall in walls.items():
        hosts = ["head"] + ["gpu%02d" % i for i in range(1, size + 1)]
        raw["sizes"][str(size)] = {"settle": {}, "memory": 1000 + size,
                                   "runs": [drift_run(wall + 0.1 * i, hosts) for i in range(runs)]}
    raw.update(changes)
    return raw


def test_a_straight_line_is_fitted_exactly():
    icept, slope, worst = scale.fit([(11, 2.0 + 0.5 * 11), (31, 2.0 + 0.5 * 31), (101, 2.0 + 0.5 * 101)])
    assert icept == pytest.approx(2.0)
    assert slope == pytest.approx(0.5)
    assert worst == pytest.approx(0.0, abs=1e-9)


def test_growth_faster_than_linear_leaves_a_residual():
    _icept, _slope, worst = scale.fit([(n, 0.01 * n * n) for n in (11, 31, 101)])
    assert worst > 0.1


def test_the_results_file_fits_the_medians_and_extrapolates():
    text = "\n".join(scale.render(raw_for({10: 7.5, 30: 17.5})))
    # Medians are wall + 0.1 (three runs); nodes = GPU nodes + head: 11 and 31.
    assert "| 10 | 7.6 s | 7.5, 7.6, 7.7 |" in text
    assert "11 of 11" in text and "31 of 31" in text
    assert "wall = 2.1 s + 0.500 s × nodes" in text
    assert "1,000 nodes ≈ **502 s**" in text
    assert "not a clean site's check" not in text


def test_a_size_not_reached_is_said_and_left_out_of_the_fit():
    raw = raw_for({10: 7.5})
    raw["opts"]["sizes"] = [10, 100]
    text = "\n".join(scale.render(raw))
    assert "| 100 | not reached |" in text
    assert "## Growth" not in text


def test_a_node_the_fast_path_did_not_clear_is_named():
    raw = raw_for({10: 7.5, 30: 17.5})
    hosts = ["head"] + ["gpu%02d" % i for i in range(1, 31)]
    raw["sizes"]["30"]["runs"][1] = drift_run(40.0, hosts, rc=3, differing={"gpu07": ["path:/etc/docker/daemon.json"]})
    text = "\n".join(scale.render(raw))
    assert "**At 30 GPU nodes, run 2 was not a clean site's check** (exit 3): gpu07: path:/etc/docker/daemon.json." in text
    assert "30/31 of 31" in text
