# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lsf.cluster Host editor."""

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    CLUSTER_SHAPES,
    parse_document,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_cluster_edit import HostPattern, edit_hosts

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "lsf_samples"
SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if ".cluster" in p.name)


# -- lsf.cluster Host ---------------------------------------------------------

def test_seed_docker_on_hosts_of_every_cluster_sample():
    for path in [p for p in SAMPLE_FILES if not p.name.endswith(".erb")]:
        text = path.read_bytes().decode()
        new, changed, created, warnings = edit_hosts(text, "all", ["docker"])
        assert warnings == [] and created == [] and changed
        doc = parse_document(new, shapes=CLUSTER_SHAPES)
        for row in doc.section("host").rows:
            assert "docker" in row.value("resources").split()
        assert len(new.splitlines()) == len(text.splitlines())
        assert edit_hosts(new, "all", ["docker"])[0] == new


def test_seed_host_exact_text():
    text = (SAMPLES / "tmetsch__docker_compose_openlava__lsf.cluster.openlava").read_bytes().decode()
    new, changed, _c, _w = edit_hosts(text, ["node1", "NODE3"], ["docker"])
    assert changed == ["node1", "node3"]
    assert new == text.replace(
        "node1               !              !     1       -       -\n",
        "node1               !              !     1       -       (docker)\n").replace(
        "node3               !              !     1       -       -\n",
        "node3               !              !     1       -       (docker)\n")
    nero = (SAMPLES / "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster").read_bytes().decode()
    new = edit_hosts(nero, ["ip-172-30-25-222"], ["docker"])[0]
    assert "\nip-172-30-25-222   !   !   1   (mg docker)   \nEnd     Host\n" in new


def test_seed_eight_column_header_row():
    text = "Begin Host\n    HOSTNAME  model  type  server  r1m  mem  swp  RESOURCES\n    host00    !      !     1       3.5  ()   ()   ()\nEnd Host\n"
    new, _ch, created, _w = edit_hosts(text, ["host01"], ["docker"], create_missing=True)
    assert created == ["host01"]
    assert new.splitlines()[3] == "    host01    !      !     1       ()   ()   ()   (docker)"


def test_host_create_missing_with_header_only_and_options():
    text = "Begin Host\nHOSTNAME  model    type        server  RESOURCES    #Keywords\nEnd Host\n"
    new, changed, created, _w = edit_hosts(text, ["gpu01", "gpu02"], ["docker", "!gpu"], create_missing=True,
                                           model="POWER9", host_type="LINUXPPC64LE", server=1)
    assert changed == created == ["gpu01", "gpu02"]
    # a value wider than its column pushes the next one by a single blank
    assert new.splitlines()[2:4] == ["gpu01     POWER9   LINUXPPC64LE 1      (docker !gpu)",
                                     "gpu02     POWER9   LINUXPPC64LE 1      (docker !gpu)"]


def test_host_range_row_is_edited_not_duplicated():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nhost[01-04] ! ! 1 (mg)\nEnd Host\n"
    new, changed, created, _w = edit_hosts(text, ["host02", "host03"], ["docker"], create_missing=True)
    assert created == [] and changed == ["host[01-04]"]
    assert new.splitlines()[2] == "host[01-04] ! ! 1 (mg docker)"
    new2, _ch, created2, _w = edit_hosts(text, ["host05"], ["docker"], create_missing=True)
    assert created2 == ["host05"]


def test_host_resource_forms_and_absent():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nn1 ! ! 1 (!docker gpu=2 fs)\nEnd Host\n"
    assert edit_hosts(text, ["n1"], ["docker"])[0].splitlines()[2] == "n1 ! ! 1 (docker gpu=2 fs)"
    assert edit_hosts(text, ["n1"], ["gpu=4"])[0].splitlines()[2] == "n1 ! ! 1 (!docker gpu=4 fs)"
    assert edit_hosts(text, ["n1"], ["!docker"])[0] == text
    assert edit_hosts(text, ["n1"], ["docker", "gpu"], state="absent")[0].splitlines()[2] == "n1 ! ! 1 (fs)"
    assert edit_hosts(text, ["n1"], ["docker", "gpu", "fs"], state="absent")[0].splitlines()[2] == "n1 ! ! 1 ()"


def test_host_missing_without_create_warns():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nn1 ! ! 1 ()\nEnd Host\n"
    new, changed, created, warnings = edit_hosts(text, ["n9"], ["docker"])
    assert new == text and changed == created == []
    assert warnings == ["host n9 has no row in the Host section; nothing done for it"]


def test_host_rejects_bad_requests():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nEnd Host\n"
    for bad in (["a b"], ["n1", "all"], ["x#y"], ["(n1)"]):
        with pytest.raises(ValueError):
            edit_hosts(text, bad, ["docker"])
    for bad in (["(docker)"], ["a b"], ["#x"], [""]):
        with pytest.raises(ValueError):
            edit_hosts(text, ["n1"], bad)
    with pytest.raises(LsfSyntaxError, match="no Host section"):
        edit_hosts("Begin Parameters\nA=1\nEnd Parameters\n", ["n1"], ["docker"])


@pytest.mark.parametrize("pattern,host,expected", [
    ("host[01-04]", "host01", True), ("host[01-04]", "host04", True), ("host[01-04]", "host1", False),
    ("host[01-04]", "host05", False), ("HOST[01-04]", "host02", True), ("host[1-100]", "host100", True),
    ("host[1-100]", "host007", False), ("host[5:20]", "host5", True), ("host[5:20]", "host21", False),
    ("hostA[1,3]B[1-3]", "hostA3B2", True), ("hostA[1,3]B[1-3]", "hostA2B2", False), ("node1", "NODE1", True),
    ("node1", "node10", False),
])
def test_host_patterns(pattern, host, expected):
    assert HostPattern(pattern).matches(host) is expected
