# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bench/controller.py's results file, from figures shaped as its runs record them (no node is started)."""
from __future__ import annotations

from ansible_collections.hpc.gpu_containers.tests.unit.testbed.test_scale_bench import load_bench

controller = load_bench("controller")
HOSTS = ["head", "gpu01", "gpu02"]


def run(wall, rc=0, differing=None):
    """One drift check as bench/scale.py's measured() keeps it."""
    differences = {host: [] for host in HOSTS}
    differences.update(differing or {})
    return {"wall": wall, "cpu": wall / 2, "rc": rc, "rss_kib": 65536, "results": 16, "execs": 6, "changed": 0,
            "log": "x.log", "fast_path": {"clean": sum(1 for diff in differences.values() if not diff),
                                          "differences": differences}}


def raw_for(walls):
    """walls: variant name -> the wall times of its rounds, in the benchmark's order of variants."""
    variants = {name: {"what": what, "env": extra, "runs": []} for name, what, extra in controller.VARIANTS}
    for name, times in walls.items():
        variants[name]["runs"] = [run(wall) for wall in times]
    return {"opts": {"size": 2, "runs": 3, "note": ""},
            "info": {"cpus": 2, "model": "cpu", "mem": "24 GiB", "engine": "20.10", "ansible": "ansible [core 2.19]",
                     "python": "3.11"},
            "load_before": "1 1 1", "load_after": "2 2 2", "started": "2026-12-02 03:40", "finished": "2026-12-02 04:10",
            "variants": variants}


def test_each_variant_is_its_median_and_its_ratio_to_the_first():
    text = "\n".join(controller.render(raw_for({"template": [10.0, 12.0, 11.0], "forks-50": [22.0, 20.0, 21.0]})))
    assert "| template | " in text and "| 11.0 s | 10.0, 12.0, 11.0 | 1.00 |" in text
    assert "| 21.0 s | 22.0, 20.0, 21.0 | 1.91 |" in text
    assert "3 of 3 | 0 |" in text
    # the variants without runs are said, not left out
    assert "| forks-100 | forks 100" in text and "not reached" in text
    assert "not a clean site's check" not in text


def test_a_run_that_was_not_clean_is_named():
    raw = raw_for({"template": [10.0, 10.0, 10.0]})
    raw["variants"]["template"]["runs"][1] = run(30.0, rc=3, differing={"gpu02": ["path:/etc/docker/daemon.json"]})
    text = "\n".join(controller.render(raw))
    assert "**template, round 2 was not a clean site's check** (exit 3): gpu02: path:/etc/docker/daemon.json." in text
    assert "2/3 of 3 | 0/3 |" in text
