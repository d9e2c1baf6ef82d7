# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adversarial tests of slurm_gres and slurm_conf on gres.conf and slurm.conf files as sites write them.

The real files under tests/fixtures/slurm/real (see its PROVENANCE.md) and hand-made ones, in tmp_path,
through the modules' main() and the one file-edit transaction:

* a node's own per-GPU settings (CPUs=, Cores=, Links=, Flags=, AutoDetect=, MultipleFiles=, unknown keys)
  stay when its lines are rewritten;
* the GPUs a file already describes, in any spelling (device ranges, Count=, node ranges, several nodes on
  one line), are no change: changed=false and the file byte-identical;
* a per-node gres.conf (no NodeName) and a slurm.conf whose nodes live in an Included file are edited;
* node names that would inject a line are refused, naming the option, and the file keeps its bytes;
* include lines naming a FIFO, a directory or the file itself, and host lists too long to expand, fail at once
  with the file (and line) named, every file as it was.
"""

import os
import shutil
from pathlib import Path

import pytest
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_gres import set_gres
from ansible_collections.hpc.gpu_containers.plugins.modules import slurm_conf, slurm_gres

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "real"
REAL_GRES = sorted(p.name for p in REAL.glob("*.gres.conf"))
REAL_SLURM = sorted(p.name for p in REAL.glob("*.slurm.conf"))


def gpus(minors, name="Tesla V100-SXM2-16GB"):
    return [{"name": name, "uuid": "GPU-%s-%d" % (name[:4], m), "minor_number": m} for m in minors]


def copy(tmp_path, name, as_name=None):
    dest = tmp_path / (as_name or name)
    shutil.copyfile(REAL / name, dest)
    return dest


def run_twice(module, capsys, path, **args):
    """Check mode (nothing written, same answer), the real run, then a rerun that changes nothing."""
    before = path.read_bytes()
    predicted = run_module(module, capsys, check=True, diff=True, path=str(path), **args)
    assert path.read_bytes() == before, predicted
    done = run_module(module, capsys, diff=True, path=str(path), **args)
    assert not done.get("failed"), done
    assert predicted == done
    again = run_module(module, capsys, path=str(path), **args)
    assert again["changed"] is False, path.read_text()
    return done


def unchanged(module, capsys, path, **args):
    before = path.read_bytes()
    res = run_module(module, capsys, path=str(path), **args)
    assert not res.get("failed"), res
    assert res["changed"] is False and path.read_bytes() == before, path.read_text()
    return res


# --- item 10: the site's per-GPU settings stay -----------------------------------------------------

def test_lambda_box_cpus_kept_when_types_are_added(tmp_path, capsys):
    path = copy(tmp_path, "lambda-slurm.gres.conf", "gres.conf")
    res = run_twice(slurm_gres, capsys, path, nodes={"lambda": gpus(range(8))})
    assert res["changed_nodes"] == ["lambda"]
    lines = path.read_text().splitlines()
    assert lines[0] == "NodeName=lambda Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia0 CPUs=0-15,32-47"
    assert lines[7] == "NodeName=lambda Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia7 CPUs=16-31,48-63"
    assert len(lines) == 8


def test_dgx1_recipe_one_gpu_gone_keeps_the_others_affinity(tmp_path, capsys):
    path = copy(tmp_path, "ubuntu-slurm-dgx.gres.conf", "gres.conf")
    before = path.read_text().splitlines(True)
    run_twice(slurm_gres, capsys, path, nodes={"linux1": gpus([0, 1, 2, 3, 5, 6, 7])}, typed=False)
    assert path.read_text() == "".join(before[:4] + before[5:])


@pytest.mark.parametrize("settings", [
    "CPUs=0-19,40-59", "Cores=0-9", "Links=-1,0,2,0", "Flags=nvidia_gpu_env", "AutoDetect=off",
    "Cores=0-9 Links=-1,0 Flags=amd_gpu_env,nvidia_gpu_env SiteKey=kept",
])
def test_per_gpu_settings_kept_when_the_type_changes(tmp_path, capsys, settings):
    path = tmp_path / "gres.conf"
    path.write_text("NodeName=n1 Name=gpu Type=old File=/dev/nvidia0 %s   # socket 0\n"
                    "NodeName=n1 Name=gpu Type=old File=/dev/nvidia1 %s\n" % (settings, settings))
    run_twice(slurm_gres, capsys, path, nodes={"n1": gpus([0, 1])})
    assert path.read_text() == ("NodeName=n1 Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia0 %s   # socket 0\n"
                                "NodeName=n1 Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia1 %s\n"
                                % (settings, settings))


def test_per_gpu_settings_follow_their_device_not_the_line_order(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    path.write_text("NodeName=n1 Name=gpu File=/dev/nvidia0 Cores=0-7\n"
                    "NodeName=n1 Name=gpu File=/dev/nvidia1 Cores=8-15\n"
                    "NodeName=n1 Name=gpu File=/dev/nvidia2 Cores=16-23\n")
    run_twice(slurm_gres, capsys, path, nodes={"n1": gpus([0, 2])}, typed=False)
    assert path.read_text() == ("NodeName=n1 Name=gpu File=/dev/nvidia0 Cores=0-7\n"
                                "NodeName=n1 Name=gpu File=/dev/nvidia2 Cores=16-23\n")


def test_range_line_split_keeps_its_settings_on_every_gpu_that_stays(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    path.write_text("NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-15 Flags=nvidia_gpu_env\n")
    run_twice(slurm_gres, capsys, path, nodes={"n1": gpus([0, 1, 3], "A100")})
    assert path.read_text() == "".join(
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia%d Cores=0-15 Flags=nvidia_gpu_env\n" % m for m in (0, 1, 3))


def test_multiple_files_line_kept(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    text = "NodeName=n1 Name=gpu Type=a100 MultipleFiles=/dev/nvidia0,/dev/dri/card1\n"
    path.write_text(text)
    unchanged(slurm_gres, capsys, path, nodes={"n1": gpus([0], "A100")})
    run_twice(slurm_gres, capsys, path, nodes={"n1": gpus([0], "H100")})
    assert path.read_text() == "NodeName=n1 Name=gpu Type=h100 MultipleFiles=/dev/nvidia0,/dev/dri/card1\n"


# --- item 11: meaning, not text ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-3]\n",
    "NodeName=n1 Name=gpu Type=a100 Count=4 File=/dev/nvidia[0-3]\n",
    "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1],/dev/nvidia[2-3]\n",
    "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1]\nNodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[2-3]\n",
    "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia3\nNodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-2]\n",
    "NodeName=n[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n",
    "NodeName=n1,n2 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-3\n",
    "Nodename = n[1-2]\tName=gpu  Type=a100\tFile=/dev/nvidia[0-3]   # both\n",
])
def test_same_gpus_spelled_another_way_is_no_change(tmp_path, capsys, text):
    path = tmp_path / "gres.conf"
    path.write_text(text)
    res = unchanged(slurm_gres, capsys, path, nodes={"n1": gpus(range(4), "A100"), "n2": gpus(range(4), "A100")}
                    if "n[1-2]" in text or "n1,n2" in text else {"n1": gpus(range(4), "A100")})
    assert res["changed_nodes"] == []


def test_real_site_ranges_for_two_nodes_and_two_types_are_no_change(tmp_path, capsys):
    path = copy(tmp_path, "danielmc81.gres.conf", "gres.conf")
    unchanged(slurm_gres, capsys, path, nodes={
        "ibnodo1": gpus(range(4), "M2070Q"), "ibnodo2": gpus(range(4), "M2070Q"),
        "visualizacion1": gpus([0], "GTX970") + gpus([1], "GTX1060"),
        "visualizacion2": gpus([0], "RTX2080"), "ibtesla": gpus(range(4), "V100")})


def test_one_node_of_a_shared_range_line_changes_only_its_own(tmp_path, capsys):
    path = copy(tmp_path, "danielmc81.gres.conf", "gres.conf")
    before = path.read_text()
    res = run_twice(slurm_gres, capsys, path, nodes={"ibnodo2": gpus(range(3), "M2070Q")})
    assert res["changed_nodes"] == ["ibnodo2"]
    after = path.read_text()
    assert after.splitlines()[0] == "Nodename=ibnodo1 \tName=gpu Type=m2070q\tFile=/dev/nvidia[0-3]"
    assert after.splitlines()[1:4] == ["Nodename=ibnodo2 Name=gpu Type=m2070q File=/dev/nvidia%d" % m
                                       for m in range(3)]
    assert after.splitlines(True)[4:] == before.splitlines(True)[1:]


def test_count_that_disagrees_with_the_files_is_a_change(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    path.write_text("NodeName=n1 Name=gpu Type=a100 Count=2 File=/dev/nvidia[0-3] Cores=0-3\n")
    run_twice(slurm_gres, capsys, path, nodes={"n1": gpus(range(4), "A100")})
    assert path.read_text() == "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-3\n"


# --- item 12: per-node gres.conf, slurm.conf with Include ---------------------------------------

@pytest.mark.parametrize("name, node, minors", [
    ("gpu-cluster-config.gres.conf", "dgx1", range(8)),
    ("ubuntu-slurm.gres.conf", "linux1", [0]),
])
def test_real_per_node_gres_conf_is_managed(tmp_path, capsys, name, node, minors):
    path = copy(tmp_path, name, "gres.conf")
    unchanged(slurm_gres, capsys, path, nodes={node: gpus(minors)}, typed=False)


def test_per_node_gres_conf_edit_keeps_settings_and_writes_no_nodename(tmp_path, capsys):
    path = copy(tmp_path, "gpu-cluster-config.gres.conf", "gres.conf")
    res = run_twice(slurm_gres, capsys, path, nodes={"dgx1": gpus(range(6))}, per_node=True)
    assert res["changed_nodes"] == ["dgx1"]
    cpus = ["0-9", "10-19", "20-29", "30-39", "0-9", "10-19"]
    assert path.read_text().splitlines() == [
        "Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia%d CPUs=%s" % (m, c) for m, c in zip(range(6), cpus)]


def test_per_node_needs_exactly_one_node(tmp_path, capsys):
    path = copy(tmp_path, "gpu-cluster-config.gres.conf", "gres.conf")
    before = path.read_bytes()
    res = run_module(slurm_gres, capsys, path=str(path), nodes={"a": gpus([0]), "b": gpus([0])}, per_node=True)
    assert res["failed"] is True and "per_node" in res["msg"] and path.read_bytes() == before
    res = run_module(slurm_gres, capsys, path=str(path), nodes={"a": gpus([0]), "b": gpus([0])})
    assert res["failed"] is True and res["msg"].startswith("%s:1: Name=gpu without NodeName" % path)
    assert "per_node" in res["msg"] and path.read_bytes() == before


CLOUD_CONF = """\
# nodes of the cluster, written by the site's generator
NodeName=DEFAULT State=UNKNOWN RealMemory=7552
NodeName=g1-gpu-[0-1] CPUs=8 Gres=gpu:nvidia_l4:1 Features=gpu   # L4 nodes
NodeName=c1-cpu-0 CPUs=4
PartitionName=gpu Nodes=g1-gpu-[0-1] State=UP
"""


def slurm_gcp_tree(tmp_path, include=None):
    etc = tmp_path / "etc"
    (etc / "nodes.d").mkdir(parents=True)
    main = copy(etc, "slurm-gcp.slurm.conf", "slurm.conf")
    if include is not None:
        main.write_text(main.read_text().replace("include cloud.conf", include))
    (etc / "cloud.conf").write_text(CLOUD_CONF)
    return main, etc / "cloud.conf"


@pytest.mark.parametrize("include", [None, "Include /ETC/cloud.conf", "include nodes.d/*.conf", "INCLUDE  cloud*"])
def test_nodes_in_an_included_file_are_edited_there(tmp_path, capsys, include):
    main, cloud = slurm_gcp_tree(tmp_path)
    if include is not None:
        if "nodes.d" in include:
            cloud = cloud.rename(cloud.parent / "nodes.d" / "cloud.conf")
        main.write_text(main.read_text().replace("include cloud.conf", include.replace("/ETC", str(main.parent))))
    main_before = main.read_bytes()
    res = run_twice(slurm_conf, capsys, main, settings={"GresTypes": "gpu"},
                    nodes={"g1-gpu-1": {"Gres": "gpu:nvidia_l4:2"}})
    assert res["changed_nodes"] == ["g1-gpu-1"] and res["changed_keys"] == ["GresTypes"]
    assert main.read_text().replace("GresTypes=gpu\n", "", 1) == main_before.decode()
    assert cloud.read_text() == CLOUD_CONF.replace(
        "NodeName=g1-gpu-[0-1] CPUs=8 Gres=gpu:nvidia_l4:1 Features=gpu   # L4 nodes\n",
        "NodeName=g1-gpu-0 CPUs=8 Gres=gpu:nvidia_l4:1 Features=gpu   # L4 nodes\n"
        "NodeName=g1-gpu-1 CPUs=8 Gres=gpu:nvidia_l4:2 Features=gpu\n")
    assert str(cloud) in res["changed_files"]


def test_included_nodes_no_change_and_named_file(tmp_path, capsys):
    main, cloud = slurm_gcp_tree(tmp_path)
    unchanged(slurm_conf, capsys, main, nodes={"g1-gpu-0": {"Gres": "gpu:nvidia_l4:1"}},
              partitions={"gpu": {"State": "UP"}})
    res = run_twice(slurm_conf, capsys, main, nodes_path=str(cloud), nodes={"c1-cpu-0": {"Gres": "gpu:0"},
                                                                            "g1-gpu-0": {"Weight": "10"}})
    assert res["changed_nodes"] == ["g1-gpu-0"] and res["changed_files"] == [str(cloud)]
    assert ("NodeName=g1-gpu-1 CPUs=8 Gres=gpu:nvidia_l4:1 Features=gpu   # L4 nodes\n"
            "NodeName=g1-gpu-0 CPUs=8 Gres=gpu:nvidia_l4:1 Features=gpu Weight=10\n") in cloud.read_text()


def test_included_file_backup_and_errors(tmp_path, capsys):
    main, cloud = slurm_gcp_tree(tmp_path)
    res = run_module(slurm_conf, capsys, path=str(main), nodes={"g1-gpu-0": {"Weight": "5"}}, backup=True)
    assert Path(res["backup_files"][str(cloud)]).read_text() == CLOUD_CONF
    res = run_module(slurm_conf, capsys, path=str(main), nodes={"nowhere": {"Weight": "5"}})
    assert res["failed"] is True and "nowhere is not defined in %s nor in the files it includes" % main in res["msg"]
    cloud.write_text(CLOUD_CONF + "NodeName=bad line\n")
    before = cloud.read_bytes(), main.read_bytes()
    res = run_module(slurm_conf, capsys, path=str(main), settings={"GresTypes": "gpu"},
                     nodes={"g1-gpu-0": {"Weight": "5"}})
    assert res["failed"] is True and res["msg"].startswith("%s:6: expected key=value" % cloud)
    assert (cloud.read_bytes(), main.read_bytes()) == before


def test_include_loop_is_refused(tmp_path, capsys):
    main = tmp_path / "slurm.conf"
    main.write_text("ClusterName=x\ninclude other.conf\n")
    (tmp_path / "other.conf").write_text("include slurm.conf\n")
    res = run_module(slurm_conf, capsys, path=str(main), nodes={"n1": {"Weight": "5"}})
    assert res["failed"] is True and "includes itself" in res["msg"]


def test_include_of_a_fifo_or_a_directory_fails_without_blocking(tmp_path, capsys):
    main, cloud = slurm_gcp_tree(tmp_path)
    os.mkfifo(tmp_path / "etc" / "fifo.conf")
    for target in ("fifo.conf", "nodes.d"):
        main.write_text(main.read_text().replace("include cloud.conf", "include %s\ninclude cloud.conf" % target))
        before = main.read_bytes(), cloud.read_bytes()
        res = run_module(slurm_conf, capsys, path=str(main), nodes={"g1-gpu-0": {"Weight": "5"}})
        assert res["failed"] is True and res["msg"] == "%s: not a regular file" % (tmp_path / "etc" / target)
        assert (main.read_bytes(), cloud.read_bytes()) == before
        main.write_text(main.read_text().replace("include %s\n" % target, ""))


@pytest.mark.parametrize("text", ["NodeName=n[0-99999999] Name=gpu File=/dev/nvidia0\n",
                                  "NodeName=n1 Name=gpu File=/dev/nvidia[0-9999][0-9999][0-99]\n"])
def test_host_lists_too_long_to_expand_fail_with_the_line(tmp_path, capsys, text):
    path = tmp_path / "gres.conf"
    path.write_text("# site\n" + text)
    res = run_module(slurm_gres, capsys, path=str(path), nodes={"n1": gpus([0])})
    assert res["failed"] is True and res["msg"].startswith("%s:2: " % path) and "more than" in res["msg"], res["msg"]
    assert path.read_text() == "# site\n" + text


# --- item 15: node names with a newline -----------------------------------------------------------

@pytest.mark.parametrize("name", ["n1\nName=gpu File=/dev/nvidia9", "n1\rx", "n1 n2", "", "n#1", "n1=x", 'n"1'])
def test_gres_node_names_that_would_inject_a_line_are_refused(tmp_path, capsys, name):
    path = copy(tmp_path, "lambda-slurm.gres.conf", "gres.conf")
    before = path.read_bytes()
    res = run_module(slurm_gres, capsys, path=str(path), nodes={name: gpus([0])})
    assert res["failed"] is True and res["msg"].startswith("%s: nodes: node name" % path), res["msg"]
    assert path.read_bytes() == before
    with pytest.raises(ValueError):
        set_gres("", {name: [{"File": "/dev/nvidia0"}]})


@pytest.mark.parametrize("option", ["nodes", "partitions"])
@pytest.mark.parametrize("name", ["n1\nSlurmUser=root", "lambda\n", "a\x00b", "a b"])
def test_slurm_conf_names_that_would_inject_a_line_are_refused(tmp_path, capsys, option, name):
    path = copy(tmp_path, "lambda-slurm.slurm.conf", "slurm.conf")
    before = path.read_bytes()
    res = run_module(slurm_conf, capsys, path=str(path), create_missing=True, **{option: {name: {"Weight": "1"}}})
    assert res["failed"] is True and res["msg"].startswith("%s: %s: " % (path, option)), res["msg"]
    assert path.read_bytes() == before


# --- every real file: no change is byte-identical; an edit keeps what the module does not own -----

@pytest.mark.parametrize("name", REAL_GRES)
def test_real_gres_conf_round_trips_when_its_gpus_are_asked_for(tmp_path, capsys, name):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_gres import described_gpus
    path = copy(tmp_path, name, "gres.conf")
    described = described_gpus(path.read_text())
    nodes = {}
    for node, devices in described.items():
        nodes[node or "thisnode"] = [{"name": t or "x", "uuid": "u%s" % f, "minor_number": int(f[len("/dev/nvidia"):])}
                                     for f, t in devices]
    typed = all(t for devices in described.values() for _f, t in devices)
    unchanged(slurm_gres, capsys, path, nodes=nodes, typed=typed)


@pytest.mark.parametrize("name", [n for n in REAL_SLURM if "gcp" not in n])
def test_real_slurm_conf_node_gres_edit_changes_only_that_node(tmp_path, capsys, name):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._slurm_conf import (
        defined_names,
        record_attributes,
    )
    path = copy(tmp_path, name, "slurm.conf")
    before = path.read_text()
    node = sorted(defined_names(before, "NodeName"))[-1]
    current = record_attributes(before, "NodeName", node).get("Gres")
    unchanged(slurm_conf, capsys, path, nodes={node: {"Gres": current or "gpu:0"}})
    res = run_twice(slurm_conf, capsys, path, nodes={node: {"Gres": "gpu:tesla_t4:3"}})
    assert res["changed_nodes"] == [node]
    after = path.read_text()
    assert record_attributes(after, "NodeName", node)["Gres"].endswith("gpu:tesla_t4:3")
    gone = [line for line in before.splitlines(True) if line not in after.splitlines(True)]
    assert len(gone) == 1 and gone[0].lstrip().lower().startswith("nodename="), gone
    for other in defined_names(before, "NodeName") - {node}:
        assert record_attributes(after, "NodeName", other) == record_attributes(before, "NodeName", other)


@pytest.mark.parametrize("name", REAL_SLURM)
def test_real_slurm_conf_round_trips_and_an_edit_keeps_the_rest(tmp_path, capsys, name):
    path = copy(tmp_path, name, "slurm.conf")
    before = path.read_text()
    unchanged(slurm_conf, capsys, path, settings={})
    res = run_twice(slurm_conf, capsys, path, settings={"GresTypes": "gpu,mps", "Epilog": "/etc/slurm/epilog.d/*"},
                    keep_existing=["Epilog"])
    after = path.read_text()
    gone = [line for line in before.splitlines(True) if line not in after.splitlines(True)]
    assert all(line.lstrip().lower().startswith("grestypes") for line in gone), gone
    assert "mps" in res["settings"]["GresTypes"]
