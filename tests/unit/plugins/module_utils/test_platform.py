# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Architecture spellings (module_utils/_platform.py): one table, read by every model that compares architectures."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_catalogue, _platform
from ansible_collections.hpc.gpu_containers.plugins.module_utils._cpuinfo import normalize_machine
from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import go_arch as verify_go_arch


@pytest.mark.parametrize("name, kernel, go, deb", [
    ("x86_64", "x86_64", "amd64", "amd64"),
    ("AMD64", "x86_64", "amd64", "amd64"),
    ("aarch64", "aarch64", "arm64", "arm64"),
    ("arm64", "aarch64", "arm64", "arm64"),
    ("ppc64le", "ppc64le", "ppc64le", "ppc64el"),
    ("ppc64el", "ppc64le", "ppc64le", "ppc64el"),
    ("powerpc64le", "ppc64le", "ppc64le", "ppc64el"),
    (" s390x ", "s390x", "s390x", "s390x"),
    ("i686", "i686", "386", "i386"),
])
def test_every_spelling(name, kernel, go, deb):
    assert _platform.machine(name) == kernel
    assert _platform.go_arch(name) == go
    assert _platform.deb_arch(name) == deb


def test_the_models_read_the_one_table():
    assert normalize_machine("ppc64el") == "ppc64le"
    assert verify_go_arch("x86_64") == "amd64" and verify_go_arch(None) is None
    # The resolver is a program of its own on the nodes and keeps a copy: it must stay the same.
    assert _image_catalogue._ARCH_ALIASES == _platform.MACHINE_ALIASES
    assert _image_catalogue.ARCHITECTURES == _platform.ARCHITECTURES


HOSTVARS = {"x1": {"ansible_facts": {"architecture": "x86_64"}}, "p1": {"ansible_facts": {"architecture": "ppc64le"}},
            "p2": {"ansible_facts": {"architecture": "ppc64le"}}}


@pytest.mark.parametrize("arch, candidates, play, named, want", [
    # The first candidate of the architecture.
    ("ppc64le", ["x1", "p1", "p2"], ["x1", "p1", "p2"], {}, "p1"),
    ("ppc64el", ["x1", "p2", "p1"], ["x1", "p1", "p2"], {}, "p2"),
    # The site's choice wins.
    ("ppc64le", ["x1", "p1", "p2"], ["x1", "p1", "p2"], {"ppc64le": "p2"}, "p2"),
    # A candidate outside the play ends the search: it may be the builder.
    ("ppc64le", ["x1", "gone", "p1"], ["x1", "p1"], {}, "gone"),
    # Not in the inventory: ignored.
    ("ppc64le", ["nowhere", "p1"], ["p1"], {}, "p1"),
    # None fits: the default.
    ("aarch64", ["x1", "p1"], ["x1", "p1"], {}, "me"),
])
def test_the_builder_of_an_architecture(arch, candidates, play, named, want):
    inventory = ["x1", "p1", "p2", "gone"]
    assert _platform.architecture_builder(arch, candidates, HOSTVARS, play, inventory, named, "me") == want
