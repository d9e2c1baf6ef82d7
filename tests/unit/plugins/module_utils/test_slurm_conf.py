# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Slurm models (_slurm_syntax, _slurm_conf, _slurm_gres): grammar, lossless edits, host lists, GPU order."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_conf import (
    defined_names,
    include_targets,
    merge_gres,
    parameters,
    record_attributes,
    set_parameters,
    set_records,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_gres import (
    described_gpus,
    gpu_gres,
    gpus_in_slurm_order,
    gres_type_name,
    set_gres,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_syntax import (
    SlurmSyntaxError,
    check_node_name,
    check_value,
    compress_hostlist,
    expand_hostlist,
    parse,
)

SITE = """\
# slurm.conf of a site
ClusterName=cluster   # the name
SlurmctldHost=ctl
ProctrackType=proctrack/linuxproc
SlurmctldPort=6817 SlurmdPort=6818
\t
NodeName=DEFAULT RealMemory=1000
NodeName=gpu[01-02] CPUs=8 State=UNKNOWN   # GPU nodes
NodeName=cpu1 CPUs=4 Gres=nic:1
PartitionName=batch Nodes=ALL Default=YES State=UP
"""


def unchanged_lines(before, after):
    """Lines of ``before`` that ``after`` still has, in order (byte-identical)."""
    rest = after.splitlines(True)
    kept = []
    for line in before.splitlines(True):
        if line in rest:
            kept.append(line)
            rest = rest[rest.index(line) + 1:]
    return kept


# --- grammar ---------------------------------------------------------------------------------------

def test_parse_kinds_and_pairs():
    doc = parse(SITE)
    kinds = [line.kind for line in doc.logical]
    assert kinds == ["comment", "global", "global", "global", "global", "blank", "record", "record", "record", "record"]
    assert [(p.key, p.value) for p in doc.logical[4].pairs] == [("SlurmctldPort", "6817"), ("SlurmdPort", "6818")]
    assert doc.logical[7].record_kind == "nodename"
    assert parameters(SITE)["ClusterName"] == "cluster"


def test_comments_escapes_quotes_continuations():
    text = 'A=1 # c\nB="x y"\nC=a\\#b\nNodeName=n1 \\\n  CPUs=2\nInclude /etc/slurm/more.conf\n'
    doc = parse(text)
    assert [line.kind for line in doc.logical] == ["global", "global", "global", "record", "include"]
    assert parameters(text) == {"A": "1", "B": "x y", "C": "a#b"}
    node = doc.logical[3]
    assert (node.start, node.end) == (3, 5)
    assert record_attributes(text, "NodeName", "n1") == {"CPUs": "2"}


def test_blanks_around_equals_and_operators():
    assert parameters("Key = value\nOther+=x\n") == {"Key": "value", "Other": "x"}


@pytest.mark.parametrize("text, line", [
    ("A=1\njunk\n", 2),
    ('A="open\n', 1),
    ("A=1\nB=2 C\n", 2),
    ("A=1\x00\n", 1),
])
def test_syntax_errors_name_the_line(text, line):
    with pytest.raises(SlurmSyntaxError) as err:
        parse(text)
    assert err.value.line == line


def test_gres_lines_are_gres_records():
    doc = parse("AutoDetect=off\nNodeName=n1 Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n")
    assert [line.kind for line in doc.logical] == ["global", "gres", "gres"]


# --- global parameters -----------------------------------------------------------------------------

def test_set_parameters_in_place_and_appended_after_the_globals():
    wanted = {"ProctrackType": "proctrack/cgroup", "GresTypes": "gpu", "ClusterName": "other"}
    text, changed, warnings = set_parameters(SITE, wanted)
    assert changed == ["ProctrackType", "GresTypes", "ClusterName"] and warnings == []
    lines = text.splitlines()
    assert "ClusterName=other   # the name" in lines
    assert lines[lines.index("SlurmctldPort=6817 SlurmdPort=6818") + 1] == "GresTypes=gpu"
    assert len(unchanged_lines(SITE, text)) == len(SITE.splitlines()) - 2


def test_set_parameters_no_change_and_case_insensitive_keys():
    text, changed, _w = set_parameters(SITE, {"clustername": "cluster", "SLURMDPORT": "6818"})
    assert text == SITE and changed == []


def test_set_parameters_second_pair_of_a_line_and_removal():
    text, changed, _w = set_parameters(SITE, {"SlurmdPort": "7000"})
    assert "SlurmctldPort=6817 SlurmdPort=7000\n" in text and changed == ["SlurmdPort"]
    text, changed, _w = set_parameters(SITE, {"SlurmctldPort": None})
    assert "\nSlurmdPort=6818\n" in text
    text, changed, _w = set_parameters(SITE, {"ProctrackType": None})
    assert "ProctrackType" not in text and text.count("\n") == SITE.count("\n") - 1


def test_duplicate_keys_last_wins_with_warning():
    text, changed, warnings = set_parameters("A=1\nA=2\n", {"A": "3"})
    assert text == "A=1\nA=3\n" and warnings == ["A is defined 2 times (lines 1, 2); the last one wins"]


def test_set_valued_gres_types_merge():
    text, changed, _w = set_parameters("GresTypes=mps\n", {"GresTypes": "gpu"})
    assert text == "GresTypes=mps,gpu\n"
    assert set_parameters("GresTypes=gpu,mps\n", {"GresTypes": "mps,gpu"})[1] == []


def test_keep_existing_keeps_the_sites_value():
    text, changed, warnings = set_parameters("Epilog=/site/epilog\n", {"Epilog": "/etc/slurm/epilog.d/*"},
                                             keep_existing=["Epilog"])
    assert text == "Epilog=/site/epilog\n" and changed == [] and "kept" in warnings[0]
    text, changed, _w = set_parameters("A=1\n", {"Epilog": "/etc/slurm/epilog.d/*"}, keep_existing=["Epilog"])
    assert text == "A=1\nEpilog=/etc/slurm/epilog.d/*\n"


def test_values_that_need_quotes_and_values_refused():
    text, _c, _w = set_parameters("A=1\n", {"B": "a b"})
    assert text == 'A=1\nB="a b"\n' and parameters(text)["B"] == "a b"
    for bad in ('say "x"', "a#b", "a\\b", "a\nb", ""):
        with pytest.raises(ValueError):
            check_value("K", bad)


def test_crlf_and_missing_final_newline():
    text, _c, _w = set_parameters("A=1\r\nB=2", {"C": "3"})
    assert text == "A=1\r\nB=2\r\nC=3\r\n"


# --- node and partition records ----------------------------------------------------------------------

def test_node_line_split_when_nodes_differ():
    text, changed, _w = set_records(SITE, "NodeName", {"gpu01": {"Gres": "gpu:v100:2"}, "gpu02": {"Gres": "gpu:a100:4"}})
    assert changed == ["gpu01", "gpu02"]
    lines = text.splitlines()
    i = lines.index("NodeName=gpu01 CPUs=8 State=UNKNOWN Gres=gpu:v100:2   # GPU nodes")
    assert lines[i + 1] == "NodeName=gpu02 CPUs=8 State=UNKNOWN Gres=gpu:a100:4"
    assert record_attributes(text, "NodeName", "gpu02")["RealMemory"] == "1000"  # DEFAULT still applies
    assert set_records(text, "NodeName", {"gpu01": {"Gres": "gpu:v100:2"}, "gpu02": {"Gres": "gpu:a100:4"}})[1] == []


def test_node_line_edited_in_place_when_all_nodes_agree():
    text, changed, _w = set_records(SITE, "NodeName", {"gpu01": {"Gres": "gpu:2"}, "gpu02": {"Gres": "gpu:2"}})
    assert "NodeName=gpu[01-02] CPUs=8 State=UNKNOWN Gres=gpu:2   # GPU nodes\n" in text


def test_only_one_node_of_a_range_changes():
    text, changed, _w = set_records("NodeName=n[1-4] CPUs=2\n", "NodeName", {"n3": {"CPUs": "4"}})
    assert text == "NodeName=n[1-2,4] CPUs=2\nNodeName=n3 CPUs=4\n" and changed == ["n3"]


def test_gres_merge_keeps_other_gres():
    text, _c, _w = set_records(SITE, "NodeName", {"cpu1": {"Gres": "gpu:1"}})
    assert "NodeName=cpu1 CPUs=4 Gres=nic:1,gpu:1\n" in text
    text, _c, _w = set_records(text, "NodeName", {"cpu1": {"Gres": "gpu:0"}})
    assert "NodeName=cpu1 CPUs=4 Gres=nic:1\n" in text
    text, _c, _w = set_records("NodeName=c CPUs=1 Gres=gpu:1\n", "NodeName", {"c": {"Gres": "gpu:0"}})
    assert text == "NodeName=c CPUs=1\n"
    assert merge_gres("gpu:a:1,nic:1", "gpu:b:2") == "nic:1,gpu:b:2"


def test_value_from_default_is_no_change_and_cannot_be_removed_on_the_node():
    assert set_records(SITE, "NodeName", {"cpu1": {"RealMemory": "1000"}})[1] == []
    with pytest.raises(ValueError, match="DEFAULT line 7"):
        set_records(SITE, "NodeName", {"cpu1": {"RealMemory": None}})


def test_unknown_node_fails_unless_created():
    with pytest.raises(ValueError, match="NodeName gpu09 is not defined"):
        set_records(SITE, "NodeName", {"gpu09": {"CPUs": "8"}})
    text, changed, _w = set_records(SITE, "NodeName", {"gpu09": {"CPUs": "8"}}, create_missing=True)
    assert "NodeName=cpu1 CPUs=4 Gres=nic:1\nNodeName=gpu09 CPUs=8\n" in text


def test_node_defined_twice_is_an_error():
    with pytest.raises(SlurmSyntaxError) as err:
        set_records("NodeName=n[1-2]\nNodeName=n2\n", "NodeName", {"n2": {"CPUs": "1"}})
    assert err.value.line == 2


def test_split_refused_with_nodeaddr_lists():
    with pytest.raises(SlurmSyntaxError, match="NodeAddr"):
        set_records("NodeName=n[1-2] NodeAddr=10.0.0.[1-2]\n", "NodeName", {"n1": {"CPUs": "2"}})


def test_partition_attributes():
    text, changed, _w = set_records(SITE, "PartitionName", {"batch": {"MaxTime": "INFINITE"}})
    assert "PartitionName=batch Nodes=ALL Default=YES State=UP MaxTime=INFINITE\n" in text and changed == ["batch"]


# --- gres.conf -------------------------------------------------------------------------------------

GRES = """\
# gres.conf
AutoDetect=off
NodeName=n1 Name=gpu Type=old File=/dev/nvidia0   # swapped last year
NodeName=n1 Name=gpu Type=old File=/dev/nvidia1
NodeName=n[2-3] Name=gpu File=/dev/nvidia[0-1]
NodeName=n1 Name=nic Count=1
"""


def test_set_gres_edits_own_lines_in_place():
    text, changed, _w = set_gres(GRES, {"n1": [{"Type": "v100", "File": "/dev/nvidia0"}]})
    assert changed == ["n1"]
    assert "NodeName=n1 Name=gpu Type=v100 File=/dev/nvidia0   # swapped last year\n" in text
    assert "/dev/nvidia1\n" not in text.split("NodeName=n[2-3]", maxsplit=1)[0]
    assert "NodeName=n1 Name=nic Count=1\n" in text
    assert set_gres(text, {"n1": [{"Type": "v100", "File": "/dev/nvidia0"}]})[1] == []


def test_set_gres_takes_a_node_out_of_a_shared_line():
    text, changed, _w = set_gres(GRES, {"n2": [{"File": "/dev/nvidia0"}]})
    assert "NodeName=n3 Name=gpu File=/dev/nvidia[0-1]\nNodeName=n2 Name=gpu File=/dev/nvidia0\n" in text
    text, changed, _w = set_gres(GRES, {"n2": [], "n3": []})
    assert "n[2-3]" not in text and changed == ["n2", "n3"]


def test_set_gres_appends_for_a_new_node_and_creates_text():
    text, _c, _w = set_gres("", {"a": [{"File": "/dev/nvidia0"}], "b": []})
    assert text == "NodeName=a Name=gpu File=/dev/nvidia0\n"


def test_gres_line_without_nodename_fails():
    with pytest.raises(SlurmSyntaxError) as err:
        set_gres("Name=gpu File=/dev/nvidia0\n", {"a": [], "b": []})
    assert err.value.line == 1 and "per_node" in err.value.msg
    with pytest.raises(SlurmSyntaxError):
        set_gres("Name=gpu File=/dev/nvidia0\n", {"a": []}, per_node=False)
    with pytest.raises(ValueError, match="per_node"):
        set_gres("", {"a": [], "b": []}, per_node=True)


def test_per_node_gres_file_is_the_nodes_own():
    text = "AutoDetect=off\nName=gpu File=/dev/nvidia[0-1] Cores=0-3   # both\nNodeName=other Name=gpu File=/dev/nvidia5\n"
    assert set_gres(text, {"a": [{"File": "/dev/nvidia0"}, {"File": "/dev/nvidia1"}]}, per_node=True)[1] == []
    new, changed, _w = set_gres(text, {"a": [{"File": "/dev/nvidia1"}, {"File": "/dev/nvidia2"}]}, per_node=True)
    assert changed == ["a"]
    assert new == ("AutoDetect=off\nName=gpu File=/dev/nvidia1 Cores=0-3\nName=gpu File=/dev/nvidia2\n"
                   "NodeName=other Name=gpu File=/dev/nvidia5\n")
    # detected: Name=gpu lines, none with a NodeName, one node asked for
    assert set_gres("Name=gpu File=/dev/nvidia0\n", {"a": []})[0] == ""


def test_described_gpus_by_meaning():
    text = "NodeName=n[1-2] Name=gpu Type=a Count=2 File=/dev/nvidia[0-1]\nNodeName=n2 Name=gpu File=/dev/nvidia2\n"
    assert described_gpus(text) == {"n1": [("/dev/nvidia0", "a"), ("/dev/nvidia1", "a")],
                                    "n2": [("/dev/nvidia0", "a"), ("/dev/nvidia1", "a"), ("/dev/nvidia2", None)]}


@pytest.mark.parametrize("bad", ["n1\nName=gpu", "", "a b", "a=b", "a#b", "a\u2028b", "gpu[1-2]"])
def test_node_names_that_cannot_be_written_are_refused(bad):
    with pytest.raises(ValueError, match="nodes: node name"):
        check_node_name("nodes", bad)
    with pytest.raises(ValueError, match="partitions: node name"):
        set_records("PartitionName=p\n", "PartitionName", {bad: {"State": "UP"}}, create_missing=True)


def test_gres_records_only_file_and_type():
    with pytest.raises(ValueError, match="CPUs is not a key"):
        set_gres("", {"a": [{"File": "/dev/nvidia0", "CPUs": "0"}]})
    with pytest.raises(ValueError, match="given twice"):
        set_gres("", {"a": [{"File": "/dev/nvidia0"}, {"File": "/dev/nvidia0"}]})


def test_include_targets_and_defined_names():
    text = "A=1\ninclude nodes.conf\nInclude  \"/etc/slurm/p d/*.conf\"   # parts\nNodeName=x[1-2] CPUs=1\n"
    assert include_targets(text) == [(2, "nodes.conf"), (3, "/etc/slurm/p d/*.conf")]
    assert defined_names(text, "NodeName") == {"x1", "x2"}


# --- host lists, GPUs --------------------------------------------------------------------------------

@pytest.mark.parametrize("expr, names", [
    ("n[1-3]", ["n1", "n2", "n3"]),
    ("gpu[01-02,10],login", ["gpu01", "gpu02", "gpu10", "login"]),
    ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
])
def test_expand_hostlist(expr, names):
    assert expand_hostlist(expr) == names
    assert expand_hostlist(compress_hostlist(names)) == names


@pytest.mark.parametrize("bad", ["n[1-", "n[3-1]", "n]1[", "n[a-b]"])
def test_bad_hostlists(bad):
    with pytest.raises(ValueError):
        expand_hostlist(bad)


def test_gres_type_names_as_autodetect():
    assert gres_type_name("NVIDIA A100-SXM4-40GB") == "nvidia_a100-sxm4-40gb"
    assert gres_type_name("Tesla V100-SXM2-16GB") == "tesla_v100-sxm2-16gb"


def test_gpus_in_slurm_order_by_type_then_minor():
    gpus = [{"name": "T4", "uuid": "c", "minor_number": 0},
            {"name": "NVIDIA A100", "uuid": "b", "minor_number": 3},
            {"name": "NVIDIA A100", "uuid": "a", "minor_number": 1}]
    assert [g["uuid"] for g in gpus_in_slurm_order(gpus)] == ["a", "b", "c"]
    records, gres, devices = gpu_gres(gpus)
    assert gres == "gpu:nvidia_a100:2,gpu:t4:1"
    assert devices[0] == {"index": 0, "uuid": "a", "file": "/dev/nvidia1"}
    assert gpu_gres(gpus, typed=False)[1] == "gpu:3"
    assert gpu_gres([])[1] == "gpu:0"
    with pytest.raises(ValueError, match="minor"):
        gpu_gres([{"name": "x", "uuid": "u"}])


def test_attributes_added_to_one_line_keep_their_order():
    """Several new attributes go to the end of the line (before its comment) in the order given, on the line that
    stays and on the line split off it alike."""
    site = "NodeName=n[1-2] CPUs=2 State=UNKNOWN   # two GPU nodes\n"
    wanted = {"n1": {"Gres": "gpu:2", "Features": "x86_64", "Weight": "10"},
              "n2": {"Gres": "gpu:4", "Features": "x86_64", "Weight": "10"}}
    text, changed, _warnings = set_records(site, "NodeName", wanted)
    assert text.splitlines() == ["NodeName=n1 CPUs=2 State=UNKNOWN Gres=gpu:2 Features=x86_64 Weight=10   # two GPU nodes",
                                 "NodeName=n2 CPUs=2 State=UNKNOWN Gres=gpu:4 Features=x86_64 Weight=10"]
    assert sorted(changed) == ["n1", "n2"]
