# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_conf and slurm_gres through AnsibleModule: check mode predicts exactly and writes nothing, --diff,
idempotence, backup, path:line errors, return values."""

from pathlib import Path

import pytest
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module, warning_texts

from ansible_collections.hpc.gpu_containers.plugins.modules import slurm_conf, slurm_gres

SLURM_CONF = """\
# site configuration
ClusterName=testbed
Epilog=/site/epilog.sh
NodeName=n[1-2] CPUs=2 State=UNKNOWN   # GPU nodes
PartitionName=batch Nodes=ALL Default=YES
"""
V100 = [{"name": "Tesla V100-SXM2-16GB", "uuid": "GPU-v100-%d" % i, "minor_number": i} for i in range(2)]
A100 = [{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a100-%d" % i, "minor_number": 3 - i} for i in range(4)]


def check_then_run(module, capsys, path, **args):
    """Check mode first (nothing written, same prediction), then the real run, then a rerun without change."""
    before = path.read_bytes() if path.exists() else None
    predicted = run_module(module, capsys, check=True, diff=True, path=str(path), **args)
    assert (path.read_bytes() if path.exists() else None) == before
    done = run_module(module, capsys, diff=True, path=str(path), **args)
    assert predicted == done
    if done["changed"]:
        assert done["diff"]["after"] == path.read_text()
    again = run_module(module, capsys, path=str(path), **args)
    assert again["changed"] is False
    return done


def test_slurm_conf_settings_nodes_and_keep_existing(tmp_path, capsys):
    path = tmp_path / "slurm.conf"
    path.write_text(SLURM_CONF)
    res = check_then_run(slurm_conf, capsys, path, settings={"GresTypes": "gpu", "Epilog": "/etc/slurm/epilog.d/*",
                                                             "KillWait": 30},
                         keep_existing=["Epilog"],
                         nodes={"n1": {"Gres": "gpu:tesla_v100-sxm2-16gb:2"}, "n2": {"Gres": "gpu:nvidia_a100:4"}})
    assert res["changed_keys"] == ["GresTypes", "KillWait"]
    assert res["changed_nodes"] == ["n1", "n2"] and res["changed_partitions"] == []
    assert res["settings"] == {"GresTypes": "gpu", "Epilog": "/site/epilog.sh", "KillWait": "30"}
    assert "Epilog is '/site/epilog.sh' in the file" in warning_texts(res)[0]
    text = path.read_text()
    assert "NodeName=n1 CPUs=2 State=UNKNOWN Gres=gpu:tesla_v100-sxm2-16gb:2   # GPU nodes\n" \
           "NodeName=n2 CPUs=2 State=UNKNOWN Gres=gpu:nvidia_a100:4\n" in text
    assert text.startswith("# site configuration\nClusterName=testbed\nEpilog=/site/epilog.sh\n")


def test_slurm_conf_values_normalized(tmp_path, capsys):
    path = tmp_path / "slurm.conf"
    path.write_text("A=1\n")
    res = run_module(slurm_conf, capsys, path=str(path), settings={"B": True, "C": ["x", "y"], "A": None})
    assert path.read_text() == "B=YES\nC=x,y\n" and res["changed_keys"] == ["B", "C", "A"]


def test_slurm_conf_errors_name_path_and_line(tmp_path, capsys):
    path = tmp_path / "slurm.conf"
    path.write_text("A=1\nnot a pair\n")
    res = run_module(slurm_conf, capsys, path=str(path), settings={"A": "2"})
    assert res["failed"] is True and res["msg"].startswith("%s:2: expected key=value" % path)
    assert path.read_text() == "A=1\nnot a pair\n"
    res = run_module(slurm_conf, capsys, path=str(path), settings={"A": 'x"y'})
    assert res["failed"] is True and "double quote" in res["msg"]
    res = run_module(slurm_conf, capsys, path=str(tmp_path / "missing.conf"), settings={"A": "1"})
    assert res["failed"] is True and res["msg"].endswith("file does not exist")
    path.write_text("NodeName=n1\n")
    res = run_module(slurm_conf, capsys, path=str(path), nodes={"n9": {"CPUs": 1}})
    assert res["failed"] is True and "NodeName n9 is not defined" in res["msg"]


def test_slurm_conf_backup(tmp_path, capsys):
    path = tmp_path / "slurm.conf"
    path.write_text("A=1\n")
    res = run_module(slurm_conf, capsys, path=str(path), settings={"A": "2"}, backup=True)
    assert Path(res["backup_file"]).read_text() == "A=1\n" and path.read_text() == "A=2\n"


def test_slurm_gres_creates_and_returns_gres(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    res = check_then_run(slurm_gres, capsys, path, nodes={"n1": V100, "n2": A100, "cpu1": []})
    assert res["changed_nodes"] == ["n1", "n2"]
    assert res["gres"] == {"n1": "gpu:tesla_v100-sxm2-16gb:2", "n2": "gpu:nvidia_a100-sxm4-40gb:4", "cpu1": "gpu:0"}
    assert res["node_attributes"]["n1"] == {"Gres": "gpu:tesla_v100-sxm2-16gb:2"}
    # Slurm's order is the device files' order, not the list's: A100 index 0 is /dev/nvidia0 (GPU-a100-3).
    assert res["devices"]["n2"][0] == {"index": 0, "uuid": "GPU-a100-3", "file": "/dev/nvidia0"}
    assert path.read_text().splitlines()[2] == "NodeName=n2 Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia0"
    assert (path.stat().st_mode & 0o777) == 0o644


def test_slurm_gres_nothing_to_write_creates_no_file(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    res = run_module(slurm_gres, capsys, path=str(path), nodes={"cpu1": []})
    assert res["changed"] is False and not path.exists()


def test_slurm_gres_drift_shows_in_the_diff(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    run_module(slurm_gres, capsys, path=str(path), nodes={"n1": V100})
    path.write_text(path.read_text().replace("/dev/nvidia1", "/dev/nvidia7"))
    res = run_module(slurm_gres, capsys, check=True, diff=True, path=str(path), nodes={"n1": V100})
    assert res["changed"] is True and "/dev/nvidia7" in res["diff"]["before"] and "/dev/nvidia7" not in res["diff"]["after"]


@pytest.mark.parametrize("nodes, message", [
    ({"n1": "not a list"}, "must be a list"),
    ({"n1": [{"name": "x", "uuid": "u"}]}, "minor number"),
])
def test_slurm_gres_bad_input(tmp_path, capsys, nodes, message):
    res = run_module(slurm_gres, capsys, path=str(tmp_path / "gres.conf"), nodes=nodes)
    assert res["failed"] is True and message in res["msg"]


def test_slurm_gres_shared_line_without_nodename(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    path.write_text("# all nodes\nName=gpu File=/dev/nvidia[0-1]\n")
    res = run_module(slurm_gres, capsys, path=str(path), nodes={"n1": V100, "n2": A100})
    assert res["failed"] is True and res["msg"].startswith("%s:2: Name=gpu without NodeName" % path)
    res = run_module(slurm_gres, capsys, path=str(path), nodes={"n1": V100}, per_node=False)
    assert res["failed"] is True and res["msg"].startswith("%s:2: Name=gpu without NodeName" % path)
    assert path.read_text() == "# all nodes\nName=gpu File=/dev/nvidia[0-1]\n"


def test_slurm_gres_per_node_file(tmp_path, capsys):
    path = tmp_path / "gres.conf"
    path.write_text("# this node\nName=gpu File=/dev/nvidia[0-1] CPUs=0-7\n")
    res = check_then_run(slurm_gres, capsys, path, nodes={"n1": V100}, per_node=True)
    assert res["changed_nodes"] == ["n1"]
    assert path.read_text() == "# this node\nName=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia[0-1] CPUs=0-7\n"
