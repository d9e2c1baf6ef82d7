# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF Docker starter wrapper against a hostile job environment, one variable at a time.

The wrapper is rendered from the role's template and run for real, as LSF runs it (as the Docker driver's
user, in the docker group, with the submitter's environment); a recording docker-starter.py at the fixed
LSF_SERVERDIR stands in for LSF's driver. Helpers come from the unit test of the same wrapper.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_UNIT = Path(__file__).resolve().parents[1] / "unit" / "roles" / "lsf_docker" / "test_starter_wrapper.py"
_spec = importlib.util.spec_from_file_location("_starter_wrapper_unit", _UNIT)
unit = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = unit
_spec.loader.exec_module(unit)
wrapper = unit.wrapper

# Each changes what a program started with that environment loads or runs.
DANGEROUS = ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_DEBUG_OUTPUT", "LD_PROFILE", "PYTHONPATH",
             "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
             "BASH_ENV", "ENV", "IFS", "CDPATH", "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES",
             "RESOLV_HOST_CONF", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "GLIBC_TUNABLES",
             "MALLOC_CHECK_", "DYLD_INSERT_LIBRARIES", "BASH_FUNC_module%%", "BASH_FUNC_ml()"]


@pytest.mark.parametrize("name", DANGEROUS)
def test_dangerous_variable_never_reaches_the_driver(wrapper, tmp_path, name):
    _path, run = wrapper()
    value = str(tmp_path / "evil") if not name.startswith("BASH_FUNC_") else "() { echo evil; }"
    seen = run({name: value, "KEEP_ME": "1"})
    assert name not in seen["env"]
    assert seen["env"]["KEEP_ME"] == "1"


@pytest.mark.parametrize("serverdir", ["/tmp", "relative/dir", "", "$(touch /tmp/x)", "/nonexistent"])
def test_lsf_serverdir_from_the_job_is_never_used(wrapper, tmp_path, serverdir):
    _path, run = wrapper()
    seen = run({"LSF_SERVERDIR": serverdir})
    assert seen["argv"][0] == str(tmp_path / "serverdir" / "docker-starter.py")


@pytest.mark.parametrize("allocation, expected", [
    (",,", "void"),
    (" , ", "void"),
    (" 3 , 1 ", "3,1"),
    ("GPU-27b94a00-ed54-5c24-b1fd-1054085de32a,MIG-4b0f9a2c-3a7e-5d1b-9c2e-0f1d2c3b4a59",
     "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a,MIG-4b0f9a2c-3a7e-5d1b-9c2e-0f1d2c3b4a59"),
])
def test_odd_allocations_stay_one_value(wrapper, allocation, expected):
    _path, run = wrapper()
    seen = run({"CUDA_VISIBLE_DEVICES": allocation, "LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1})["env"]
    assert seen["NVIDIA_VISIBLE_DEVICES"] == expected


def test_an_exported_function_with_newlines_and_a_restrictive_umask(wrapper):
    _path, run = wrapper()
    seen = run({"BASH_FUNC_ml%%": "() {  eval $(lmod ml)\n}", "HOME": "/home/u"})
    assert not [name for name in seen["env"] if name.startswith("BASH_FUNC_")]
    assert seen["umask"] == 0o022


# --- the driver's programs, GPUs and Docker client settings: only the site's ------------------------------

# What LSF puts in LSB_EFFECTIVE_RSRCREQ for a job submitted with -gpu "num=N" (it sets the variable for every
# job, over whatever the submitter had); a job without a GPU request has no ngpus_physical in it.
GPU_JOB = "select[(ngpus>0) && (type == local)] order[r15s:pg] rusage[ngpus_physical=%d.00]"
CPU_JOB = "select[type == local] order[r15s:pg]"

# LSF's driver runs "docker" by name: this one stands in for it and records which docker answered.
DOCKER_RUNNING_DRIVER = """\
import json, os, subprocess, sys
try:
    ran = subprocess.run(["docker", "version"], capture_output=True, text=True, check=False).stdout.strip()
except OSError as err:
    ran = "none: %s" % err
with open(os.environ["RECORD_TO"], "w") as out:
    json.dump({"env": dict(os.environ), "argv": sys.argv, "docker": ran}, out)
"""


def _program(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(0o755)
    return path


@pytest.fixture
def docker_dirs(tmp_path):
    """(the site's Docker client, a job's own directory with a docker and a docker-starter.py of its own)."""
    site = tmp_path / "site-bin"
    site.mkdir()
    client = _program(site / "docker", "echo site-docker\n")
    evil = tmp_path / "job-bin"
    evil.mkdir()
    canary = tmp_path / "canary"
    for name in ("docker", "docker-starter.py", "python", "python3", "sh"):
        _program(evil / name, "echo job-%s > %s\necho job-%s\n" % (name, canary, name))
    return client, evil, canary


def test_the_jobs_path_never_chooses_the_drivers_docker(wrapper, tmp_path, docker_dirs):
    """Item 1: a job's PATH whose first directory holds its own docker never reaches LSF's driver."""
    client, evil, canary = docker_dirs
    (tmp_path / "serverdir" / "docker-starter.py").write_text(DOCKER_RUNNING_DRIVER)
    _path, run = wrapper(lsf_docker_client=str(client), lsf_docker_starter_search_path="/usr/sbin:/usr/bin:/sbin:/bin")
    seen = run({"PATH": "%s:%s" % (evil, os.environ.get("PATH", "/usr/bin:/bin")), "LSB_JOBID": "7"})
    assert seen["docker"] == "site-docker"
    assert not canary.exists(), canary.read_text()
    assert seen["env"]["PATH"] == "%s:/usr/sbin:/usr/bin:/sbin:/bin:%s" % (client.parent, tmp_path / "serverdir")
    assert str(evil) not in seen["env"]["PATH"]


@pytest.mark.parametrize("job_path", ["", ".", "relative/bin", "::", "/nonexistent", "{evil}", "{evil}:/usr/bin"])
def test_any_job_path_gives_the_same_driver_path(wrapper, tmp_path, docker_dirs, job_path):
    client, evil, canary = docker_dirs
    (tmp_path / "serverdir" / "docker-starter.py").write_text(DOCKER_RUNNING_DRIVER)
    _path, run = wrapper(lsf_docker_client=str(client), lsf_docker_starter_search_path="/usr/bin:/bin")
    seen = run({"PATH": job_path.format(evil=evil)})
    assert seen["env"]["PATH"] == "%s:/usr/bin:/bin:%s" % (client.parent, tmp_path / "serverdir")
    assert seen["docker"] == "site-docker" and not canary.exists()


DOCKER_CLIENT_SETTINGS = ["DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH",
                          "DOCKER_TLS", "DOCKER_API_VERSION", "DOCKER_DEFAULT_PLATFORM", "DOCKER_CUSTOM_HEADERS",
                          "DOCKER_CLI_PLUGIN_EXTRA_DIRS", "DOCKER_CLI_HOOKS", "DOCKER_CONTENT_TRUST_SERVER"]


@pytest.mark.parametrize("name", DOCKER_CLIENT_SETTINGS)
def test_docker_client_settings_from_the_job_never_reach_the_driver(wrapper, tmp_path, name):
    """Item 3: the job cannot point the driver's docker at another daemon, context, config or certificates."""
    _path, run = wrapper()
    seen = run({name: str(tmp_path / "evil") if name != "DOCKER_HOST" else "tcp://evil.example:2375",
                "KEEP_ME": "1"})["env"]
    if name == "DOCKER_CONFIG":
        assert seen[name] != str(tmp_path / "evil")   # the driver user's own Docker configuration
    else:
        assert name not in seen
    assert seen["KEEP_ME"] == "1"


def test_the_docker_configuration_is_the_driver_users_own(wrapper):
    """With HOME the submitter's, the driver's docker would read the submitter's config.json (plugins, contexts)."""
    import pwd
    _path, run = wrapper()
    seen = run({"HOME": "/home/submitter"})["env"]
    assert seen["DOCKER_CONFIG"] == os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".docker")
    assert seen["HOME"] == "/home/submitter"       # the job's own HOME still reaches its container


@pytest.mark.parametrize("job_env", [
    {"CUDA_VISIBLE_DEVICES": "0,1"},
    {"CUDA_VISIBLE_DEVICES": "0,1", "LSB_EFFECTIVE_RSRCREQ": CPU_JOB},
    {"CUDA_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES_ORIG": "0,1,2,3", "LSB_EFFECTIVE_RSRCREQ": CPU_JOB},
    {"NVIDIA_VISIBLE_DEVICES": "all", "CUDA_VISIBLE_DEVICES": "all"},
    {"LSB_EFFECTIVE_RSRCREQ": "select[type == local] rusage[mem=100]", "CUDA_VISIBLE_DEVICES": "3",
     "NVIDIA_VISIBLE_DEVICES": "3"},
    {"LSB_EFFECTIVE_RSRCREQ": CPU_JOB + " ngpus_physical=1", "CUDA_VISIBLE_DEVICES": "3"},
], ids=["no-request", "cpu-job", "cpu-job-orig", "asks-all", "rusage-without-gpus", "gpu-word-outside-rusage"])
def test_a_job_without_a_gpu_request_gets_no_gpu_from_its_own_variables(wrapper, job_env):
    """Item 2: GPU variables the submitter set on a job that asked for no GPU give the container none."""
    _path, run = wrapper()
    seen = run(job_env)["env"]
    assert seen["NVIDIA_VISIBLE_DEVICES"] == "void"
    assert "CUDA_VISIBLE_DEVICES" not in seen and "CUDA_VISIBLE_DEVICES_ORIG" not in seen


def test_the_submitters_orig_never_overrides_lsfs_allocation(wrapper):
    """Item 2: without LSF's GPU enforcement LSF sets no CUDA_VISIBLE_DEVICES_ORIG; the submitter's is ignored."""
    _path, run = wrapper(__lsf_docker_gpu_enforced=False)
    seen = run({"LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": "2",
                "CUDA_VISIBLE_DEVICES_ORIG": "0,1,2,3"})["env"]
    assert seen["NVIDIA_VISIBLE_DEVICES"] == "2" and seen["CUDA_VISIBLE_DEVICES"] == "0"
    assert "CUDA_VISIBLE_DEVICES_ORIG" not in seen


def test_with_lsfs_gpu_enforcement_the_host_numbers_come_from_orig(wrapper):
    _path, run = wrapper(__lsf_docker_gpu_enforced=True)
    seen = run({"LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 2, "CUDA_VISIBLE_DEVICES": "0,1",
                "CUDA_VISIBLE_DEVICES_ORIG": "1,3"})["env"]
    assert seen["NVIDIA_VISIBLE_DEVICES"] == "1,3" and seen["CUDA_VISIBLE_DEVICES"] == "0,1"


@pytest.mark.parametrize("orig", ["0,1,2,3", "3,3", ""])
def test_with_enforcement_an_orig_that_is_not_lsfs_renumbering_is_refused(wrapper, orig):
    """LSF renumbers each allocated GPU: an _ORIG of another length than CUDA_VISIBLE_DEVICES is not LSF's."""
    path, _run = wrapper(__lsf_docker_gpu_enforced=True)
    env = {"PATH": "/usr/bin:/bin", "LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": "0",
           "CUDA_VISIBLE_DEVICES_ORIG": orig}
    proc = subprocess.run([str(path)], env=env, capture_output=True, text=True, check=False)
    if orig == "":
        assert proc.returncode == 0, proc.stderr   # no _ORIG: LSF's CUDA_VISIBLE_DEVICES is the allocation
        return
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("lsf-docker-starter: ") and "CUDA_VISIBLE_DEVICES_ORIG" in proc.stderr


@pytest.mark.parametrize("asked, expected", [
    ("all", "compute,utility"),                     # never wider than the site's
    ("compute,utility,video,graphics,display", "compute,utility"),
    ("compute", "compute"),                         # narrower is the job's to ask
    ("utility , compute", "compute,utility"),
    ("video", "compute,utility"),                   # nothing of the site's: the site's
    ("", "compute,utility"),
])
def test_the_jobs_driver_capabilities_never_widen_the_sites(wrapper, asked, expected):
    """Item 4: NVIDIA_DRIVER_CAPABILITIES from the submitter narrows at most within the site's set."""
    _path, run = wrapper()
    seen = run({"LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": "0",
                "NVIDIA_DRIVER_CAPABILITIES": asked})["env"]
    assert seen["NVIDIA_DRIVER_CAPABILITIES"] == expected


def test_a_site_that_grants_all_capabilities_lets_the_job_narrow(wrapper):
    _path, run = wrapper(lsf_docker_gpu_driver_capabilities="all")
    seen = run({"LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": "0",
                "NVIDIA_DRIVER_CAPABILITIES": "compute,video"})["env"]
    assert seen["NVIDIA_DRIVER_CAPABILITIES"] == "compute,video"


@pytest.mark.parametrize("name", ["NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES", "NVIDIA_GDS",
                                  "NVIDIA_IMEX_CHANNELS", "NVIDIA_VISIBLE_DEVICES"])
def test_other_nvidia_runtime_settings_from_the_job_are_dropped(wrapper, name):
    _path, run = wrapper()
    seen = run({"LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": "0", name: "all"})["env"]
    assert seen.get(name) != "all"
    assert seen["NVIDIA_VISIBLE_DEVICES"] == "0"


@pytest.mark.parametrize("allocation", [
    ",".join(str(i % 10) for i in range(30000)),     # 60 KB: once "Argument list too long"
    "0," * 30000 + "1",
    "GPU-" + "a" * 60000,
    "all", "0,0", "GPU-x;rm -rf /", "-1", "0\n1", "1e3",
])
def test_an_allocation_lsf_never_makes_is_refused_cleanly(wrapper, tmp_path, allocation):
    """Item 4: a 60 KB or malformed CUDA_VISIBLE_DEVICES ends in one clear line and a failed job, no traceback."""
    path, _run = wrapper()
    env = {"PATH": "/usr/bin:/bin", "RECORD_TO": str(tmp_path / "record.json"),
           "LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": allocation}
    proc = subprocess.run([str(path)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and "Argument list too long" not in proc.stderr
    assert proc.stderr.startswith("lsf-docker-starter: CUDA_VISIBLE_DEVICES: ")
    assert len(proc.stderr) < 400 and proc.stderr.count("\n") == 1
    assert not (tmp_path / "record.json").exists()   # LSF's driver never ran


def test_a_deeply_nested_catalogue_fails_the_job_with_a_clear_error(wrapper, tmp_path):
    """Item 4: a catalogue nested 100,000 deep is bad input (exit 2, one line), not a RecursionError."""
    catalogue, platform = tmp_path / "images.json", tmp_path / "platform.json"
    catalogue.write_text('{"powerai": ' + "[" * 100000 + "]" * 100000 + "}")
    platform.write_text(json.dumps({"architecture": "x86_64"}))
    path, _run = wrapper(__lsf_docker_image_app={"name": "powerai", "image": "powerai"},
                         lsf_docker_catalogue_file=str(catalogue), lsf_docker_platform_file=str(platform))
    proc = subprocess.run([str(path)], env={"PATH": "/usr/bin:/bin", "RECORD_TO": str(tmp_path / "record.json")},
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "RecursionError" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("image-variant: %s: " % catalogue) and "nested" in proc.stderr
    assert not (tmp_path / "record.json").exists()


@pytest.mark.parametrize("role_says, conf_line, expected", [
    # The site's lsf.conf enforces GPUs although the role's settings do not say so: LSF renumbered.
    (False, 'LSB_RESOURCE_ENFORCE="cpu memory gpu"', "3"),
    # The role's settings say gpu, the site's lsf.conf (last line wins) does not: _ORIG is the submitter's.
    (True, 'LSB_RESOURCE_ENFORCE="cpu memory gpu"\nLSB_RESOURCE_ENFORCE="cpu memory"  # no gpu', "0"),
    (True, "# LSB_RESOURCE_ENFORCE=gpu\nLSF_PROCESS_TRACKING=Y", "0"),
])
def test_lsf_conf_at_job_start_decides_whether_orig_is_lsfs(wrapper, tmp_path, role_says, conf_line, expected):
    envdir = tmp_path / "envdir"
    envdir.mkdir()
    (envdir / "lsf.conf").write_text("LSF_CONFDIR=/usr/share/lsf/conf\n%s\n" % conf_line)
    _path, run = wrapper(__lsf_docker_gpu_enforced=role_says,
                         __lsf_docker_layout={"serverdir": str(tmp_path / "serverdir"), "envdir": str(envdir)})
    seen = run({"LSB_EFFECTIVE_RSRCREQ": GPU_JOB % 1, "CUDA_VISIBLE_DEVICES": "0",
                "CUDA_VISIBLE_DEVICES_ORIG": "3"})["env"]
    assert seen["NVIDIA_VISIBLE_DEVICES"] == expected and seen["CUDA_VISIBLE_DEVICES"] == "0"


def test_lsfs_own_directories_are_the_sites_for_the_driver(wrapper, tmp_path, docker_dirs):
    """The driver finds LSF's commands and lsf.conf where the site has them, never where the job points."""
    client, evil, canary = docker_dirs
    (tmp_path / "serverdir" / "docker-starter.py").write_text(DOCKER_RUNNING_DRIVER)
    layout = {"serverdir": str(tmp_path / "serverdir"), "envdir": "/usr/share/lsf/conf",
              "bindir": "/usr/share/lsf/10.1/linux/bin"}
    _path, run = wrapper(lsf_docker_client=str(client), lsf_docker_starter_search_path="/usr/bin:/bin",
                         __lsf_docker_layout=layout)
    seen = run({"PATH": "%s:/usr/bin" % evil, "LSF_ENVDIR": str(evil), "LSF_BINDIR": str(evil),
                "LSF_SERVERDIR": str(evil), "LSF_LIBDIR": str(evil)})["env"]
    assert seen["PATH"] == "%s:/usr/bin:/bin:/usr/share/lsf/10.1/linux/bin:%s" % (client.parent, tmp_path / "serverdir")
    assert seen["LSF_ENVDIR"] == "/usr/share/lsf/conf"
    assert seen["LSF_BINDIR"] == "/usr/share/lsf/10.1/linux/bin"
    assert seen["LSF_SERVERDIR"] == str(tmp_path / "serverdir")
    assert "LSF_LIBDIR" not in seen or seen["LSF_LIBDIR"] != str(evil)
    assert not canary.exists()
