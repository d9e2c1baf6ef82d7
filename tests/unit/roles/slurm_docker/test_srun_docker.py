# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""srun-docker, rendered from the role's template: its pure helpers, and whole runs against recording stand-ins
for docker, srun and scontrol at the process boundary (the real thing runs in molecule/slurm).

The runs check what the job containers are given (the user's ids, read-only passwd/group, $HOME, the GPUs Slurm
allocated and no other, no SLURM_* variables), that the command's exit code comes back, that containers are removed
on success, failure and refusal, and the launcher's protocol with the per-node step (sshd up -> ready file -> the
command in the first node's container -> stop file -> the step ends normally)."""

import importlib.util
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

ROLE = Path(__file__).resolve().parents[4] / "roles" / "slurm_docker"

FAKE_DOCKER = r'''#!PYTHON
import json, os, subprocess, sys, time
LISTENER = """
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
for _ in range(300):
    if os.path.exists(sys.argv[2]) or os.path.exists(sys.argv[2] + ".failed"):
        break
    time.sleep(0.1)
"""
argv = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"cmd": "docker", "argv": argv, "node": os.environ.get("SLURMD_NODENAME"),
                          "xdg": os.environ.get("XDG_RUNTIME_DIR")}) + "\n")
if argv[:1] == ["--config"]:
    argv = argv[2:]
if argv[:2] == ["image", "inspect"]:
    sys.exit(int(os.environ.get("FAKE_IMAGE_MISSING", "0")))
if argv[:1] == ["run"]:
    if "--detach" in argv:
        # "sshd": listens on the job's port until this node is ready (nodes are one host here)
        config = argv[-1]
        port = int([line.split()[1] for line in open(config) if line.startswith("Port ")][0])
        ready = os.path.join(os.path.dirname(config), "ready", os.environ["SLURMD_NODENAME"])
        subprocess.Popen([sys.executable, "-c", LISTENER, str(port), ready], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        print("c0ffee")
        sys.exit(0)
    if "--entrypoint=sh" in argv and any("ssh-keygen" in a for a in argv):
        # as ssh-keygen does: it looks the user up first
        if "--volume=/etc/passwd:/etc/passwd:ro" not in argv:
            uid = [a for a in argv if a.startswith("--user=")][0].split("=")[1].split(":")[0]
            sys.stderr.write("No user exists for uid %s\n" % uid)
            sys.exit(255)
        state = [a.split("=", 1)[1].split(":")[0] for a in argv if a.startswith("--volume=") and "/etc/" not in a][0]
        for name in ("id", "host_key"):
            open(os.path.join(state, name), "w").write("private\n")
            open(os.path.join(state, name + ".pub"), "w").write("ssh-ed25519 AAAAfake srun-docker\n")
        sys.exit(0)
    sys.exit(int(os.environ.get("FAKE_RUN_RC", "0")))
if argv[:2] == ["container", "inspect"]:
    print(json.dumps([{"State": {"Running": not os.path.exists(os.environ["FAKE_LOG"] + ".gone." + argv[2])}}]))
    sys.exit(0)
if argv[:1] == ["wait"]:
    gone = os.environ["FAKE_LOG"] + ".gone." + argv[1]
    for _ in range(600):
        if os.path.exists(gone):
            break
        time.sleep(0.1)
if argv[:2] == ["rm", "--force"]:
    open(os.environ["FAKE_LOG"] + ".gone." + argv[2], "w").close()
if argv[:1] == ["exec"]:
    print("command ran in " + argv[-3 if "--" in argv else -1])
    sys.exit(int(os.environ.get("FAKE_EXEC_RC", "0")))
sys.exit(0)
'''

FAKE_SRUN = r'''#!PYTHON
import json, os, signal, socket, subprocess, sys, time
argv = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"cmd": "srun", "argv": argv}) + "\n")
nodes = [a.split("=", 1)[1] for a in argv if a.startswith("--nodelist=")][0].split(",")
command = argv[[i for i, a in enumerate(argv) if not a.startswith("-")][0]:]
ready = os.path.join(os.path.dirname(command[command.index("--_node") + 1]), "ready")
children = []
for node in nodes:
    env = dict(os.environ, SLURMD_NODENAME=node, SLURM_STEP_ID="1", SLURM_STEP_GPUS="")
    children.append(subprocess.Popen(command, env=env))
    # one node after the other: on this one host they share the port a real job has on every node
    for _ in range(200):
        if os.path.exists(os.path.join(ready, node)) or os.path.exists(os.path.join(ready, node + ".failed")):
            break
        time.sleep(0.1)
    # ...and its "sshd" off the port before the next node checks that the port is free
    config = os.path.join(os.path.dirname(ready), "sshd_config")
    ports = [int(line.split()[1]) for line in open(config) if line.startswith("Port ")] if os.path.exists(config) else []
    for _ in range(100 if ports else 0):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", ports[0])) != 0:
                break
        time.sleep(0.05)
signal.signal(signal.SIGTERM, lambda *a: [c.send_signal(signal.SIGTERM) for c in children])
sys.exit(max(c.wait() for c in children))
'''

FAKE_SCONTROL = r'''#!/bin/sh
echo n1
echo n2
'''


def render(config_dir, engine="docker"):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["to_json"] = json.dumps
    variables = {"slurm_docker_python": sys.executable, "ansible_managed": "Ansible managed",
                 "slurm_docker_config_dir": str(config_dir), "__slurm_docker_engine": engine,
                 "__slurm_docker_prog": "srun-" + engine}
    return env.from_string((ROLE / "templates" / "srun-docker.j2").read_text()).render(**variables)


@pytest.fixture(scope="module")
def srun_docker(tmp_path_factory):
    """The rendered script, imported as a module (for its helpers)."""
    base = tmp_path_factory.mktemp("srun-docker")
    path = base / "srun_docker.py"
    path.write_text(render(base / "etc"))
    spec = importlib.util.spec_from_file_location("srun_docker_rendered", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- helpers ---------------------------------------------------------------------------------------

def test_tasks_per_node(srun_docker):
    assert srun_docker.expand_tasks_per_node("2(x3),1", 4) == [2, 2, 2, 1]
    assert srun_docker.expand_tasks_per_node("", 2) == [1, 1]


def test_ssh_port_is_per_user(srun_docker):
    assert srun_docker.ssh_port(2001, 20000, 10000) == 22001
    assert srun_docker.ssh_port(12001, 20000, 10000) == 22001


def test_allocated_gpu_ids(srun_docker):
    assert srun_docker.allocated_gpu_ids({"SLURM_STEP_GPUS": "1,3", "SLURM_JOB_GPUS": "0,1,2,3"}, True) == ["1", "3"]
    assert srun_docker.allocated_gpu_ids({"SLURM_JOB_GPUS": "0,1"}, False) == ["0", "1"]
    assert srun_docker.allocated_gpu_ids({"SLURM_JOB_GPUS": "0,1"}, True) is None
    assert srun_docker.allocated_gpu_ids({}, False) is None


GPU_MAP = [{"index": 0, "uuid": "GPU-a"}, {"index": 1, "uuid": "GPU-b"}, {"index": 2, "uuid": "GPU-c"}]


def test_gpu_environment_never_all(srun_docker):
    opts, env = srun_docker.gpu_environment(["2", "0"], GPU_MAP, "nvidia", "compute,utility")
    assert opts == ["--runtime=nvidia"]
    assert env == {"NVIDIA_VISIBLE_DEVICES": "GPU-c,GPU-a", "NVIDIA_DRIVER_CAPABILITIES": "compute,utility",
                   "CUDA_VISIBLE_DEVICES": "0,1"}
    void = (["--runtime=nvidia"], {"NVIDIA_VISIBLE_DEVICES": "void"})
    assert srun_docker.gpu_environment(None, GPU_MAP, "nvidia", "x") == void
    assert srun_docker.gpu_environment(None, [], "", "x") == ([], {})
    with pytest.raises(srun_docker.UsageError, match="does not list"):
        srun_docker.gpu_environment(["7"], GPU_MAP, "nvidia", "x")
    with pytest.raises(srun_docker.UsageError, match="no GPU map"):
        srun_docker.gpu_environment(["0"], [], "", "x")


def test_gpu_environment_cdi_names_only_the_allocated_gpus(srun_docker):
    opts, env = srun_docker.gpu_environment(["2", "0"], GPU_MAP, "cdi", "compute,utility")
    assert opts == ["--device=nvidia.com/gpu=GPU-c", "--device=nvidia.com/gpu=GPU-a"]
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1"}
    # No GPU allocated: no device at all (CDI hands out nothing by default, unlike NVIDIA_VISIBLE_DEVICES=all).
    assert srun_docker.gpu_environment(None, GPU_MAP, "cdi", "x") == ([], {})
    with pytest.raises(srun_docker.UsageError, match="does not list"):
        srun_docker.gpu_environment(["3"], GPU_MAP, "cdi", "x")


def test_identity_per_engine(srun_docker):
    assert srun_docker.identity_options("docker", 2001, 2001, [2001, 998]) == ["--user=2001:2001", "--group-add=998"]
    assert srun_docker.identity_options("podman", 2001, 2001, [2001, 998]) == ["--userns=keep-id", "--user=2001:2001"]


def test_runtime_dir_of_another_node_is_dropped(srun_docker, tmp_path):
    assert srun_docker.usable_runtime_dir({}, os.getuid())
    assert srun_docker.usable_runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path)}, os.getuid())
    assert not srun_docker.usable_runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path / "absent")}, os.getuid())
    assert not srun_docker.usable_runtime_dir({"XDG_RUNTIME_DIR": str(tmp_path)}, os.getuid() + 1)


def test_check_options(srun_docker):
    assert srun_docker.check_options(["--shm-size=1g", "-e", "X=1"], ["--privileged"]) == ["--shm-size=1g", "-e", "X=1"]
    with pytest.raises(srun_docker.UsageError, match="--privileged, --user"):
        srun_docker.check_options(["--privileged", "--user=0", "x"], ["--privileged", "--user"])


def test_qualify_image(srun_docker):
    assert srun_docker.qualify_image("hpc/mpi:1", "reg:5000", []) == "reg:5000/hpc/mpi:1"
    assert srun_docker.qualify_image("other:5000/x:1", "reg:5000", []) == "other:5000/x:1"
    assert srun_docker.qualify_image("localhost/x", "", []) == "localhost/x"
    with pytest.raises(srun_docker.UsageError, match="not from an allowed registry"):
        srun_docker.qualify_image("other:5000/x:1", "reg:5000", ["reg:5000"])
    assert srun_docker.qualify_image("x", "", ["docker.io"]) == "x"


def test_mount_options(srun_docker):
    volumes = srun_docker.mount_options("/home/a", "/scratch/run", ["/data"], ["/ref:/ref:ro", "/src:/dst"])
    assert volumes == ["--volume=/home/a:/home/a", "--volume=/scratch/run:/scratch/run", "--volume=/data:/data",
                       "--volume=/ref:/ref:ro", "--volume=/src:/dst"]
    assert srun_docker.mount_options("/home/a", "/home/a/x", [], []) == ["--volume=/home/a:/home/a"]
    for bad in (["rel"], ):
        with pytest.raises(srun_docker.UsageError):
            srun_docker.mount_options("/h", "/h", bad, [])
    with pytest.raises(srun_docker.UsageError):
        srun_docker.mount_options("/h", "/h", [], ["/a:/b:rx"])


def test_container_environment_drops_slurm_and_loader_variables(srun_docker):
    env = srun_docker.container_environment({"HOME": "/h", "USER": "a", "SLURM_JOB_ID": "1", "FOO": "x"},
                                            {"environment": {"OMPI_MCA_x": "1"}}, ["FOO", "BAR=2"], {"G": "1"})
    assert env == {"HOME": "/h", "USER": "a", "OMPI_MCA_x": "1", "FOO": "x", "BAR": "2", "G": "1"}
    for bad in ("SLURM_JOB_ID", "LD_PRELOAD=/x.so", "=x"):
        with pytest.raises(srun_docker.UsageError):
            srun_docker.container_environment({}, {}, [bad], {})


def test_ssh_configuration(srun_docker):
    sshd = srun_docker.sshd_config("/h/.srun-docker/7-1", 22001, "alice")
    assert "Port 22001" in sshd and "PasswordAuthentication no" in sshd and "AllowUsers alice" in sshd
    assert "AuthorizedKeysFile /h/.srun-docker/7-1/id.pub" in sshd and "UsePAM no" in sshd
    ssh = srun_docker.ssh_config("/h/.srun-docker/7-1", 22001, "alice")
    assert "StrictHostKeyChecking yes" in ssh and "HostKeyAlias srun-docker-job" in ssh
    env = srun_docker.mpi_environment("/s", ["n1", "n2"], [2, 1])
    assert env["SRUN_DOCKER_HOSTLIST"] == "n1:2,n2:1" and env["SRUN_DOCKER_NP"] == "3"
    assert env["OMPI_MCA_plm_rsh_agent"] == "ssh -F /s/ssh_config"


# --- whole runs ------------------------------------------------------------------------------------

@pytest.fixture(params=["docker"])
def bed(request, tmp_path):
    """A job environment: srun-<engine>, its settings, a GPU map, fake docker/srun/scontrol on PATH."""
    engine = request.param
    etc = tmp_path / "etc"
    etc.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.jsonl"
    script = bindir / ("srun-" + engine)
    script.write_text(render(etc, engine))
    for name, body in (("docker", FAKE_DOCKER), ("podman", FAKE_DOCKER), ("srun", FAKE_SRUN),
                       ("scontrol", FAKE_SCONTROL)):
        (bindir / name).write_text(body.replace("#!PYTHON", "#!" + sys.executable))
    for path in bindir.iterdir():
        path.chmod(0o755)
    (etc / "gpus.json").write_text(json.dumps(GPU_MAP))
    (etc / ("srun-%s.json" % engine)).write_text(json.dumps({
        "engine": engine, "docker": engine, "gpu_runtime": "cdi" if engine == "podman" else "nvidia",
        "gpu_map": str(etc / "gpus.json"),
        "denied_options": ["--privileged"], "state_dir": "~/.srun-docker", "ready_timeout": 20, "stop_timeout": 10,
        "registry": "reg:5000", "environment": {"OMPI_MCA_btl_tcp_if_exclude": "lo,docker0"},
        # the tests may run as root; jobs never do
        "refuse_root": False}))
    env = {"PATH": "%s:/usr/bin:/bin" % bindir, "HOME": str(home), "USER": "alice", "FAKE_LOG": str(log),
           "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n[1-2]", "SLURMD_NODENAME": "n1",
           "SLURM_TASKS_PER_NODE": "1(x2)"}

    def run(args, extra=None, cwd=None):
        proc = subprocess.run([str(script)] + args, env=dict(env, **(extra or {})), cwd=cwd or str(home),
                              capture_output=True, text=True, timeout=90, check=False)
        calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        log.write_text("")
        return proc, calls

    return run, home


def docker_calls(calls, verb):
    return [c["argv"] for c in calls if c["cmd"] == "docker" and verb in c["argv"][:3]]


@pytest.mark.parametrize("bed", ["podman"], indirect=True)
def test_podman_step_runs_as_the_user_with_the_steps_gpu_by_cdi(bed):
    run, home = bed
    proc, calls = run(["hpc/mpi:1", "--", "nvidia-smi", "-L"],
                      {"SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "1", "SLURM_JOB_GPUS": "0,1",
                       "XDG_RUNTIME_DIR": str(home / "no-such-dir"), "FAKE_IMAGE_MISSING": "1"})
    assert proc.returncode == 0, proc.stderr
    (argv,) = docker_calls(calls, "run")
    assert "--userns=keep-id" in argv and "--user=%d:%d" % (os.getuid(), os.getgid()) in argv
    assert not any(a.startswith("--group-add") for a in argv)
    assert "--device=nvidia.com/gpu=GPU-b" in argv and "--env=CUDA_VISIBLE_DEVICES=0" in argv
    assert not any(a.startswith(("--runtime", "--env=NVIDIA_VISIBLE_DEVICES")) for a in argv)
    assert argv[-3:] == ["reg:5000/hpc/mpi:1", "nvidia-smi", "-L"]
    assert [c["argv"] for c in calls if c["argv"][:1] == ["pull"]] == [["pull", "--quiet", "reg:5000/hpc/mpi:1"]]
    name = [a for a in argv if a.startswith("--name=")][0].split("=", 1)[1]
    assert name.startswith("srun-podman-7-") and ["rm", "--force", name] in docker_calls(calls, "rm")
    # the login node's runtime directory, which this node lacks, is not handed to podman
    assert all(c["xdg"] is None for c in calls if c["cmd"] == "docker")


@pytest.mark.parametrize("bed", ["podman"], indirect=True)
def test_podman_errors_name_srun_podman(bed):
    run, _home = bed
    proc, calls = run(["hpc/mpi:1", "true"], {"SLURM_JOB_ID": ""})
    assert proc.returncode == 2 and proc.stderr.startswith("srun-podman: not inside a Slurm job: run srun-podman")


def test_step_runs_one_container_with_the_steps_gpu(bed):
    run, home = bed
    proc, calls = run(["hpc/mpi:1", "--", "nvidia-smi", "-L"],
                      {"SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "1", "SLURM_JOB_GPUS": "0,1", "FAKE_RUN_RC": "3"})
    assert proc.returncode == 3, proc.stderr
    (argv,) = docker_calls(calls, "run")
    assert "--user=%d:%d" % (os.getuid(), os.getgid()) in argv
    assert "--volume=/etc/passwd:/etc/passwd:ro" in argv and "--volume=/etc/group:/etc/group:ro" in argv
    assert "--volume=%s:%s" % (home, home) in argv and "--workdir=%s" % home in argv
    assert "--runtime=nvidia" in argv and "--env=NVIDIA_VISIBLE_DEVICES=GPU-b" in argv
    assert "--env=CUDA_VISIBLE_DEVICES=0" in argv and "--pull=never" in argv and "--rm" in argv
    assert "--label=hpc.gpu_containers.slurm_job=7" in argv
    assert not any(a.startswith("--env=SLURM_") for a in argv)
    assert argv[-3:] == ["reg:5000/hpc/mpi:1", "nvidia-smi", "-L"]
    name = [a for a in argv if a.startswith("--name=")][0].split("=", 1)[1]
    assert ["rm", "--force", name] in docker_calls(calls, "rm")


def test_step_without_gpus_gets_void(bed):
    run, _home = bed
    proc, calls = run(["hpc/mpi:1", "true"], {"SLURM_STEP_ID": "0", "SLURM_JOB_GPUS": "0"})
    assert proc.returncode == 0, proc.stderr
    assert "--env=NVIDIA_VISIBLE_DEVICES=void" in docker_calls(calls, "run")[0]


def test_refusals_start_nothing(bed):
    run, _home = bed
    proc, calls = run(["--dockopts", "--privileged -v /:/host", "hpc/mpi:1", "true"], {"SLURM_STEP_ID": "0"})
    assert proc.returncode == 2 and "--privileged" in proc.stderr and not docker_calls(calls, "run")
    proc, calls = run(["hpc/mpi:1", "true"], {"SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "5"})
    assert proc.returncode == 2 and "does not list" in proc.stderr and not docker_calls(calls, "run")
    proc, calls = run(["hpc/mpi:1", "true"], {"SLURM_JOB_ID": ""})
    assert proc.returncode == 2 and "not inside a Slurm job" in proc.stderr and not calls
    proc, calls = run(["--no-ssh", "hpc/mpi:1", "true"])
    assert proc.returncode == 2 and "one-node job" in proc.stderr


def test_image_pulled_once_with_the_site_login(bed, tmp_path):
    run, _home = bed
    login = tmp_path / "etc" / "docker"
    login.mkdir()
    (login / "config.json").write_text("{}")
    settings = json.loads((tmp_path / "etc" / "srun-docker.json").read_text())
    settings["docker_config"] = str(login)
    (tmp_path / "etc" / "srun-docker.json").write_text(json.dumps(settings))
    proc, calls = run(["hpc/mpi:1", "true"], {"SLURM_STEP_ID": "0", "FAKE_IMAGE_MISSING": "1"})
    assert proc.returncode == 0, proc.stderr
    assert ["--config", str(login), "pull", "--quiet", "reg:5000/hpc/mpi:1"] in [c["argv"] for c in calls]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_launcher_two_nodes(bed):
    run, home = bed
    proc, calls = run(["--sshd-port", str(free_port()), "hpc/mpi:1", "--", "mpirun", "-np", "2", "hello"],
                      {"FAKE_EXEC_RC": "0"})
    assert proc.returncode == 0, proc.stderr
    daemons = docker_calls(calls, "run")
    assert sorted(c["node"] for c in calls if c["cmd"] == "docker" and c["argv"][:2] == ["run", "--detach"]) == ["n1", "n2"]
    for argv in daemons:
        assert "--entrypoint=/usr/sbin/sshd" in argv and argv[-2] == "-f" and argv[-1].endswith("/sshd_config")
        assert "--env=NVIDIA_VISIBLE_DEVICES=void" in argv  # the step's nodes were given no GPU
    (execd,) = docker_calls(calls, "exec")
    assert execd[-3:] == ["mpirun", "-np", "2", "hello"][-3:] and "srun-docker-7-" in execd[-5]
    envs = dict(a.split("=", 2)[1:] for a in execd if a.startswith("--env="))
    assert envs["SRUN_DOCKER_NODES"] == "n1,n2" and envs["OMPI_MCA_btl_tcp_if_exclude"] == "lo,docker0"
    assert envs["OMPI_MCA_plm_rsh_agent"].startswith("ssh -F %s/.srun-docker/7-" % home)
    (srun,) = [c["argv"] for c in calls if c["cmd"] == "srun"]
    assert "--overlap" in srun and "--ntasks-per-node=1" in srun and "--nodelist=n1,n2" in srun
    removed = [a[-1] for a in docker_calls(calls, "rm")]
    assert sorted(n.rsplit("-", 1)[-1] for n in removed if n.startswith("srun-docker-7-")) == ["n1", "n2"]
    assert list((home / ".srun-docker").iterdir()) == []


def test_launcher_without_ssh_keygen_makes_the_keys_in_the_image_as_the_user(bed):
    """A node without ssh-keygen (no openssh-client): the image's own, run as the user, who must exist in it."""
    run, home = bed
    # only the stand-ins on PATH (the bed's bin directory, next to home): no ssh-keygen
    proc, calls = run(["--sshd-port", str(free_port()), "hpc/mpi:1", "--", "mpirun", "hello"],
                      {"FAKE_EXEC_RC": "0", "PATH": str(home.parent / "bin")})
    assert proc.returncode == 0, proc.stderr
    (keygen,) = [a for a in docker_calls(calls, "run") if "--entrypoint=sh" in a]
    assert "--user=%d:%d" % (os.getuid(), os.getgid()) in keygen and "--network=none" in keygen
    assert "--volume=/etc/passwd:/etc/passwd:ro" in keygen and "--volume=/etc/group:/etc/group:ro" in keygen
    assert len(docker_calls(calls, "exec")) == 1 and list((home / ".srun-docker").iterdir()) == []


def test_launcher_command_failure_still_cleans_up(bed):
    run, home = bed
    proc, calls = run(["--sshd-port", str(free_port()), "hpc/mpi:1", "false"], {"FAKE_EXEC_RC": "5"})
    assert proc.returncode == 5
    assert len([a for a in docker_calls(calls, "rm") if a[-1].startswith("srun-docker-7-")]) == 2
    assert list((home / ".srun-docker").iterdir()) == []


def test_help_lists_the_options(bed):
    run, _home = bed
    proc, _calls = run(["--help"])
    assert proc.returncode == 0
    for option in ("--datamnts", "--dockopts", "--env", "--mount", "--no-ssh", "--pull"):
        assert option in proc.stdout


def test_port_taken_on_a_node_is_a_clear_failure(bed):
    run, home = bed
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        proc, calls = run(["--sshd-port", str(taken.getsockname()[1]), "hpc/mpi:1", "true"])
    assert proc.returncode == 2 and "is in use on n1 already" in proc.stderr
    assert not [a for a in docker_calls(calls, "run") if "--detach" in a]
    assert list((home / ".srun-docker").iterdir()) == []
