# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""srun-docker: its pure helpers, from the program's source (roles/slurm_docker/files/srun_docker.py, imported),
and whole runs of the program as the role's template installs it, against recording stand-ins for docker, srun and
scontrol at the process boundary (the real thing runs in molecule/slurm).

The runs check what the job containers are given (the user's ids, read-only passwd/group, $HOME, the GPUs Slurm
allocated and no other, no SLURM_* variables), that the command's exit code comes back, that containers are removed
on success, failure and refusal, and the launcher's protocol with the per-node step (sshd up -> ready file -> the
command in the first node's container -> stop file -> the step ends normally)."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import ROLES, import_role_program, render_role_template

ROLE = ROLES / "slurm_docker"

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
    return render_role_template("slurm_docker", "srun-docker.j2", slurm_docker_python=sys.executable,
                                slurm_docker_config_dir=str(config_dir), __slurm_docker_engine=engine,
                                __slurm_docker_prog="srun-" + engine)


@pytest.fixture(scope="module")
def srun_docker():
    """The program's source, imported as a module (for its helpers)."""
    return import_role_program("slurm_docker", "srun_docker.py")


def test_the_installed_program_is_the_source_with_its_name_settings_and_engine(tmp_path):
    source = (ROLE / "files" / "srun_docker.py").read_text()
    for engine in ("docker", "podman"):
        installed = render(tmp_path / "etc", engine)
        head, _sep, rest = installed.partition("\n# Ansible managed\n")
        assert head == "#!" + sys.executable
        assert rest.startswith(source.rstrip() + "\n")
        assert "{{" not in source and "{%" not in source
        done = subprocess.run([sys.executable, "-c", installed.partition("\n")[2], "--help"], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: srun-%s " % engine)
        assert "site settings: %s" % (tmp_path / "etc" / ("srun-%s.json" % engine)) in done.stdout


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
    with pytest.raises(srun_docker.UsageError, match="--privileged"):
        srun_docker.check_options(["--privileged", "--user=0", "x"], ["--privileged", "--user"])


def role_denied_options():
    """The role's default denied_options (what a site without its own list runs with)."""
    import yaml
    return yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())["slurm_docker_denied_options"]


# Parsed as Docker's CLI (pflag) parses them, each of these makes the container something srun-docker promises it
# is not (another uid, more privileges, another job's namespaces, the node's devices or files).
REFUSED_DOCKOPTS = [
    ["-u0"], ["-uroot"], ["-u", "0"], ["-itu0"], ["-tu", "root"], ["--user=0"], ["--user", "0:0"],  # item 5
    ["--privileged"], ["--privileged=true"], ["--cap-add=ALL"], ["--security-opt", "seccomp=unconfined"],
    ["--ipc=container:srun-docker-8-0-n1"], ["--network=container:other"], ["--net=host"],  # item 9
    ["--pid=host"], ["--uts=host"], ["--userns=host"], ["--cgroupns=host"], ["--cgroup-parent=/"],
    ["--oom-score-adj=-1000"], ["--cpuset-cpus=0-63"], ["--cpuset-mems", "0"], ["--cpus=64"], ["-m", "1t"],
    ["--memory-swap=-1"], ["-c", "100000"], ["--ulimit", "memlock=-1"], ["--pids-limit=-1"],
    ["--device=/dev/nvidia0"], ["--device-cgroup-rule=c 195:* rwm"], ["--gpus", "all"], ["--runtime=runc"],
    ["-v", "/:/host"], ["-v/:/host"], ["--volume=/etc:/e"], ["--mount", "type=bind,src=/,dst=/h"],
    ["--volumes-from", "other"], ["--entrypoint=/bin/sh"], ["--group-add=0"], ["--env-file", "/x"],
    ["-w", "/"], ["--name=x"], ["--rm=false"], ["-p", "22:22"], ["--sysctl", "kernel.x=1"],
    ["--label", "hpc.gpu_containers.slurm_job=8"], ["-lhpc.gpu_containers.slurm_job.user=0"],
    ["alpine"], ["--", "--privileged"], ["--tmpfs", "rel"],
    ["-e", "NVIDIA_VISIBLE_DEVICES=all"], ["-eNVIDIA_VISIBLE_DEVICES=all"], ["--env=CUDA_VISIBLE_DEVICES=0,1,2,3"],  # 7
    ["--env", "NVIDIA_DRIVER_CAPABILITIES=all"], ["-e", "NVIDIA_REQUIRE_CUDA=cuda>=1"], ["-e", "LD_PRELOAD=/x.so"],
    ["-ie", "NVIDIA_VISIBLE_DEVICES=all"], ["-e", "SLURM_JOB_ID=1"],
]


@pytest.mark.parametrize("options", REFUSED_DOCKOPTS, ids=" ".join)
def test_dockopts_refused_as_docker_parses_them(srun_docker, options):
    """Items 5, 7, 9: every one of these refused with the role's defaults, whatever its spelling."""
    with pytest.raises(srun_docker.UsageError):
        srun_docker.check_options(options, role_denied_options())


def test_dockopts_refusal_names_the_option(srun_docker):
    for options, named in ((["-u0"], "-u0"), (["-itu0"], "-u0"), (["--ipc=container:x"], "--ipc"),
                           (["-v", "/:/h"], "-v"), (["-e", "NVIDIA_VISIBLE_DEVICES=all"], "NVIDIA_VISIBLE_DEVICES")):
        with pytest.raises(srun_docker.UsageError, match=re.escape(named)):
            srun_docker.check_options(options, [])


def test_dockopts_allowed(srun_docker):
    for options in (["-it"], ["-i", "-t"], ["--tty=false"], ["-e", "X=1"], ["-eX=1"], ["--env=X"], ["-e", "X"],
                    ["--label=a:b/c"], ["-l", "site.x=1"], ["--shm-size=8g"], ["--shm-size", "1g"],
                    ["--tmpfs", "/scratch:size=1g"], ["--read-only"], ["--init"], ["-ite", "A=1", "-e", "B=2"]):
        assert srun_docker.check_options(options, role_denied_options()) == options
    # a site takes an allowed option away
    with pytest.raises(srun_docker.UsageError, match="--shm-size"):
        srun_docker.check_options(["--shm-size=1g"], ["--shm-size"])
    with pytest.raises(srun_docker.UsageError, match="-t"):
        srun_docker.check_options(["-it"], ["--tty"])


def test_image_position_takes_an_image_only(srun_docker):
    """Item 6: what srun-docker hands docker as the image is never an option."""
    for image in ("hpc/mpi:1", "reg:5000/hpc/mpi:1", "localhost/x", "a.b/c/d:e-1.2",
                  "x@sha256:" + "0" * 64, "[::1]:5000/x:1"):
        assert srun_docker.check_image(image) == image
    for bad in ("--label=a:b/c", "--privileged", "-it", "-uroot", "--pid=host", "", "x\n", "hpc/mpi:1 --x",
                "case/UPPER", "x:" + "t" * 200):
        with pytest.raises(srun_docker.UsageError, match="not an image reference"):
            srun_docker.check_image(bad)


def test_qualify_image(srun_docker):
    assert srun_docker.qualify_image("hpc/mpi:1", "reg:5000", []) == "reg:5000/hpc/mpi:1"
    assert srun_docker.qualify_image("other:5000/x:1", "reg:5000", []) == "other:5000/x:1"
    assert srun_docker.qualify_image("localhost/x", "", []) == "localhost/x"
    with pytest.raises(srun_docker.UsageError, match="not from an allowed registry"):
        srun_docker.qualify_image("other:5000/x:1", "reg:5000", ["reg:5000"])
    assert srun_docker.qualify_image("x", "", ["docker.io"]) == "x"


def test_mount_options(srun_docker, tmp_path):
    home, run, data, ref, src = (tmp_path / n for n in ("home", "run", "data", "ref", "src"))
    for path in (home, run, data, ref, src, home / "x"):
        path.mkdir()
    volumes = srun_docker.mount_options(str(home), str(run), [str(data)], ["%s:/ref:ro" % ref, "%s:/dst" % src])
    assert volumes == ["--volume=%s:%s" % (home, home), "--volume=%s:%s" % (run, run), "--volume=%s:%s" % (data, data),
                       "--volume=%s:/ref:ro" % ref, "--volume=%s:/dst" % src]
    assert srun_docker.mount_options(str(home), str(home / "x"), [], []) == ["--volume=%s:%s" % (home, home)]
    for bad in (["rel"], ):
        with pytest.raises(srun_docker.UsageError):
            srun_docker.mount_options(str(home), str(home), bad, [])
    with pytest.raises(srun_docker.UsageError):
        srun_docker.mount_options(str(home), str(home), [], ["%s:/b:rx" % ref])


def test_mounts_of_host_paths_the_user_cannot_reach_are_refused(srun_docker, tmp_path):
    """Item 9: dockerd (root) creates a missing source and reaches past directories the user may not enter; the
    engine's socket and the kernel's interfaces are never mounted; a link is mounted as what it points to."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "sock").symlink_to("/var/run/docker.sock")
    cases = [([], ["/no/such/dir:/x"], "no such file"), (["/no/such/dir"], [], "no such file"),
             ([], ["/var/run/docker.sock:/var/run/docker.sock"], "not mounted"), ([], ["/proc:/p"], "not mounted"),
             ([], ["/sys/fs/cgroup:/c"], "not mounted"), (["/dev"], [], "not mounted"),
             ([], ["%s:/s" % (home / "sock")], "not mounted"), ([], ["%s:rel" % home], "absolute")]
    for datamnts, mounts, message in cases:
        with pytest.raises(srun_docker.UsageError, match=message):
            srun_docker.mount_options(str(home), str(home), datamnts, mounts)
    (home / "data").mkdir()
    (home / "link").symlink_to(home / "data")
    assert srun_docker.mount_options(str(home), str(home), [], ["%s:/d" % (home / "link")])[-1] == \
        "--volume=%s:/d" % (home / "data")


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


def test_job_refusals_as_docker_parses_them_start_nothing(bed):
    """Items 5, 6, 7 and 9 as a job gives them: refused, exit 2, no container."""
    run, _home = bed
    step = {"SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "1", "SLURM_JOB_GPUS": "0,1"}
    cases = [
        (["--dockopts=-u0", "hpc/mpi:1", "id"], "-u0"),  # item 5
        (["--dockopts", "-u0", "hpc/mpi:1", "id"], "-u0"),
        (["--dockopts", "-it", "--dockopts", "-uroot", "hpc/mpi:1", "id"], "-uroot"),
        (["--dockopts", "-it -uroot", "hpc/mpi:1", "id"], "-uroot"),
        (["--", "--label=a:b/c", "--privileged", "--pid=host", "hpc/mpi:1", "id"], "not an image reference"),  # 6
        (["--privileged=true", "hpc/mpi:1", "id"], "unrecognized arguments"),
        (["--dockopts", "-e NVIDIA_VISIBLE_DEVICES=all", "hpc/mpi:1", "nvidia-smi"], "NVIDIA_VISIBLE_DEVICES"),  # 7
        (["--env", "NVIDIA_VISIBLE_DEVICES=all", "hpc/mpi:1", "nvidia-smi"], "NVIDIA_VISIBLE_DEVICES"),
        (["--env", "CUDA_VISIBLE_DEVICES=0,1", "hpc/mpi:1", "nvidia-smi"], "CUDA_VISIBLE_DEVICES"),
        (["--dockopts=--ipc=container:srun-docker-6-0-1-n1", "hpc/mpi:1", "id"], "--ipc"),  # item 9
        (["--dockopts", "--oom-score-adj=-1000 --cpuset-cpus=0", "hpc/mpi:1", "id"], "--oom-score-adj"),
        (["--mount", "/var/run/docker.sock:/s", "hpc/mpi:1", "id"], "not mounted"),
    ]
    for args, message in cases:
        proc, calls = run(args, step)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
        assert not docker_calls(calls, "run"), args


def test_srun_docker_has_the_last_word_on_the_gpus_and_the_labels(bed):
    """Item 7: whatever the job adds, the last NVIDIA_VISIBLE_DEVICES (the one Docker keeps) is srun-docker's."""
    run, _home = bed
    proc, calls = run(["--dockopts", "-it -e SITE=1 --label=site.x=1 --shm-size=1g", "hpc/mpi:1", "true"],
                      {"SLURM_STEP_ID": "0", "SLURM_STEP_GPUS": "1", "SLURM_JOB_GPUS": "0,1"})
    assert proc.returncode == 0, proc.stderr
    (argv,) = docker_calls(calls, "run")
    image = argv.index("reg:5000/hpc/mpi:1")
    options = argv[:image]
    assert "SITE=1" in options and "--shm-size=1g" in options
    visible = [a for a in options if "NVIDIA_VISIBLE_DEVICES" in a]
    assert visible == ["--env=NVIDIA_VISIBLE_DEVICES=GPU-b"]
    # srun-docker's own options come after the job's: a repeated one is srun-docker's
    assert options.index("--shm-size=1g") < options.index("--env=NVIDIA_VISIBLE_DEVICES=GPU-b")
    assert options.index("--shm-size=1g") < options.index("--label=hpc.gpu_containers.slurm_job=7")


def test_container_held_to_the_jobs_cpus_and_memory(bed):
    """Item 8: the job's CPUs (its affinity) and memory, from Slurm's environment where no cgroup says less."""
    run, _home = bed
    slurm = {"SLURM_STEP_ID": "0", "SLURM_CPUS_ON_NODE": "1", "SLURM_MEM_PER_NODE": "100"}
    proc, calls = run(["hpc/mpi:1", "true"], slurm)
    assert proc.returncode == 0, proc.stderr
    (argv,) = docker_calls(calls, "run")
    assert "--cpus=1" in argv and "--memory=104857600" in argv and "--memory-swap=104857600" in argv
    cpuset = [a for a in argv if a.startswith("--cpuset-cpus=")]
    assert cpuset == ["--cpuset-cpus=%s" % ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))] or \
        len(cpuset) == 1
    # the launcher's per-node containers too
    proc, calls = run(["--sshd-port", str(free_port()), "hpc/mpi:1", "true"],
                      {"SLURM_CPUS_ON_NODE": "1", "SLURM_MEM_PER_CPU": "50"})
    assert proc.returncode == 0, proc.stderr
    for argv in docker_calls(calls, "run"):
        if "--detach" in argv:
            assert "--cpus=1" in argv and "--memory=52428800" in argv


def test_resource_options_from_a_cgroup_v2_step(srun_docker, tmp_path):
    root = tmp_path / "cg"
    step = root / "system.slice" / "slurmstepd.scope" / "job_7" / "step_0"
    step.mkdir(parents=True)
    (step / "cpuset.cpus.effective").write_text("2-3,6\n")
    (step / "cpu.max").write_text("max 100000\n")
    (step / "memory.max").write_text("max\n")
    (step.parent / "memory.max").write_text("1073741824\n")
    (step.parent / "cpu.max").write_text("250000 100000\n")
    (tmp_path / "self").write_text("0::/system.slice/slurmstepd.scope/job_7/step_0\n")
    limits = srun_docker.cgroup_limits(str(tmp_path / "self"), str(root))
    assert limits == {"cpus": {2, 3, 6}, "cpu_quota": 2.5, "memory": 1073741824}
    opts = srun_docker.resource_options(limits, {"cpus": None, "memory": None}, set(range(8)))
    assert opts == ["--cpuset-cpus=2-3,6", "--cpus=2.5", "--memory=1073741824", "--memory-swap=1073741824"]
    # Slurm's own figures where they are smaller; the affinity within the cpuset
    opts = srun_docker.resource_options(limits, {"cpus": 2, "memory": 512 * 2 ** 20}, {2, 3})
    assert opts == ["--cpuset-cpus=2-3", "--cpus=2", "--memory=536870912", "--memory-swap=536870912"]


def test_resource_options_from_a_cgroup_v1_step(srun_docker, tmp_path):
    root = tmp_path / "cg"
    for controller, files in (("cpuset", {"cpuset.effective_cpus": "1\n"}),
                              ("memory", {"memory.limit_in_bytes": "209715200\n"}),
                              ("cpu,cpuacct", {"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"})):
        directory = root / controller / "slurm" / "uid_2001" / "job_7" / "step_0"
        directory.mkdir(parents=True)
        for name, text in files.items():
            (directory / name).write_text(text)
    (root / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (tmp_path / "self").write_text("".join("%d:%s:/slurm/uid_2001/job_7/step_0\n" % (n, c) for n, c in
                                           enumerate(("cpuset", "memory", "cpu,cpuacct", "name=systemd"), 1)))
    limits = srun_docker.cgroup_limits(str(tmp_path / "self"), str(root))
    assert limits == {"cpus": {1}, "cpu_quota": None, "memory": 209715200}
    assert srun_docker.resource_options(limits, srun_docker.slurm_limits({"SLURM_CPUS_ON_NODE": "4"}), {0, 1}) == \
        ["--cpuset-cpus=1", "--cpus=1", "--memory=209715200", "--memory-swap=209715200"]
    # no cgroup, no Slurm figures: the affinity alone
    assert srun_docker.resource_options({}, srun_docker.slurm_limits({}), {0, 1}) == ["--cpuset-cpus=0-1", "--cpus=2"]
    # a kernel without swap accounting: --memory alone (Docker would warn on every run)
    assert srun_docker.resource_options({"memory": 2 ** 20}, {}, {0}, False) == \
        ["--cpuset-cpus=0", "--cpus=1", "--memory=1048576"]
    assert srun_docker.slurm_limits({"SLURM_CPUS_ON_NODE": "2", "SLURM_MEM_PER_CPU": "10"}) == \
        {"cpus": 2, "memory": 20 * 2 ** 20}


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


def test_image_pulled_from_the_pull_only_instance_and_named_as_the_job_named_it(bed, tmp_path):
    """Item 9: with the registry's pull-only instance, the login's account can pull and nothing else; the image keeps
    the name the job gave (the containers run it by that name)."""
    run, _home = bed
    login = tmp_path / "etc" / "docker"
    login.mkdir()
    (login / "config.json").write_text("{}")
    settings = json.loads((tmp_path / "etc" / "srun-docker.json").read_text())
    settings.update(docker_config=str(login), pull_registry="reg:5001")
    (tmp_path / "etc" / "srun-docker.json").write_text(json.dumps(settings))
    proc, calls = run(["hpc/mpi:1", "true"], {"SLURM_STEP_ID": "0", "FAKE_IMAGE_MISSING": "1"})
    assert proc.returncode == 0, proc.stderr
    argvs = [c["argv"] for c in calls]
    pulled = argvs.index(["--config", str(login), "pull", "--quiet", "reg:5001/hpc/mpi:1"])
    assert argvs[pulled + 1] == ["tag", "reg:5001/hpc/mpi:1", "reg:5000/hpc/mpi:1"]
    assert argvs[pulled + 2] == ["image", "rm", "reg:5001/hpc/mpi:1"]
    assert docker_calls(calls, "run")[0][-2] == "reg:5000/hpc/mpi:1"
    assert not [a for a in argvs if "pull" in a and "reg:5000/hpc/mpi:1" in a]
    # an image of another registry is pulled from there
    proc, calls = run(["other:5000/x:1", "true"], {"SLURM_STEP_ID": "0", "FAKE_IMAGE_MISSING": "1"})
    assert ["--config", str(login), "pull", "--quiet", "other:5000/x:1"] in [c["argv"] for c in calls]
    assert not docker_calls(calls, "tag")


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


def test_dockopts_value_may_begin_with_a_dash(srun_docker):
    """The README's ``--dockopts '--shm-size=8g'``: argparse alone stops at a value that begins with "-"."""
    args = srun_docker.parse_args(["--dockopts", "--shm-size=8g", "--env", "A=1", "img", "cmd", "--dockopts", "-x"])
    assert args.dockopts == ["--shm-size=8g"] and args.image == "img" and args.command == ["cmd", "--dockopts", "-x"]
    args = srun_docker.parse_args(["--", "img", "--dockopts", "-x"])
    assert args.dockopts == [] and args.command == ["--dockopts", "-x"]


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


# --- logical images of the site's image catalogue ---------------------------------------------------

RESOLVER = Path(__file__).resolve().parents[4] / "plugins" / "module_utils" / "_image_catalogue.py"
IMAGE_CATALOGUE = {"deeplearning": {"variants": [
    {"name": "cuda12-sm80", "image": "reg:5000/hpc/deeplearning:cuda12-sm80", "architecture": "x86_64",
     "cuda": "12.2", "compute_capabilities": ["8.0"]},
    {"name": "cuda11-sm70", "image": "reg:5000/hpc/deeplearning:cuda11-sm70", "architecture": "x86_64",
     "cuda": "11.0", "compute_capabilities": ["7.0"], "ptx": True}]}}
VOLTA = {"architecture": "x86_64", "cpu_level": "x86-64-v3", "driver": "470.182.03", "cuda": "11.4",
         "compute_capabilities": ["7.0"]}


@pytest.fixture
def catalogue_bed(bed, tmp_path):
    """The bed, with the site's catalogue, this node's platform and the resolver in srun-<engine>'s settings."""
    run, home = bed
    etc = tmp_path / "etc"
    (etc / "images.json").write_text(json.dumps(IMAGE_CATALOGUE))
    (etc / "platform.json").write_text(json.dumps(VOLTA))
    (settings,) = etc.glob("srun-*.json")
    config = json.loads(settings.read_text())
    config["node_images"] = {"repository": "localhost/hpc-node", "catalogue": str(etc / "images.json"),
                             "platform": str(etc / "platform.json"), "resolver": str(RESOLVER)}
    settings.write_text(json.dumps(config))
    return run, home, etc


def test_a_logical_image_runs_the_node_image_docker_keeps(catalogue_bed):
    run, _home, _etc = catalogue_bed
    proc, calls = run(["deeplearning", "--", "cat", "/etc/hpc-variant"], {"SLURM_STEP_ID": "0"})
    assert proc.returncode == 0, proc.stderr
    (argv,) = docker_calls(calls, "run")
    assert argv[-3:] == ["localhost/hpc-node/deeplearning:node", "cat", "/etc/hpc-variant"]
    assert ["image", "inspect", "localhost/hpc-node/deeplearning:node"] in [c["argv"] for c in calls]
    assert not docker_calls(calls, "pull") and not docker_calls(calls, "tag")  # root keeps it; jobs never pull it
    # a name the catalogue lacks, or with a tag, is an image reference as before
    proc, calls = run(["deeplearning:1", "true"], {"SLURM_STEP_ID": "0"})
    assert proc.returncode == 0 and docker_calls(calls, "run")[0][-2] == "reg:5000/deeplearning:1"
    proc, calls = run(["mpi", "true"], {"SLURM_STEP_ID": "0"})
    assert proc.returncode == 0 and docker_calls(calls, "run")[0][-2] == "reg:5000/mpi"


def test_a_node_no_variant_fits_fails_the_job_with_the_reasons(catalogue_bed):
    run, _home, etc = catalogue_bed
    (etc / "platform.json").write_text(json.dumps(dict(VOLTA, driver="450.80.02", cuda="11.0",
                                                       compute_capabilities=["6.0"])))
    proc, calls = run(["deeplearning", "true"], {"SLURM_STEP_ID": "0"})
    assert proc.returncode == 2 and not docker_calls(calls, "run")
    assert proc.stderr.startswith("srun-docker: deeplearning: no variant fits n1 ")
    assert "cuda12-sm80: needs CUDA 12.2" in proc.stderr and "cuda11-sm70: " in proc.stderr


def test_a_node_image_the_node_lacks_names_its_variant(catalogue_bed):
    run, _home, _etc = catalogue_bed
    proc, calls = run(["deeplearning", "true"], {"SLURM_STEP_ID": "0", "FAKE_IMAGE_MISSING": "1"})
    assert proc.returncode == 2 and not docker_calls(calls, "run") and not docker_calls(calls, "pull")
    assert proc.stderr == ("srun-docker: n1: this node's variant of deeplearning is reg:5000/hpc/deeplearning:cuda11-sm70, "
                           "but the node does not keep it as localhost/hpc-node/deeplearning:node (the image_variants "
                           "role tags it at converge: site.yml --tags images)\n")


# The resolver, run through a file that first counts its runs (srun-<engine> runs it as ``python -I FILE ...``).
COUNTING_RESOLVER = """import runpy, sys
with open(%r, "a") as handle:
    handle.write(" ".join(sys.argv[1:]) + "\\n")
sys.argv[0] = %r
runpy.run_path(%r, run_name="__main__")
"""


@pytest.mark.parametrize("bed", ["podman"], indirect=True)
def test_podman_pulls_the_nodes_variant_into_the_users_store_under_the_node_image_name(catalogue_bed):
    run, _home, etc = catalogue_bed
    (settings,) = etc.glob("srun-*.json")
    config = json.loads(settings.read_text())
    runs = etc / "resolver-runs"
    (etc / "resolver.py").write_text(COUNTING_RESOLVER % (str(runs), str(RESOLVER), str(RESOLVER)))
    config["node_images"]["resolver"] = str(etc / "resolver.py")
    settings.write_text(json.dumps(config))
    proc, calls = run(["deeplearning", "true"], {"SLURM_STEP_ID": "0", "FAKE_IMAGE_MISSING": "1"})
    assert proc.returncode == 0, proc.stderr
    # one resolver run names both the node image and the variant to pull
    assert len(runs.read_text().splitlines()) == 1, runs.read_text()
    argvs = [c["argv"] for c in calls]
    assert ["pull", "--quiet", "reg:5000/hpc/deeplearning:cuda11-sm70"] in argvs
    assert ["tag", "reg:5000/hpc/deeplearning:cuda11-sm70", "localhost/hpc-node/deeplearning:node"] in argvs
    assert docker_calls(calls, "run")[0][-2] == "localhost/hpc-node/deeplearning:node"


def test_the_launcher_runs_each_nodes_node_image(catalogue_bed):
    run, _home, _etc = catalogue_bed
    proc, calls = run(["--sshd-port", str(free_port()), "deeplearning", "--", "hostname"], {"FAKE_EXEC_RC": "0"})
    assert proc.returncode == 0, proc.stderr
    daemons = [c for c in calls if c["cmd"] == "docker" and c["argv"][:2] == ["run", "--detach"]]
    assert sorted(c["node"] for c in daemons) == ["n1", "n2"]
    assert all("localhost/hpc-node/deeplearning:node" in c["argv"] for c in daemons)
    inspected = [c["node"] for c in calls if c["argv"] == ["image", "inspect", "localhost/hpc-node/deeplearning:node"]]
    assert sorted(set(inspected)) == ["n1", "n2"]  # each node checks its own
