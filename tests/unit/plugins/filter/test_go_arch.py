# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.gpu_containers.plugins.filter.go_arch import FilterModule


@pytest.mark.parametrize("name, expected", [
    ("x86_64", "amd64"), ("aarch64", "arm64"), ("ppc64le", "ppc64le"), ("ppc64el", "ppc64le"),
    ("AMD64", "amd64"), ("s390x", "s390x"),
])
def test_go_arch(name, expected):
    assert FilterModule().filters()["go_arch"](name) == expected


@pytest.mark.parametrize("name", [None, "", "  "])
def test_go_arch_needs_a_name(name):
    with pytest.raises(AnsibleFilterError, match="no architecture name"):
        FilterModule().filters()["go_arch"](name)
