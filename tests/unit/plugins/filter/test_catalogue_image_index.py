# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.catalogue_image_index import FilterModule

catalogue_image_index = FilterModule().filters()["catalogue_image_index"]

CATALOGUE = {"deeplearning": {"variants": [
    {"name": "cuda12-sm80-avx512", "image": "head:5000/hpc/deeplearning:cuda12-sm80-avx512", "architecture": "amd64",
     "cpu_level": "x86-64-v4", "cuda": "12.2", "compute_capabilities": ["8.0", "9.0"]},
    {"name": "cuda11-sm70", "image": "head:5000/hpc/deeplearning:cuda11-sm70", "architecture": "x86_64",
     "cuda": "11.0", "driver": "450.80.02", "compute_capabilities": ["7.0"], "ptx": True},
    {"name": "cpu-p9", "image": "head:5000/hpc/deeplearning:cpu-p9", "architecture": "ppc64le", "cpu_level": "POWER9"},
]}}


def test_each_variant_tag_with_what_it_needs_beyond_its_architecture():
    assert catalogue_image_index(CATALOGUE, "deeplearning") == {
        "registry": "head:5000", "repository": "hpc/deeplearning",
        "images": ["cuda12-sm80-avx512", "cuda11-sm70", "cpu-p9"],
        "features": {"cuda12-sm80-avx512": ["cuda12.2", "sm_80", "sm_90", "x86-64-v4"],
                     "cuda11-sm70": ["compute_70", "cuda11.0", "driver450.80.02", "sm_70"],
                     "cpu-p9": ["POWER9"]}}


@pytest.mark.parametrize("image, message", [
    ("other:5000/hpc/deeplearning:x", "in 2 repositories (head:5000/hpc/deeplearning, other:5000/hpc/deeplearning)"),
    ("head:5000/hpc/other:x", "in 2 repositories"),
    ("hpc/deeplearning:x", "names no registry host"),
    ("head:5000/hpc/deeplearning@sha256:" + "a" * 64, "is not a tag"),
    ("head:5000/hpc/deeplearning:cuda11-sm70", "two variants are the same image"),
])
def test_variants_that_are_not_one_repositorys_tags_fail(image, message):
    catalogue = copy.deepcopy(CATALOGUE)
    catalogue["deeplearning"]["variants"][2]["image"] = image
    with pytest.raises(AnsibleFilterError, match="catalogue_image_index: deeplearning: .*" + message.replace("(", r"\(").replace(")", r"\)")):
        catalogue_image_index(catalogue, "deeplearning")


def test_an_unknown_logical_image_names_what_there_is():
    with pytest.raises(AnsibleFilterError, match="no logical image 'hopper' in the catalogue \\(it has: deeplearning\\)"):
        catalogue_image_index(CATALOGUE, "hopper")
