# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.node_image import FilterModule
from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_catalogue

node_image = FilterModule().filters()["node_image"]


def test_the_name_a_profile_writes_is_the_one_the_node_keeps():
    """The LSF master writes the profile's image() with the filter; the nodes tag with the module: one rule."""
    assert node_image("deeplearning") == "localhost/hpc-node/deeplearning:node"
    assert node_image("DeepLearning", "registry.example.com:5000/hpc") == "registry.example.com:5000/hpc/deeplearning:node"
    assert node_image("deeplearning") == _image_catalogue.node_images({"deeplearning": {}})["deeplearning"]


@pytest.mark.parametrize("name, repository, message", [
    ("deeplearning", "hpc-node", "node image repository 'hpc-node': a registry host"),
    ("deeplearning", "node/images", "node image repository 'node/images': a registry host"),
    ("deep..learning", "localhost/hpc-node", "deep..learning: a logical image whose node image"),
    ("deeplearning-", "localhost/hpc-node", "deeplearning-: a logical image whose node image"),
])
def test_names_that_are_no_node_image_fail_clearly(name, repository, message):
    with pytest.raises(AnsibleFilterError, match="^node_image: " + message.replace("(", r"\(").replace(".", r"\.")):
        node_image(name, repository)
