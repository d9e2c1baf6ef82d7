# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.slurm_platform_features import FilterModule
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_conf import set_records

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
import image_nodes as nodes  # noqa: E402

slurm_platform_features = FilterModule().filters()["slurm_platform_features"]


def test_each_node_gets_its_platform_and_unseen_nodes_are_left_out():
    hostvars = {
        "gpu01.example.org": {"ansible_facts": {"gpu_facts": nodes.standin_facts("gpu01", nodes.BROADWELL)}},
        "gpu02": {"ansible_facts": {"gpu_facts": nodes.standin_facts("gpu02", nodes.BROADWELL)}},
        "cpu01": {"ansible_facts": {"gpu_facts": nodes.no_gpu_facts(nodes.BROADWELL)}},
        "down01": {"ansible_facts": {}},
    }
    result = slurm_platform_features({"gpu01": "gpu01.example.org", "gpu02": "gpu02", "cpu01": "cpu01",
                                      "down01": "down01"}, hostvars)
    # Slurm node names, from the recorded V100 (driver 470, CUDA 11.4) and A100 (535, 12.2) nodes
    assert result["nodes"] == {"gpu01": {"Features": "x86_64,x86-64-v3,cuda11.4,nvidia470,sm_70"},
                               "gpu02": {"Features": "x86_64,x86-64-v3,cuda12.2,nvidia535,sm_80"},
                               "cpu01": {"Features": "x86_64,x86-64-v3"}}
    owned = re.compile(result["owned"])
    assert all(owned.match(word) for node in result["nodes"].values() for word in node["Features"].split(","))
    assert not [word for word in ("ib", "bigmem", "gpu", "v100", "cuda", "x86_64_v3", "sm80", "haswell")
                if owned.match(word)]


def test_bad_facts_name_the_node():
    with pytest.raises(AnsibleFilterError, match="n9: gpu_facts: no cpu.architecture"):
        slurm_platform_features({"n9": "n9"}, {"n9": {"ansible_facts": {"gpu_facts": {"present": False}}}})
    with pytest.raises(AnsibleFilterError, match="expected a mapping"):
        slurm_platform_features(["n1"], {})


SITE = ("NodeName=DEFAULT CPUs=2 Features=ib\n"
        "NodeName=n[1-2] RealMemory=1000 Features=bigmem,cuda11.0,ib   # the big ones\n"
        "NodeName=n3 RealMemory=500\n")


def test_slurm_conf_keeps_a_nodes_own_features_and_replaces_stale_platform_ones():
    owned = slurm_platform_features({}, {})["owned"]
    wanted = {"n1": {"Features": "x86_64,cuda12.2"}, "n2": {"Features": "x86_64,cuda12.2"},
              "n3": {"Features": "x86_64"}}
    text, changed, _warnings = set_records(SITE, "NodeName", wanted, owned_features=owned)
    lines = text.splitlines()
    assert lines[1] == "NodeName=n[1-2] RealMemory=1000 Features=bigmem,ib,x86_64,cuda12.2   # the big ones"
    # n3's features came from the DEFAULT line: they stay on it, n3's own line gets them with its platform
    assert lines[0] == "NodeName=DEFAULT CPUs=2 Features=ib" and lines[2] == "NodeName=n3 RealMemory=500 Features=ib,x86_64"
    assert sorted(changed) == ["n1", "n2", "n3"]
    # the same features in another order: no change
    again = {"n1": {"Features": "cuda12.2,x86_64"}, "n2": {"Features": "x86_64,cuda12.2"}, "n3": {"Features": "x86_64"}}
    assert set_records(text, "NodeName", again, owned_features=owned)[1] == []
    # without owned_features, Features is set whole
    assert set_records(SITE, "NodeName", {"n3": {"Features": "x86_64"}})[0].splitlines()[2] == \
        "NodeName=n3 RealMemory=500 Features=x86_64"


REAL = Path(__file__).resolve().parents[3] / "fixtures" / "slurm" / "real" / "danielmc81.slurm.conf"


def test_a_published_slurm_conf_keeps_its_features_quotes_and_other_lines():
    """A site's own slurm.conf (tests/fixtures/slurm/real, PROVENANCE.md): quoted Features= with the site's
    words, tabs, a node range. The platform features join the site's; the rest of the file is untouched."""
    owned = slurm_platform_features({}, {})["owned"]
    site = REAL.read_text()
    wanted = {"ibtesla": {"Features": "x86_64,x86-64-v4,cuda12.2,nvidia535,sm_70"}}
    text, changed, warnings = set_records(site, "NodeName", wanted, owned_features=owned)
    assert changed == ["ibtesla"] and warnings == []
    before, after = site.splitlines(), text.splitlines()
    assert len(before) == len(after)
    differing = [(old, new) for old, new in zip(before, after) if old != new]
    assert differing == [(
        'NodeName=ibtesla \tCPUs=16 SocketsPerBoard=2 CoresPerSocket=8  ThreadsPerCore=1 RealMemory=257355 '
        'Gres=gpu:v100:4 Features="skylake,v100"\t',
        'NodeName=ibtesla \tCPUs=16 SocketsPerBoard=2 CoresPerSocket=8  ThreadsPerCore=1 RealMemory=257355 '
        'Gres=gpu:v100:4 Features="skylake,v100,x86_64,x86-64-v4,cuda12.2,nvidia535,sm_70"\t')]
    # a second run changes nothing; a driver upgrade replaces only the platform words
    assert set_records(text, "NodeName", wanted, owned_features=owned)[1] == []
    upgraded = {"ibtesla": {"Features": "x86_64,x86-64-v4,cuda12.4,nvidia550,sm_70"}}
    line = [ln for ln in set_records(text, "NodeName", upgraded, owned_features=owned)[0].splitlines()
            if ln.startswith("NodeName=ibtesla")][0]
    assert 'Features="skylake,v100,x86_64,x86-64-v4,cuda12.4,nvidia550,sm_70"' in line
