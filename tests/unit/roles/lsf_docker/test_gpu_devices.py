# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_docker_gpu_access: devices - each execution host passes its own GPU device nodes.

The profiles name the role's options script (CONTAINER options(@script)), which LSF runs on the execution host
at job start: a 2-GPU node passes /dev/nvidia0-1 and a 4-GPU node /dev/nvidia0-3 (the profile used to carry only
the minors every GPU node had, so GPUs 2 and 3 of the bigger node never reached a container). The script is
rendered from the role's template (its source in the role's files/) and run for real on a stand-in /dev whose device nodes link to /dev/null (a
character device); the starter, in devices mode, leaves LSF's CUDA_VISIBLE_DEVICES as LSF set it.
"""

import copy
import os
import subprocess
import sys

import pytest

# the starter tests' fixture, used below
from ansible_collections.hpc.gpu_containers.tests.unit.roles.lsf_docker.test_starter_wrapper import (  # noqa: F401 pylint: disable=unused-import
    wrapper,
)
from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    debug_values,
    import_role_program,
    ok,
    render_role_template,
    role_defaults,
    run_playbook,
)


def render(control):
    return render_role_template("lsf_docker", "lsf-docker-gpu-devices.py.j2", lsf_docker_python=sys.executable,
                                lsf_docker_gpu_control_devices=control)


def stand_in_dev(tmp_path, names):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in names:
        (dev / name).symlink_to("/dev/null")
    return dev


@pytest.fixture
def script(tmp_path):
    """The program as the role installs it (rendered, as a file), and its source imported as a module with the same
    control devices (its device_nodes() takes the /dev to list)."""
    def make(control):
        path = tmp_path / "lsf-docker-gpu-devices.py"
        path.write_text(render(control))
        path.chmod(0o755)
        module = import_role_program("lsf_docker", "lsf_docker_gpu_devices.py", "gpu_devices_%d" % len(control))
        module.CONTROL = control
        return path, module
    return make


@pytest.mark.parametrize("gpus", [2, 4])
def test_each_host_passes_its_own_gpus_then_the_control_devices_it_has(tmp_path, script, gpus):
    dev = stand_in_dev(tmp_path, ["nvidia%d" % n for n in range(gpus)] + ["nvidiactl", "nvidia-uvm", "nvidia10"])
    (dev / "nvidia7").write_text("a regular file is no device node\n")
    _path, module = script([str(dev / "nvidiactl"), str(dev / "nvidia-uvm"), str(dev / "nvidia-uvm-tools")])
    assert module.device_nodes(str(dev)) == (["%s/nvidia%d" % (dev, n) for n in range(gpus)] + [str(dev / "nvidia10")]
                                             + [str(dev / "nvidiactl"), str(dev / "nvidia-uvm")])


def test_a_host_without_gpu_passes_nothing(tmp_path, script):
    dev = stand_in_dev(tmp_path, ["nvidiactl", "null"])
    _path, module = script([str(dev / "nvidiactl")])
    assert module.device_nodes(str(dev)) == []


def test_the_script_prints_docker_options_whatever_the_environment(script):
    path, module = script(["/dev/null"])
    hostile = {"PATH": "/nonexistent", "PYTHONPATH": "/nonexistent", "PYTHONSTARTUP": "/nonexistent/x.py",
               "LD_PRELOAD": "/nonexistent/evil.so", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    proc = subprocess.run([str(path)], env=hostile, capture_output=True, text=True, check=True)
    expected = module.device_nodes()
    assert proc.stdout == " ".join("--device=%s" % node for node in expected) + "\n"
    assert all(not os.path.basename(node).startswith("nvidia") or node.startswith("/dev/") for node in expected)


def role_value(tmp_path, expression, **overrides):
    variables = copy.deepcopy(role_defaults("lsf_docker"))
    variables.update({"__lsf_docker_config_info": {"layout": {"confdir": "/usr/share/lsf/conf"}}})
    variables.update(overrides)
    plays = [{"name": "value", "hosts": "all", "gather_facts": False, "vars": variables,
              "vars_files": [str(ROLES / "lsf_docker" / "vars" / "main.yml")],
              "tasks": [{"name": "value: it", "ansible.builtin.debug": {"msg": "{{ %s }}" % expression}}]}]
    return debug_values(ok(run_playbook(tmp_path, plays)))["it"]


def test_devices_profiles_name_the_script_and_no_fixed_gpu(tmp_path):
    options = role_value(tmp_path, "{'options': __lsf_docker_container_options, 'scripts': __lsf_docker_options_scripts}",
                         lsf_docker_gpu_access="devices", lsf_docker_gpu_minors=[0, 1],
                         lsf_docker_options_scripts=["/shared/site-options.sh"])
    assert options["scripts"] == ["/usr/share/lsf/conf/docker/lsf-docker-gpu-devices.py", "/shared/site-options.sh"]
    assert not [option for option in options["options"] if "/dev/nvidia" in option], options["options"]


def test_runtime_profiles_do_not_name_it(tmp_path):
    scripts = role_value(tmp_path, "__lsf_docker_options_scripts", lsf_docker_gpu_access="runtime")
    assert scripts == []


def test_in_devices_mode_the_starter_keeps_lsfs_numbers(wrapper):  # noqa: F811 pylint: disable=redefined-outer-name
    _path, run = wrapper(__lsf_docker_gpu_mode="devices")
    seen = run({"LSB_EFFECTIVE_RSRCREQ": "select[ngpus>0] rusage[ngpus_physical=2.00]", "CUDA_VISIBLE_DEVICES": "2,3",
                "NVIDIA_VISIBLE_DEVICES": "all"})["env"]
    assert seen["CUDA_VISIBLE_DEVICES"] == "2,3"          # the host's GPUs 2 and 3 among the host's device nodes
    assert seen["NVIDIA_VISIBLE_DEVICES"] == "void"       # the runtime (where it is the default) adds none
    # a job that reserved no GPU: no GPU variable of the submitter's passes
    seen = run({"CUDA_VISIBLE_DEVICES": "0,1,2,3", "LSB_EFFECTIVE_RSRCREQ": "select[type == local]"})["env"]
    assert "CUDA_VISIBLE_DEVICES" not in seen and seen["NVIDIA_VISIBLE_DEVICES"] == "void"


def test_in_runtime_mode_the_starter_still_renumbers(wrapper):  # noqa: F811 pylint: disable=redefined-outer-name
    _path, run = wrapper()
    seen = run({"LSB_EFFECTIVE_RSRCREQ": "rusage[ngpus_physical=2.00]", "CUDA_VISIBLE_DEVICES": "2,3"})["env"]
    assert seen["CUDA_VISIBLE_DEVICES"] == "0,1" and seen["NVIDIA_VISIBLE_DEVICES"] == "2,3"
