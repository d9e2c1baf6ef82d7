# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lsf.shared Resource editor."""

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    SHARED_SHAPES,
    parse_document,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_shared_edit import check_resource_name, edit_resource, resource_request

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "lsf_samples"
SAMPLE_FILES = sorted(p for p in SAMPLES.iterdir() if ".shared" in p.name)


# -- lsf.shared Resource ---------------------------------------------------

SEED_ROW = "docker        Boolean ()       ()         ()         (Docker container)"


def test_seed_docker_resource_on_every_shared_sample():
    for path in SAMPLE_FILES:
        text = path.read_bytes().decode()
        new, row, warnings = edit_resource(text, "docker", type="Boolean", description="Docker container")
        assert warnings == []
        assert row["resourcename"] == "docker" and row["type"] == "Boolean" and row["description"] == "Docker container"
        doc = parse_document(new, shapes=SHARED_SHAPES)
        names = [r.value("resourcename") for r in doc.section("resource").rows]
        assert names.count("docker") == 1
        # exactly one line added, all others kept
        assert len(new.splitlines()) == len(text.splitlines()) + 1
        assert edit_resource(new, "docker", type="Boolean", description="Docker container")[0] == new


def test_seed_resource_exact_text_nero():
    text = (SAMPLES / "Nero09__LSF-on-aws-cloud__lsf.shared").read_bytes().decode()
    new = edit_resource(text, "docker", description="Docker container")[0]
    assert new == text.replace(
        "instance_type        String     ()       ()       (EC2 instance type)\n",
        "instance_type        String     ()       ()       (EC2 instance type)\n"
        "docker               Boolean    ()       ()       (Docker container)\n")


def test_resource_against_seven_column_header():
    text = ("Begin Resource\nRESOURCENAME  TYPE    INTERVAL INCREASING CONSUMABLE DESCRIPTION  # Keywords\n"
            "gpu           Numeric ()       Y          Y          (GPUs)\nEnd Resource\n")
    new, row, _w = edit_resource(text, "docker", type="Boolean", description="Docker container")
    assert new.splitlines()[3] == SEED_ROW
    assert row["consumable"] == "" and row["release"] is None


def test_resource_reordered_header_and_update_in_place():
    text = "Begin Resource\nDESCRIPTION\tRESOURCENAME\tTYPE\n(old text)\tdocker\tBoolean\t# keep\nEnd Resource\n"
    new, row, _w = edit_resource(text, "docker", description="Docker container")
    assert new.splitlines()[2] == "(Docker container)\tdocker\tBoolean\t# keep"
    assert row["description"] == "Docker container"
    new2, _row, _w = edit_resource(text, "fs", description="File server", type="String")
    assert new2.splitlines()[3].split() == ["(File", "server)", "fs", "String"]


def test_resource_absent_and_duplicates():
    text = "Begin Resource\nRESOURCENAME TYPE DESCRIPTION\ndocker Boolean (a)\nfs Boolean (b)\ndocker Boolean (c)\nEnd Resource\n"
    new, row, warnings = edit_resource(text, "docker", state="absent")
    assert new == "Begin Resource\nRESOURCENAME TYPE DESCRIPTION\nfs Boolean (b)\nEnd Resource\n"
    assert row is None and "defined 2 times" in warnings[0]
    assert edit_resource(new, "docker", state="absent")[0] == new


def test_resource_numeric_rules():
    text = "Begin Resource\nRESOURCENAME TYPE INTERVAL INCREASING RELEASE DESCRIPTION\nEnd Resource\n"
    with pytest.raises(ValueError, match="needs increasing"):
        edit_resource(text, "ngpu", type="Numeric", description="x")
    with pytest.raises(ValueError, match="only apply to Numeric"):
        edit_resource(text, "ngpu", type="Boolean", increasing=True, description="x")
    with pytest.raises(ValueError, match="description is required"):
        edit_resource(text, "ngpu", type="Boolean")
    new, row, _w = edit_resource(text, "ngpu", type="numeric", interval=30, increasing=False, release=True, description="GPUs")
    assert new.splitlines()[2].split() == ["ngpu", "Numeric", "30", "N", "Y", "(GPUs)"]
    assert row["interval"] == "30"
    # y/Y compare alike: no change
    assert edit_resource(new.replace(" N ", " n "), "ngpu", increasing=False)[0] == new.replace(" N ", " n ")


def test_resource_section_created_when_missing():
    text = "Begin Cluster\nClusterName\nc1\nEnd Cluster"
    new = edit_resource(text, "docker", description="Docker container")[0]
    assert new == ("Begin Cluster\nClusterName\nc1\nEnd Cluster\n\nBegin Resource\n"
                   "RESOURCENAME  TYPE     INTERVAL  INCREASING  DESCRIPTION\n"
                   "docker        Boolean  ()        ()          (Docker container)\nEnd Resource\n")


@pytest.mark.parametrize("name,why", [
    ("", "empty"), ("a" * 40, "longer than 39"), ("1gpu", "starts with a digit"), ("gpu.count", "forbids"),
    ("gpu-x", "forbids"), ("a b", "forbids"), ("info", "inf or nan"), ("NaNo", "inf or nan"),
    ("mem", "reserved"), ("swp", "reserved"), ("type", "reserved"), ("define_ncpus_cores", "reserved"),
])
def test_resource_name_rules(name, why):
    with pytest.raises(ValueError, match=why):
        check_resource_name(name)


def test_resource_name_ok():
    check_resource_name("docker")
    check_resource_name("a" * 39)
    check_resource_name("Mem")  # names are case-sensitive


@pytest.mark.parametrize("description", ["a\x00b", "a\x0bb", "a\x1fb", "a\x7fb"])
def test_resource_description_with_control_characters_is_refused_up_front(description):
    with pytest.raises(ValueError, match="control character"):
        resource_request({"description": description})
