# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""slurm_docker's gres.conf and slurm.conf tasks with slurm_docker_gres_per_node, run as the role writes them.

Two compute "nodes" are local aliases of this machine, each with its own configuration directory holding a
per-node gres.conf as a site published it (tests/fixtures/slurm/real/gpu-cluster-config.gres.conf: no NodeName,
CPUs= per GPU) and fake GPU facts. With the option each node's own file is edited (no NodeName written, its CPUs=
kept), the controller's gres.conf is left alone, slurm.conf gets each node's Gres, and the reload plan counts the
nodes whose own file changed. Without it the controller's one gres.conf is edited, as before.
"""

import json
import sys
from pathlib import Path

import yaml

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    ok,
    role_defaults,
    role_task,
    run_playbook,
)

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "slurm" / "real"
PER_NODE_GRES = (REAL / "gpu-cluster-config.gres.conf").read_text()
ROLE = ROLES / "slurm_docker"

V100 = [{"name": "Tesla V100-SXM2-32GB", "uuid": "GPU-v100-%d" % i, "minor_number": i} for i in range(8)]
A100 = [{"name": "NVIDIA A100-SXM4-40GB", "uuid": "GPU-a100-%d" % i, "minor_number": i} for i in range(4)]
SLURM_CONF = ("ClusterName=dgx\nSlurmctldHost=master\nGresTypes=gpu\n"
              "NodeName=dgx1 CPUs=80 Gres=gpu:8 State=UNKNOWN\n"
              "NodeName=dgx2 CPUs=80 Gres=gpu:8 State=UNKNOWN\n"
              "PartitionName=batch Nodes=dgx[1-2] Default=YES State=UP\n")

GRES_TASK = role_task("slurm_docker", "main.yml", "Describe the compute nodes' GPUs in gres.conf")
INCLUDE_TASK = role_task("slurm_docker", "main.yml",
                         "Describe each compute node's GPUs in its own gres.conf (slurm_docker_gres_per_node)")
SLURM_CONF_TASK = role_task("slurm_docker", "main.yml",
                            "Set GresTypes, the nodes' Gres and platform features and the epilog in slurm.conf")
PLAN_TASK = role_task("slurm_docker", "main.yml", "Work out which reloads the changes need")
# The role's handlers reload Slurm: here a stand-in listens on their topic.
HANDLER = {"name": "configuration changed", "ansible.builtin.debug": {"msg": "reload"},
           "listen": "slurm_docker configuration changed"}


def setup(tmp_path, dgx2_gres=PER_NODE_GRES):
    """The controller's and each node's configuration directory, and an inventory of local aliases."""
    dirs = {name: tmp_path / name for name in ("controller", "dgx1", "dgx2")}
    for directory in dirs.values():
        directory.mkdir()
    (dirs["controller"] / "slurm.conf").write_text(SLURM_CONF)
    (dirs["controller"] / "gres.conf").write_text("# the controller's own\n")
    (dirs["dgx1"] / "gres.conf").write_text(PER_NODE_GRES)
    (dirs["dgx2"] / "gres.conf").write_text(dgx2_gres)
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {
        "slurm_controller": {"hosts": {"controller": dict(local, slurm_docker_conf_dir=str(dirs["controller"]))}},
        "slurm_nodes": {"hosts": {
            "dgx1": dict(local, slurm_docker_conf_dir=str(dirs["dgx1"]), fake_gpus=V100),
            "dgx2": dict(local, slurm_docker_conf_dir=str(dirs["dgx2"]), fake_gpus=A100)}}}}}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump(inventory))
    return dirs, path


def plays(per_node, values_file, typed=True, features=False):
    variables = role_defaults("slurm_docker")
    variables.update(slurm_docker_gres_per_node=per_node, slurm_docker_gres_typed=typed, slurm_docker_backup=False,
                     slurm_docker_epilog="", slurm_docker_force_reload=False,
                     slurm_docker_platform_features=features, values_file=str(values_file))
    variables.pop("slurm_docker_conf_dir")  # each host's own, from the inventory
    facts = {"name": "GPU facts (recorded, as gpu_facts returns them)",
             "ansible.builtin.set_fact": {"gpu_facts": {"present": True, "gpus": "{{ fake_gpus }}",
                                                        "driver_version": "{{ fake_driver | default('') }}",
                                                        "cuda_driver_version": "{{ fake_cuda | default('') }}",
                                                        "cpu": {"architecture": "x86_64", "x86_64_level": "v3"}},
                                          "cacheable": True}}
    values = {"name": "Write down the values the tests look at", "ansible.builtin.copy": {
        "dest": "{{ values_file }}", "mode": "0644", "content": "{{ {%s} | to_json }}" % ", ".join((
            "'node_attributes': __slurm_docker_gres_node_attributes",
            "'per_node_results': (__slurm_docker_gres_per_node_result | default({})).results | default([])"
            " | selectattr('node_attributes', 'defined') | map(attribute='changed') | list",
            "'edits': __slurm_docker_gres_edits",
            "'plan': __slurm_docker_reload_plan"))}}
    return [
        {"name": "facts", "hosts": "slurm_nodes", "gather_facts": False, "tasks": [facts]},
        {"name": "controller", "hosts": "slurm_controller", "gather_facts": False, "vars": variables,
         "vars_files": [str(ROLE / "vars" / "main.yml")],
         "tasks": [dict(GRES_TASK), dict(INCLUDE_TASK, **{"ansible.builtin.include_tasks": str(
             ROLE / "tasks" / "gres-per-node.yml")}), dict(SLURM_CONF_TASK), dict(PLAN_TASK), values],
         "handlers": [HANDLER]},
    ]


def run(tmp_path, inventory, per_node, typed=True, features=False):
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    values_file = workdir / "values.json"
    ok(run_playbook(workdir, plays(per_node, values_file, typed, features), "-i", str(inventory)))
    return json.loads(values_file.read_text())


def test_each_node_edits_its_own_gres_conf(tmp_path):
    dirs, inventory = setup(tmp_path)
    values = run(tmp_path, inventory, per_node=True)
    dgx1 = (dirs["dgx1"] / "gres.conf").read_text()
    dgx2 = (dirs["dgx2"] / "gres.conf").read_text()
    # every line the node's own, typed, with the site's CPUs= affinity kept; nothing names a node
    assert dgx1 == "".join(line.replace("Name=gpu ", "Name=gpu Type=tesla_v100-sxm2-32gb ") + "\n"
                           for line in PER_NODE_GRES.splitlines())
    assert "NodeName" not in dgx1 + dgx2
    # dgx2 has 4 GPUs: the lines of the 4 it lacks go, the others keep their CPUs=
    assert dgx2 == "".join(line.replace("Name=gpu ", "Name=gpu Type=nvidia_a100-sxm4-40gb ") + "\n"
                           for line in PER_NODE_GRES.splitlines()[:4])
    assert (dirs["controller"] / "gres.conf").read_text() == "# the controller's own\n"
    assert values["node_attributes"] == {"dgx1": {"Gres": "gpu:tesla_v100-sxm2-32gb:8"},
                                         "dgx2": {"Gres": "gpu:nvidia_a100-sxm4-40gb:4"}}
    slurm_conf = (dirs["controller"] / "slurm.conf").read_text()
    assert "NodeName=dgx1 CPUs=80 Gres=gpu:tesla_v100-sxm2-32gb:8 State=UNKNOWN\n" in slurm_conf
    assert "NodeName=dgx2 CPUs=80 Gres=gpu:nvidia_a100-sxm4-40gb:4 State=UNKNOWN\n" in slurm_conf
    assert values["per_node_results"] == [True, True]
    plan = values["plan"]
    assert plan["restart"] is True and sorted(plan["nodes"]) == ["dgx1", "dgx2"]
    assert plan["gpus"] == {"dgx1": 8, "dgx2": 4}

    # a second run: every file already describes its node's GPUs and stays byte-identical
    before = {name: (directory / "gres.conf").read_bytes() for name, directory in dirs.items()}
    before_slurm = (dirs["controller"] / "slurm.conf").read_bytes()
    values = run(tmp_path, inventory, per_node=True)
    assert {name: (directory / "gres.conf").read_bytes() for name, directory in dirs.items()} == before
    assert (dirs["controller"] / "slurm.conf").read_bytes() == before_slurm
    assert values["per_node_results"] == [False, False]
    assert values["plan"]["restart"] is False and values["plan"]["reconfigure"] is False
    assert values["plan"]["nodes"] == []


def test_only_the_node_whose_file_changed_is_restarted(tmp_path):
    # dgx2's file already describes its GPUs (untyped, the site's own form): it is left byte-identical
    dgx2_gres = "".join(line + "\n" for line in PER_NODE_GRES.splitlines()[:4])
    dirs, inventory = setup(tmp_path, dgx2_gres=dgx2_gres)
    (dirs["controller"] / "slurm.conf").write_text(SLURM_CONF.replace("dgx2 CPUs=80 Gres=gpu:8", "dgx2 CPUs=80 Gres=gpu:4"))
    values = run(tmp_path, inventory, per_node=True, typed=False)
    assert (dirs["dgx2"] / "gres.conf").read_text() == dgx2_gres
    assert (dirs["dgx1"] / "gres.conf").read_text() == PER_NODE_GRES
    assert values["per_node_results"] == [False, False]
    assert values["node_attributes"] == {"dgx1": {"Gres": "gpu:8"}, "dgx2": {"Gres": "gpu:4"}}
    assert values["plan"]["nodes"] == [] and values["plan"]["restart"] is False

    (dirs["dgx1"] / "gres.conf").write_text(dgx2_gres)  # dgx1 now lists 4 of its 8 GPUs
    values = run(tmp_path, inventory, per_node=True, typed=False)
    assert values["per_node_results"] == [True, False]
    assert (dirs["dgx1"] / "gres.conf").read_text().count("Name=gpu") == 8
    assert "NodeName" not in (dirs["dgx1"] / "gres.conf").read_text()
    assert (dirs["dgx2"] / "gres.conf").read_text() == dgx2_gres
    assert values["plan"]["nodes"] == ["dgx1"] and values["plan"]["restart"] is True
    assert values["plan"]["check_nodes"] == ["dgx1"]


def test_without_the_option_the_controllers_one_gres_conf_is_edited(tmp_path):
    dirs, inventory = setup(tmp_path)
    values = run(tmp_path, inventory, per_node=False)
    controller = (dirs["controller"] / "gres.conf").read_text()
    assert controller.startswith("# the controller's own\n")
    assert controller.count("NodeName=dgx1 Name=gpu Type=tesla_v100-sxm2-32gb File=") == 8
    assert controller.count("NodeName=dgx2 Name=gpu Type=nvidia_a100-sxm4-40gb File=") == 4
    # the nodes' own files are not touched
    assert (dirs["dgx1"] / "gres.conf").read_text() == PER_NODE_GRES
    assert (dirs["dgx2"] / "gres.conf").read_text() == PER_NODE_GRES
    assert values["per_node_results"] == []
    assert values["node_attributes"] == {"dgx1": {"Gres": "gpu:tesla_v100-sxm2-32gb:8"},
                                         "dgx2": {"Gres": "gpu:nvidia_a100-sxm4-40gb:4"}}
    assert "NodeName=dgx2 CPUs=80 Gres=gpu:nvidia_a100-sxm4-40gb:4 State=UNKNOWN\n" in (
        dirs["controller"] / "slurm.conf").read_text()
    assert sorted(values["plan"]["nodes"]) == ["dgx1", "dgx2"]


# slurmd -G at the process boundary: it notes which gres.conf it was given and lists the GPUs of its node there.
FAKE_SLURMD = r'''#!PYTHON
import json, os, sys
conf, node = sys.argv[sys.argv.index("-f") + 1], sys.argv[sys.argv.index("-N") + 1]
with open(os.path.join(os.path.dirname(conf), "gres.conf")) as handle:
    gres = handle.read()
with open(os.environ["FAKE_SLURMD_LOG"], "a") as log:
    log.write(json.dumps({"node": node, "gres_conf": gres}) + "\n")
for line in gres.splitlines():
    if "Name=gpu" in line and ("NodeName" not in line or "NodeName=%s " % node in line):
        print("Gres Name=gpu Count=1 Index=0 ID=7696487 File=/dev/nvidia0")
'''


def handler(name):
    """The handler called ``name`` in the role's handlers/main.yml, as a task of its own."""
    handlers = yaml.safe_load((ROLE / "handlers" / "main.yml").read_text())
    task = [task for task in handlers if task["name"] == name][0]
    task.pop("listen")
    return task


def test_slurmd_checks_each_node_with_its_own_gres_conf(tmp_path):
    dirs, inventory = setup(tmp_path)
    run(tmp_path, inventory, per_node=True)
    slurmd, log = tmp_path / "slurmd", tmp_path / "slurmd.log"
    slurmd.write_text(FAKE_SLURMD.replace("PYTHON", sys.executable))
    slurmd.chmod(0o755)

    def check(per_node):
        log.write_text("")
        variables = role_defaults("slurm_docker")
        variables.pop("slurm_docker_conf_dir")
        variables.update(slurm_docker_gres_per_node=per_node, slurm_docker_slurmd_command=str(slurmd),
                         __slurm_docker_reload_plan={"check_nodes": ["dgx1", "dgx2"], "gpus": {"dgx1": 8, "dgx2": 4}})
        play = {"name": "handlers", "hosts": "slurm_controller", "gather_facts": False, "vars": variables,
                "vars_files": [str(ROLE / "vars" / "main.yml")],
                "tasks": [handler("Read the new slurm.conf and gres.conf"),
                          handler("Read each checked node's own gres.conf"),
                          handler("Check the new files with slurmd -G on the changed nodes")]}
        proc = run_playbook(tmp_path / "work", [play], "-i", str(inventory), env={"FAKE_SLURMD_LOG": str(log)})
        return proc, [json.loads(line) for line in log.read_text().splitlines()]

    proc, calls = check(per_node=True)
    ok(proc)
    assert calls == [{"node": "dgx1", "gres_conf": (dirs["dgx1"] / "gres.conf").read_text()},
                     {"node": "dgx2", "gres_conf": (dirs["dgx2"] / "gres.conf").read_text()}]
    # without the option both are checked with the controller's gres.conf (which here lists no GPU: it fails)
    proc, calls = check(per_node=False)
    assert proc.returncode != 0 and "slurmd -G lists 0 GPU(s), the node has 8" in proc.stdout
    assert [call["gres_conf"] for call in calls] == ["# the controller's own\n"] * 2


def test_platform_features_join_the_sites_own_and_replace_stale_ones(tmp_path):
    """slurm_docker_platform_features: each node's platform as Features; the site's own features stay, a platform
    feature the node no longer has goes, and a rerun changes nothing."""
    dirs, inventory = setup(tmp_path)
    data = yaml.safe_load(inventory.read_text())
    nodes = data["all"]["children"]["slurm_nodes"]["hosts"]
    nodes["dgx2"].update(fake_driver="535.129.03", fake_cuda="12.2",
                         fake_gpus=[dict(gpu, compute_capability="8.0") for gpu in A100])
    inventory.write_text(yaml.safe_dump(data))
    (dirs["controller"] / "slurm.conf").write_text(SLURM_CONF.replace(
        "NodeName=dgx2 CPUs=80 Gres=gpu:8 State=UNKNOWN", "NodeName=dgx2 CPUs=80 Gres=gpu:8 State=UNKNOWN "
        "Features=ib,cuda11.0,bigmem"))
    values = run(tmp_path, inventory, per_node=False, features=True)
    slurm_conf = (dirs["controller"] / "slurm.conf").read_text()
    assert "NodeName=dgx1 CPUs=80 Gres=gpu:tesla_v100-sxm2-32gb:8 State=UNKNOWN Features=x86_64,x86-64-v3\n" in slurm_conf
    assert ("NodeName=dgx2 CPUs=80 Gres=gpu:nvidia_a100-sxm4-40gb:4 State=UNKNOWN "
            "Features=ib,bigmem,x86_64,x86-64-v3,cuda12.2,nvidia535,sm_80\n") in slurm_conf
    assert sorted(values["plan"]["nodes"]) == ["dgx1", "dgx2"]
    before = (dirs["controller"] / "slurm.conf").read_bytes()
    values = run(tmp_path, inventory, per_node=False, features=True)
    assert (dirs["controller"] / "slurm.conf").read_bytes() == before
    assert values["plan"]["restart"] is False and values["plan"]["reconfigure"] is False
