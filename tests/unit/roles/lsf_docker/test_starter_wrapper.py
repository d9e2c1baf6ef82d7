# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF Docker starter wrapper, as the role's template installs it (the program's source in the role's files/,
imported by the test below, with the site's settings at its end), run for real.

LSF runs the wrapper as the Docker driver's user (in the docker group) with the
job's environment, which the submitting user controls. A recording
``docker-starter.py`` in a temporary LSF_SERVERDIR stands in for LSF's driver
(the process boundary): it writes down the environment, argv, umask and Python
flags it was started with.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    import_role_program,
    render_role_template,
)

ROLE = ROLES / "lsf_docker"
# The resolver the role installs on each Docker host is this file, as it is.
RESOLVER = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "_image_catalogue.py"

RECORDER = """\
import json, os, sys
with open(os.environ.get("RECORD_TO") or sys.argv[-1], "w") as out:
    json.dump({"env": dict(os.environ), "argv": sys.argv, "umask": os.umask(0),
               "isolated": sys.flags.isolated, "path": sys.path}, out)
"""


def render(serverdir, **overrides):
    variables = {
        "lsf_docker_python": sys.executable,
        "lsf_docker_exec_driver_user": "lsfadmin",
        "lsf_docker_starter_umask": "0022",
        "lsf_docker_gpu_isolation": True,
        "lsf_docker_gpu_driver_capabilities": "compute,utility",
        "__lsf_docker_layout": {"serverdir": str(serverdir), "envdir": str(serverdir) + "/no-envdir"},
        "lsf_docker_image_resolver": str(RESOLVER),
        "lsf_docker_image_selection": "node",
        "lsf_docker_node_image_repository": "localhost/hpc-node",
        "lsf_docker_catalogue_file": "/etc/hpc-gpu-containers/images.json",
        "lsf_docker_platform_file": "/etc/hpc-gpu-containers/platform.json",
        "lsf_docker_client": "/usr/bin/docker",
        "lsf_docker_starter_search_path": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "__lsf_docker_gpu_enforced": False,
        "__lsf_docker_gpu_mode": "runtime",
    }
    variables.update(overrides)
    return render_role_template("lsf_docker", "lsf-docker-starter.py.j2", **variables)


@pytest.fixture
def wrapper(tmp_path):
    """(path of the rendered wrapper, run(env) -> what the driver saw)."""
    serverdir = tmp_path / "serverdir"
    serverdir.mkdir()
    (serverdir / "docker-starter.py").write_text(RECORDER)
    record = tmp_path / "record.json"

    def make(**overrides):
        path = tmp_path / "lsf-docker-starter.py"
        path.write_text(render(serverdir, **overrides))
        path.chmod(0o755)

        def run(env, args=()):
            base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RECORD_TO": str(record)}
            base.update(env)
            proc = subprocess.run([str(path)] + list(args), env=base, capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stderr
            return json.loads(record.read_text())
        return path, run
    return make


def test_the_installed_wrapper_is_the_source_with_every_setting_of_the_site(tmp_path):
    source = (ROLE / "files" / "lsf_docker_starter.py").read_text()
    module = import_role_program("lsf_docker", "lsf_docker_starter.py")
    # the settings: the module-level names the source gives before its fixed lists
    settings = set(re.findall(r"^([A-Z][A-Z_]+) = ", source.partition("\n# Never passed on:")[0], re.M))
    assert {"DRIVER", "UMASK", "GPU_ISOLATION", "LSF_DIRS", "LOGICAL_IMAGE"} <= settings
    assert all(hasattr(module, name) for name in settings)
    installed = render(tmp_path / "serverdir", lsf_docker_starter_umask="0027")
    head, _sep, rest = installed.partition("\n# Ansible managed\n")
    assert head == "#!%s -I" % sys.executable
    assert rest.startswith(source.rstrip() + "\n")
    trailer = rest[len(source.rstrip()):]
    assert set(re.findall(r"^    ([A-Z][A-Z_]+) = ", trailer, re.M)) == settings
    assert "    DRIVER = %s\n" % json.dumps(str(tmp_path / "serverdir" / "docker-starter.py")) in trailer
    assert "    UMASK = 0o027\n" in trailer


def test_the_driver_runs_isolated_with_the_job_arguments(wrapper):
    _path, run = wrapper()
    seen = run({"LSB_JOBID": "7"}, ["job-arg", "two"])
    assert seen["argv"][1:] == ["job-arg", "two"]
    assert seen["isolated"] == 1
    assert seen["env"]["LSB_JOBID"] == "7"
    assert seen["umask"] == 0o022


def test_a_hostile_job_environment_reaches_nothing(wrapper, tmp_path):
    """LSF_SERVERDIR, PYTHONPATH, LD_PRELOAD and friends from a submitter change nothing the driver runs."""
    evil = tmp_path / "evil"
    evil.mkdir()
    canary = tmp_path / "canary"
    (evil / "docker-starter.py").write_text("open(%r, 'w').write('driver')\n" % str(canary))
    (evil / "sitecustomize.py").write_text("open(%r, 'w').write('site')\n" % str(canary))
    (evil / "usercustomize.py").write_text("open(%r, 'w').write('user')\n" % str(canary))
    hostile = {
        "LSF_SERVERDIR": str(evil),
        "PYTHONPATH": str(evil),
        "PYTHONSTARTUP": str(evil / "sitecustomize.py"),
        "PYTHONUSERBASE": str(evil),
        "PYTHONINSPECT": "1",
        "LD_LIBRARY_PATH": str(evil),
        "LD_AUDIT": str(evil / "audit.so"),
        "BASH_ENV": str(evil / "env.sh"),
        "ENV": str(evil / "env.sh"),
        "IFS": "/",
        "GCONV_PATH": str(evil),
        "BASH_FUNC_module%%": "() { echo hi; }",
        "BASH_FUNC_ml()": "() { echo hi; }",
        "HOME": str(tmp_path),
    }
    _path, run = wrapper()
    seen = run(hostile)
    assert not canary.exists(), canary.read_text()
    assert os.path.dirname(seen["argv"][0]) == str(tmp_path / "serverdir")
    for name in ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT", "LD_LIBRARY_PATH", "LD_AUDIT",
                 "BASH_ENV", "ENV", "IFS", "GCONV_PATH", "BASH_FUNC_module%%", "BASH_FUNC_ml()"):
        assert name not in seen["env"], name
    assert str(evil) not in seen["path"]
    assert seen["env"]["HOME"] == str(tmp_path)          # ordinary job variables pass


@pytest.mark.parametrize("job_env, expected", [
    # LSF allocated GPUs 2 and 3: the container gets those two, numbered 0 and 1 inside.
    ({"CUDA_VISIBLE_DEVICES": "2,3"},
     {"NVIDIA_VISIBLE_DEVICES": "2,3", "CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}),
    # With GPU enforcement LSF renumbers CUDA_VISIBLE_DEVICES and keeps the host's numbers in _ORIG.
    ({"CUDA_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES_ORIG": "3"},
     {"NVIDIA_VISIBLE_DEVICES": "3", "CUDA_VISIBLE_DEVICES": "0"}),
    ({"CUDA_VISIBLE_DEVICES": "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"},
     {"NVIDIA_VISIBLE_DEVICES": "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a", "CUDA_VISIBLE_DEVICES": "0"}),
    ({"CUDA_VISIBLE_DEVICES": " 1 , 0 "}, {"NVIDIA_VISIBLE_DEVICES": "1,0", "CUDA_VISIBLE_DEVICES": "0,1"}),
    # No GPU allocated: no GPU, whatever the job or its image asks for.
    ({}, {"NVIDIA_VISIBLE_DEVICES": "void"}),
    ({"CUDA_VISIBLE_DEVICES": ""}, {"NVIDIA_VISIBLE_DEVICES": "void"}),
    ({"NVIDIA_VISIBLE_DEVICES": "all"}, {"NVIDIA_VISIBLE_DEVICES": "void"}),
    # A job cannot widen its allocation by naming more GPUs itself.
    ({"CUDA_VISIBLE_DEVICES": "1", "NVIDIA_VISIBLE_DEVICES": "all"}, {"NVIDIA_VISIBLE_DEVICES": "1"}),
    # A job may narrow the site's capabilities, never widen them.
    ({"CUDA_VISIBLE_DEVICES": "0", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility,video"},
     {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}),
    ({"CUDA_VISIBLE_DEVICES": "0", "NVIDIA_DRIVER_CAPABILITIES": "compute"}, {"NVIDIA_DRIVER_CAPABILITIES": "compute"}),
], ids=["allocated", "renumbered-by-lsf", "uuid", "blanks", "none", "empty", "job-asks-all", "job-widens",
        "job-widens-capabilities", "job-narrows-capabilities"])
def test_allocated_gpus_become_the_containers_gpus(wrapper, job_env, expected):
    """A GPU job (LSF's effective resource requirement reserves GPUs) with LSF's GPU enforcement on."""
    _path, run = wrapper(__lsf_docker_gpu_enforced=True)
    seen = run(dict(job_env, LSB_EFFECTIVE_RSRCREQ="select[(ngpus>0)] rusage[ngpus_physical=1.00]"))["env"]
    for name, value in expected.items():
        assert seen.get(name) == value, (name, seen.get(name))


def test_isolation_off_leaves_the_gpu_variables_alone(wrapper):
    _path, run = wrapper(lsf_docker_gpu_isolation=False)
    seen = run({"CUDA_VISIBLE_DEVICES": "2"})["env"]
    assert seen["CUDA_VISIBLE_DEVICES"] == "2" and "NVIDIA_VISIBLE_DEVICES" not in seen


@pytest.mark.parametrize("umask, expected", [("0027", 0o027), ("077", 0o077), ("0002", 0o002)])
def test_umask(wrapper, umask, expected):
    _path, run = wrapper(lsf_docker_starter_umask=umask)
    assert run({})["umask"] == expected


def test_the_driver_path_is_fixed_when_written(wrapper, tmp_path):
    path, _run = wrapper()
    text = path.read_text()
    code = text.split('"""', 2)[2]          # the script after its docstring
    # LSF_SERVERDIR is only ever set (to the site's directory), never read from the job's environment.
    assert not re.search(r"environ(?:\.get\(|\[)[\"']LSF_SERVERDIR", code)
    assert '"LSF_SERVERDIR": "%s"' % (tmp_path / "serverdir") in code
    assert 'DRIVER = "%s/docker-starter.py"' % (tmp_path / "serverdir") in text
    assert text.startswith("#!%s -I\n" % sys.executable)


CATALOGUE = {"powerai": {"variants": [
    {"name": "cuda12-sm80", "image": "head:5000/hpc/powerai:cuda12-sm80", "architecture": "x86_64",
     "cuda": "12.2", "compute_capabilities": ["8.0"]},
    {"name": "cuda11-sm70", "image": "head:5000/hpc/powerai:cuda11-sm70", "architecture": "x86_64",
     "cuda": "11.0", "compute_capabilities": ["7.0"]}]}}
VOLTA = {"architecture": "x86_64", "cpu_level": "x86-64-v3", "driver": "470.182.03", "cuda": "11.4",
         "compute_capabilities": ["7.0"]}


@pytest.fixture
def image_files(tmp_path):
    catalogue, platform = tmp_path / "images.json", tmp_path / "platform.json"
    catalogue.write_text(json.dumps(CATALOGUE))
    platform.write_text(json.dumps(VOLTA))
    return {"lsf_docker_catalogue_file": str(catalogue), "lsf_docker_platform_file": str(platform)}


def test_a_profiles_starter_hands_the_driver_the_nodes_variant_at_job_start(wrapper, image_files):
    _path, run = wrapper(__lsf_docker_image_app={"name": "powerai", "image": "powerai"},
                         lsf_docker_image_selection="job_start", **image_files)
    # what the submitter put in LSB_CONTAINER_IMAGE does not choose the image of a logical-image profile
    seen = run({"LSB_JOBID": "7", "LSB_CONTAINER_IMAGE": "evil/image:1"})
    assert seen["env"]["LSB_CONTAINER_IMAGE"] == "head:5000/hpc/powerai:cuda11-sm70"


def test_with_node_images_the_starter_only_checks_that_a_variant_fits(wrapper, image_files):
    """The default: the profile's image() names the node image; the starter hands the driver nothing of its own."""
    path, run = wrapper(__lsf_docker_image_app={"name": "powerai", "image": "powerai"}, **image_files)
    assert 'IMAGE_SELECTION = "node"' in path.read_text()
    seen = run({"LSB_JOBID": "7"})  # what the driver saw: it ran
    assert seen["env"]["LSB_JOBID"] == "7" and "LSB_CONTAINER_IMAGE" not in seen["env"]


@pytest.mark.parametrize("selection", ["node", "job_start"])
def test_no_fitting_variant_fails_the_job_before_the_driver(wrapper, image_files, tmp_path, selection):
    platform = json.loads(Path(image_files["lsf_docker_platform_file"]).read_text())
    Path(image_files["lsf_docker_platform_file"]).write_text(json.dumps(dict(platform, compute_capabilities=["6.0"])))
    path, _run = wrapper(__lsf_docker_image_app={"name": "powerai", "image": "powerai"},
                         lsf_docker_image_selection=selection, **image_files)
    proc = subprocess.run([str(path)], env={"PATH": "/usr/bin:/bin", "RECORD_TO": str(tmp_path / "record.json")},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 3
    assert proc.stderr.startswith("image-variant: powerai: no variant fits ")
    assert "cuda12-sm80: needs CUDA 12.2 (driver supports 11.4)" in proc.stderr and "cuda11-sm70: " in proc.stderr
    assert not (tmp_path / "record.json").exists()  # LSF's driver never ran


def test_the_plain_starter_leaves_the_image_alone(wrapper):
    path, run = wrapper()
    assert "LOGICAL_IMAGE = \"\"" in path.read_text()
    assert run({"LSB_CONTAINER_IMAGE": "users/choice:1"})["env"]["LSB_CONTAINER_IMAGE"] == "users/choice:1"
