# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_node_facts: what gpu_facts and drift_fingerprint both read."""

from pathlib import Path

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _node_facts, _nvml

CPUINFO = Path(__file__).resolve().parents[3] / "fixtures" / "cpuinfo"


def test_unreadable_cpuinfo_is_empty(tmp_path):
    assert _node_facts.read_cpuinfo(str(tmp_path / "absent")) == ""


def test_gpu_facts_with_the_cpu_from_the_given_cpuinfo(tmp_path, monkeypatch):
    monkeypatch.setattr(_node_facts.platform, "machine", lambda: "ppc64le")
    facts = _node_facts.gather(str(tmp_path), str(CPUINFO / "ppc64le-power9-powernv.txt"))
    assert facts["cpu"]["power_generation"] == "POWER9"
    # The GPU facts gpu_facts documents (here without a driver, on a GPU machine with it), all of them.
    assert set(_nvml.absent("no driver", str(tmp_path))) <= set(facts)
