# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.catalogue_builds import FilterModule

catalogue_builds = FilterModule().filters()["catalogue_builds"]

CATALOGUE = {
    "deeplearning": {"variants": [
        {"name": "cuda12-sm80", "image": "head:5000/hpc/deeplearning:cuda12-sm80", "architecture": "amd64",
         "cpu_level": "x86-64-v2", "cuda": "12.2", "compute_capabilities": ["8.0"]},
        {"name": "cpu-p9", "image": "head:5000/hpc/deeplearning:cpu-p9", "architecture": "ppc64le", "cpu_level": "POWER9"},
        {"name": "cuda11-sm70", "image": "head:5000/hpc/deeplearning:cuda11-sm70", "architecture": "x86_64",
         "cuda": "11.0", "compute_capabilities": ["7.0"]},
    ]},
    "hopper": {"variants": [
        {"name": "sm90", "image": "head:5000/hpc/hopper:sm90", "architecture": "x86_64", "cuda": "12.4",
         "compute_capabilities": ["9.0"]},
    ]},
}
SOURCES = {"deeplearning/cuda11-sm70": {"context": "/b/11"}, "deeplearning/cpu-p9": {"archive": "/b/p9.tar"},
           "hopper/sm90": {"context": "/b/h", "args": {"BASE": "x"}}}


def test_a_host_builds_the_variants_of_its_architecture_that_have_a_source():
    builds = catalogue_builds(CATALOGUE, SOURCES, "x86_64")
    assert [(b["logical"], b["name"]) for b in builds] == [("deeplearning", "cuda11-sm70"), ("hopper", "sm90")]
    assert builds[0] == {"logical": "deeplearning", "name": "cuda11-sm70",
                         "image": "head:5000/hpc/deeplearning:cuda11-sm70", "tag": "cuda11-sm70",
                         "registry": "head:5000", "repository": "hpc/deeplearning",
                         "features": ["cuda11.0", "sm_70"], "source": {"context": "/b/11"}, "index": None}
    assert [b["name"] for b in catalogue_builds(CATALOGUE, SOURCES, "ppc64el")] == ["cpu-p9"]
    assert catalogue_builds(CATALOGUE, {}, "x86_64") == []
    assert catalogue_builds({}, {}, "x86_64") == []


def test_with_an_index_tag_each_variant_names_its_logical_image_index():
    builds = catalogue_builds(CATALOGUE, SOURCES, "x86_64", "variants")
    assert [b["index"] for b in builds] == ["head:5000/hpc/deeplearning:variants", "head:5000/hpc/hopper:variants"]
    assert [b["index"] for b in catalogue_builds(CATALOGUE, SOURCES, "ppc64le", "v2")] == [
        "head:5000/hpc/deeplearning:v2"]


@pytest.mark.parametrize("sources, message", [
    ({"deeplearning/cuda12": {"context": "/b"}}, "the variant sources name deeplearning/cuda12, which no variant of "
     "the catalogue is \\(its variants: deeplearning/cuda12-sm80, deeplearning/cpu-p9, deeplearning/cuda11-sm70, "
     "hopper/sm90\\)"),
    ({"head:5000/hpc/hopper:sm90": {"context": "/b"}}, "name head:5000/hpc/hopper:sm90, which no variant"),
    ({"hopper/sm90": {}}, "variant source hopper/sm90: give either context .* or archive"),
    ({"hopper/sm90": {"context": "/a", "archive": "/b"}}, "variant source hopper/sm90: give either"),
    ({"hopper/sm90": "/b"}, "variant source hopper/sm90: give either"),
    (["hopper/sm90"], "must be a mapping of logical/variant names, got list"),
])
def test_a_source_that_is_no_variant_or_says_no_way_to_make_it_fails(sources, message):
    with pytest.raises(AnsibleFilterError, match="catalogue_builds: .*" + message):
        catalogue_builds(CATALOGUE, sources, "x86_64")
