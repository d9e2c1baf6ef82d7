# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker jobs on the test bed's real Slurm, as the user alice (uid 2001), submitted on the controller.

* docs/slurm.md's example (examples/slurm/hello-mpi.sbatch): `sbatch --wait` runs a 2-node MPI hello across two job
  containers, one per node, with the MPI image from the private registry; both ranks print, as uid 2001 gid 2001,
  each rank's file in $HOME is alice's, and no job container is left on any node.
* A cancelled 2-node job leaves no container; a container a job left behind (outside srun-docker) is removed by
  the epilog, by job id.
* GPUs: a job given 2 of slurm-n2's 4 GPUs sees those 2, a step given 1 sees exactly the one Slurm allocated (by
  UUID, through the node's GPU map and the stand-in NVIDIA runtime), a step given none sees none.
* The configuration the role wrote: gres.conf and slurm.conf (the site's lines untouched), GRES in Slurm's view,
  the docker group on the controller with the nodes' id (a step has it).
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import testinfra
import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
RUNNER = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY)
CONTROLLER = RUNNER.get_hosts("slurm_controller")[0]
NODES = sorted(RUNNER.get_hosts("slurm_nodes"))
ROOT = Path(__file__).resolve().parents[3]
SITE_SLURM_CONF = (Path(__file__).resolve().parents[1] / "files" / "slurm.conf").read_text()
USER, UID, GID = "alice", 2001, 2001
LABEL = "hpc.gpu_containers.slurm_job"

testinfra_hosts = [CONTROLLER]


def node(name):
    return testinfra.get_host("ansible://%s?ansible_inventory=%s" % (name, INVENTORY))


def as_user(host, command):
    """Run a command as alice in a login shell in her home, on the controller (the submit host)."""
    return host.run("su - %s -c %s" % (USER, _quote(command)))


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def job_containers(job_id=None):
    """{node: [names]} of srun-docker containers (of one job, or all) still on the nodes."""
    label = LABEL if job_id is None else "%s=%s" % (LABEL, job_id)
    out = {}
    for name in NODES:
        result = node(name).run("docker ps --all --filter label=%s --format '{{.Names}}'" % label)
        assert result.rc == 0, result.stderr
        out[name] = result.stdout.split()
    return out


def put(host, name, text, mode="0644"):
    """Write a file into alice's home, as alice."""
    host.run("install -o %s -g %s -m %s /dev/null /home/%s/%s" % (USER, USER, mode, USER, name))
    result = host.run("cat > /home/%s/%s <<'SRUN_DOCKER_TEST_EOF'\n%s\nSRUN_DOCKER_TEST_EOF" % (USER, name, text))
    assert result.rc == 0, result.stderr


def submit_and_wait(host, script, *options):
    result = as_user(host, "sbatch --parsable --wait %s %s" % (" ".join(options), script))
    job_id = result.stdout.strip().split(";")[0].splitlines()[-1] if result.stdout.strip() else ""
    return result, job_id


def output_of(host, pattern):
    return as_user(host, "cat %s" % pattern).stdout


def test_configuration_files(host):
    gres = host.file("/etc/slurm/gres.conf").content_string.splitlines()
    assert gres == [
        "NodeName=slurm-n1 Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia0",
        "NodeName=slurm-n1 Name=gpu Type=tesla_v100-sxm2-16gb File=/dev/nvidia1",
    ] + ["NodeName=slurm-n2 Name=gpu Type=nvidia_a100-sxm4-40gb File=/dev/nvidia%d" % i for i in range(4)]
    conf = host.file("/etc/slurm/slurm.conf").content_string
    site_lines = [line for line in SITE_SLURM_CONF.splitlines() if not line.startswith("NodeName=")]
    lines = conf.splitlines()
    # The site's lines are all there, byte for byte, in their order; the node line is split in two.
    assert [line for line in lines if line in site_lines] == site_lines
    # Each node's GPUs (Gres) and platform (Features: architecture, CPU level, CUDA, driver branch, compute
    # capability, from the recorded V100 and A100 nodes) on its own line.
    n1 = r"NodeName=slurm-n1 CPUs=2 RealMemory=1000 State=UNKNOWN Gres=gpu:tesla_v100-sxm2-16gb:2 " \
         r"Features=x86_64,(x86-64-v[1-4],)?cuda11\.4,nvidia470,sm_70   # two GPU nodes"
    n2 = r"NodeName=slurm-n2 CPUs=2 RealMemory=1000 State=UNKNOWN Gres=gpu:nvidia_a100-sxm4-40gb:4 " \
         r"Features=x86_64,(x86-64-v[1-4],)?cuda12\.2,nvidia535,sm_80"
    assert [line for line in lines if re.fullmatch(n1, line)] and [line for line in lines if re.fullmatch(n2, line)], \
        [line for line in lines if line.startswith("NodeName=")]
    assert "GresTypes=gpu" in lines and "Epilog=/etc/slurm/epilog.d/*" in lines


def test_slurm_sees_the_gpus(host):
    shown = host.check_output("scontrol --oneliner show node")
    assert re.search(r"NodeName=slurm-n1 .*Gres=gpu:tesla_v100-sxm2-16gb:2 ", shown)
    assert re.search(r"NodeName=slurm-n2 .*Gres=gpu:nvidia_a100-sxm4-40gb:4 ", shown)
    assert "DRAIN" not in shown


def test_slurm_knows_each_nodes_platform_and_jobs_pick_nodes_by_it(host):
    """slurm_docker_platform_features (the default): sinfo lists each node's platform features, and a job's
    constraint in those words lands on the node that has them."""
    features = dict(line.split(None, 1) for line in host.check_output("sinfo -N -h -o '%N %f'").splitlines())
    assert re.fullmatch(r"x86_64,(x86-64-v[1-4],)?cuda11\.4,nvidia470,sm_70", features["slurm-n1"]), features
    assert re.fullmatch(r"x86_64,(x86-64-v[1-4],)?cuda12\.2,nvidia535,sm_80", features["slurm-n2"]), features
    for constraint, expected in (("sm_80", "slurm-n2"), ("sm_70&cuda11.4", "slurm-n1"), ("x86_64&nvidia535", "slurm-n2")):
        result = as_user(host, "srun --nodes=1 --constraint='%s' hostname -s" % constraint)
        assert result.rc == 0 and result.stdout.strip() == expected, (constraint, result.stdout, result.stderr)
    refused = as_user(host, "srun --nodes=1 --constraint=sm_90 --immediate=5 hostname -s")
    assert refused.rc != 0 and "slurm-n" not in refused.stdout


def test_a_logical_image_runs_each_nodes_own_variant(host):
    """srun-docker given a logical image of the catalogue (group_vars: image_variants_catalogue) runs, on each node,
    the variant built for it, which the image_variants role keeps there as localhost/hpc-node/deeplearning:node;
    one 2-node step gets each node's own. The variant image prints its name."""
    expected = {"slurm-n1": "cuda11-sm70", "slurm-n2": "cuda12-sm80"}
    for name, variant in expected.items():
        image_id = node(name).check_output("docker image inspect --format '{{.Id}}' localhost/hpc-node/deeplearning:node")
        assert image_id == node(name).check_output(
            "docker image inspect --format '{{.Id}}' %s:5000/hpc/deeplearning:%s" % (CONTROLLER, variant))
    # one job, two steps on the same two nodes: where each task runs, and the variant each task's container has
    script = ("srun --label --ntasks=2 --ntasks-per-node=1 hostname -s; "
              "srun --label --ntasks=2 --ntasks-per-node=1 srun-docker deeplearning -- /bin/busybox cat /etc/hpc-variant")
    result = as_user(host, "salloc --nodes=2 --quiet sh -c %s" % _quote(script))
    assert result.rc == 0, result.stdout + result.stderr
    lines = [line.split(": ", 1) for line in result.stdout.strip().splitlines() if ": " in line]
    nodes = {task: value for task, value in lines if value.startswith("slurm-")}
    variants = {task: value for task, value in lines if not value.startswith("slurm-")}
    assert {nodes[task]: variant for task, variant in variants.items()} == expected, result.stdout
    assert job_containers() == {name: [] for name in NODES}
    # a logical image no variant fits: no node image, and the job fails before any container, with the reason
    assert node(NODES[0]).run("docker image inspect localhost/hpc-node/hopper:node").rc != 0
    refused = as_user(host, "srun --nodes=1 --nodelist=%s srun-docker hopper -- true" % NODES[0])
    assert refused.rc != 0, refused.stdout + refused.stderr
    assert "hopper: no variant fits %s" % NODES[0] in refused.stderr, refused.stderr
    assert "cuda12.4-sm90: needs CUDA 12.4" in refused.stderr, refused.stderr


def test_docker_group_on_the_controller(host):
    ids = {name: node(name).group("docker").gid for name in NODES}
    assert len(set(ids.values())) == 1
    assert host.group("docker").gid == ids[NODES[0]]
    assert USER in host.check_output("getent group docker")
    # slurmctld resolves the groups: a step gets the docker group only because the controller has it.
    result = as_user(host, "srun --nodes=1 --nodelist=%s id -G" % NODES[0])
    assert str(ids[NODES[0]]) in result.stdout.split(), result.stdout + result.stderr


def test_mpi_hello_across_two_job_containers(host):
    put(host, "hello_mpi.py", (ROOT / "examples" / "slurm" / "hello_mpi.py").read_text())
    put(host, "hello-mpi.sbatch", (ROOT / "examples" / "slurm" / "hello-mpi.sbatch").read_text(), mode="0755")
    as_user(host, "rm -f hello-mpi-rank*.txt hello-mpi-*.out")
    result, job_id = submit_and_wait(host, "hello-mpi.sbatch")
    out = output_of(host, "hello-mpi-%s.out" % job_id)
    assert result.rc == 0, result.stdout + result.stderr + out
    ranks = sorted(re.findall(r"hello from rank (\d) of 2 on (\S+) as uid=(\d+) gid=(\d+)", out))
    assert ranks == [("0", "slurm-n1", str(UID), str(GID)), ("1", "slurm-n2", str(UID), str(GID))], out
    for rank in (0, 1):
        written = host.file("/home/%s/hello-mpi-rank%d.txt" % (USER, rank))
        assert written.exists and written.uid == UID and written.gid == GID
    assert job_containers(job_id) == {name: [] for name in NODES}
    # the job's keys and ssh configuration are gone too
    assert as_user(host, "ls -A .srun-docker 2>/dev/null").stdout.strip() == ""


def test_cancelled_job_leaves_no_container(host):
    put(host, "sleep.sbatch", "#!/bin/bash\n#SBATCH --nodes=2 --output=sleep-%j.out\n"
                              "srun-docker hpc/mpi:1 -- sleep 600\n", mode="0755")
    job_id = as_user(host, "sbatch --parsable sleep.sbatch").stdout.strip()
    assert job_id.isdigit()
    deadline = time.monotonic() + 120
    while any(not names for names in job_containers(job_id).values()):
        assert time.monotonic() < deadline, "the job's containers did not start: %s" % output_of(host, "sleep-%s.out" % job_id)
        time.sleep(2)
    host.check_output("scancel %s" % job_id)
    deadline = time.monotonic() + 60
    while host.run("squeue --noheader --jobs %s" % job_id).stdout.strip():
        assert time.monotonic() < deadline, "job %s still in the queue" % job_id
        time.sleep(1)
    assert job_containers(job_id) == {name: [] for name in NODES}


def test_epilog_removes_what_a_job_left(host):
    # A job that starts a container of its own with the job's label and exits: only the epilog can remove it.
    put(host, "leave.sbatch", "#!/bin/bash\n#SBATCH --nodes=1 --nodelist=%s --output=leave-%%j.out\n"
                              "docker run --detach --label %s=$SLURM_JOB_ID --user %d:%d slurm-ctl:5000/hpc/mpi:1 "
                              "sleep 600\n" % (NODES[0], LABEL, UID, GID), mode="0755")
    result, job_id = submit_and_wait(host, "leave.sbatch")
    assert result.rc == 0, result.stdout + result.stderr + output_of(host, "leave-%s.out" % job_id)
    deadline = time.monotonic() + 30
    while job_containers(job_id)[NODES[0]]:
        assert time.monotonic() < deadline, "the epilog did not remove job %s's container" % job_id
        time.sleep(1)


def test_gpu_job_and_steps_see_only_their_gpus(host):
    gpus = [line.split("=", 1)[1] for line in node("slurm-n2").file("/etc/nvidia-standin/nvml.conf").content_string
            .splitlines() if re.match(r"gpu\.\d+\.uuid=", line)]
    script = "\n".join([
        "#!/bin/bash",
        "#SBATCH --nodes=1 --nodelist=slurm-n2 --gres=gpu:2 --output=gpu-%j.out",
        "echo job-gpus=$SLURM_JOB_GPUS",
        "srun-docker hpc/mpi:1 -- nvidia-smi -L | sed 's/^/job: /'",
        "srun --ntasks=1 --gres=gpu:1 bash -c 'echo step-gpus=$SLURM_STEP_GPUS; "
        "srun-docker hpc/mpi:1 -- nvidia-smi -L | sed \"s/^/step: /\"'",
        "srun --ntasks=1 --gres=none srun-docker hpc/mpi:1 -- sh -c "
        "'echo none: NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES; ls /dev | grep -c \"^nvidia[0-9]\" | sed \"s/^/none: devices=/\"'",
    ])
    put(host, "gpu.sbatch", script, mode="0755")
    result, job_id = submit_and_wait(host, "gpu.sbatch")
    out = output_of(host, "gpu-%s.out" % job_id)
    assert result.rc == 0, out + result.stderr
    job_ids = re.search(r"job-gpus=(\S+)", out).group(1).split(",")
    step_ids = re.search(r"step-gpus=(\S+)", out).group(1).split(",")
    job_seen = re.findall(r"^job: GPU \d+: .*\(UUID: (GPU-[0-9a-f-]+)\)", out, re.M)
    step_seen = re.findall(r"^step: GPU \d+: .*\(UUID: (GPU-[0-9a-f-]+)\)", out, re.M)
    # Slurm's index i is the node's i-th GPU (minor order, the stand-in numbers them so).
    assert job_seen == [gpus[int(i)] for i in job_ids], out
    assert len(step_seen) == 1 and step_seen == [gpus[int(step_ids[0])]], out
    assert "none: NVIDIA_VISIBLE_DEVICES=void" in out and "none: devices=0" in out, out
    assert job_containers(job_id) == {name: [] for name in NODES}


def test_job_cannot_widen_its_container(host):
    """What a job may not make srun-docker do, with the real Slurm and Docker: run as root (-u0, -uroot), put docker
    options where the image goes, see more GPUs than its own (-e NVIDIA_VISIBLE_DEVICES=all), join another
    container's namespaces; and its container is held to the job's CPU and memory (read inside it)."""
    gpus = [line.split("=", 1)[1] for line in node("slurm-n2").file("/etc/nvidia-standin/nvml.conf").content_string
            .splitlines() if re.match(r"gpu\.\d+\.uuid=", line)]
    limits = " ".join("/sys/fs/cgroup/%s" % name for name in (
        "cpu.max", "memory.max", "cpuset.cpus.effective", "cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us",
        "memory/memory.limit_in_bytes", "cpuset/cpuset.cpus"))
    script = "\n".join([
        "#!/bin/bash",
        "#SBATCH --nodes=1 --nodelist=slurm-n2 --gres=gpu:1 --cpus-per-task=1 --mem=200M --output=widen-%j.out",
        "echo job-gpus=$SLURM_JOB_GPUS cpus=$SLURM_CPUS_ON_NODE mem=$SLURM_MEM_PER_NODE",
        "srun-docker --dockopts=-u0 hpc/mpi:1 -- id -u; echo u0-rc=$?",
        "srun-docker --dockopts='-it -uroot' hpc/mpi:1 -- id -u; echo uroot-rc=$?",
        "srun-docker -- --label=a:b/c --privileged --pid=host hpc/mpi:1 id -u; echo image-position-rc=$?",
        "srun-docker --dockopts='-e NVIDIA_VISIBLE_DEVICES=all' hpc/mpi:1 -- nvidia-smi -L; echo gpus-all-rc=$?",
        "srun-docker --dockopts='--ipc=container:srun-docker-1-b-1-slurm-n2' hpc/mpi:1 -- true; echo ipc-rc=$?",
        "srun-docker --dockopts='--oom-score-adj=-1000' hpc/mpi:1 -- true; echo oom-rc=$?",
        "srun-docker hpc/mpi:1 -- sh -c 'echo uid=$(id -u); nvidia-smi -L | sed \"s/^/seen: /\"; "
        "for f in %s; do [ -r $f ] && echo limit $f=$(cat $f); done; true'" % limits,
        "echo held-rc=$?",
    ])
    put(host, "widen.sbatch", script, mode="0755")
    result, job_id = submit_and_wait(host, "widen.sbatch")
    out = output_of(host, "widen-%s.out" % job_id)
    assert result.rc == 0, out + result.stderr
    for refused in ("u0", "uroot", "image-position", "gpus-all", "ipc", "oom"):
        assert "%s-rc=2" % refused in out, out
    assert "docker option -u0 is not allowed" in out and "docker option -uroot is not allowed" in out, out
    assert "'--label=a:b/c' is not an image reference" in out and "NVIDIA_VISIBLE_DEVICES" in out, out
    assert "docker option --ipc is not allowed" in out and "docker option --oom-score-adj is not allowed" in out, out
    # the one container that ran: as alice, with its one GPU, within the job's CPU and memory
    assert "held-rc=0" in out and "uid=%d" % UID in out, out
    job = dict(item.split("=", 1) for item in re.search(r"^job-gpus=.*$", out, re.M).group(0).split())
    assert re.findall(r"^seen: GPU \d+: .*\(UUID: (GPU-[0-9a-f-]+)\)", out, re.M) == [gpus[int(job["job-gpus"])]], out
    seen = dict(re.findall(r"^limit /sys/fs/cgroup/(\S+?)=(.*)$", out, re.M))
    assert job["cpus"] == "1" and job["mem"] == "200", out
    if "cpu.max" in seen:  # cgroup v2 inside the container
        quota, period = seen["cpu.max"].split()
        memory, cpuset = seen["memory.max"], seen["cpuset.cpus.effective"]
    else:
        quota, period = seen["cpu/cpu.cfs_quota_us"], seen["cpu/cpu.cfs_period_us"]
        memory, cpuset = seen["memory/memory.limit_in_bytes"], seen["cpuset/cpuset.cpus"]
    assert int(quota) == int(period), out  # one CPU's time: the job's --cpus-per-task=1
    assert int(memory) == 200 * 1024 * 1024, out  # the job's --mem=200M
    assert cpuset.strip(), out
    assert job_containers(job_id) == {name: [] for name in NODES}


def test_jobs_pull_with_a_pull_only_account(host):
    """srun-docker's registry login is a pull-only account of the registry's read-only instance: a job user who reads
    it can pull every image and overwrite none (the registry refuses the push on both instances)."""
    n1 = node(NODES[0])
    settings = json.loads(n1.file("/etc/srun-docker/srun-docker.json").content_string)
    assert settings["pull_registry"] == "slurm-ctl:5001" and settings["registry"] == "slurm-ctl:5000"
    login = json.loads(n1.file("/etc/srun-docker/docker/config.json").content_string)
    assert list(login["auths"]) == ["slurm-ctl:5001"]
    assert base64.b64decode(login["auths"]["slurm-ctl:5001"]["auth"]).decode().split(":", 1)[0] == "jobs"
    # a job pulls through it: the image, gone from the node, comes back under the job's name
    n1.run("docker image rm slurm-ctl:5000/hpc/mpi:1")
    out = as_user(host, "srun --nodes=1 --nodelist=%s srun-docker hpc/mpi:1 -- id -u" % NODES[0])
    assert out.rc == 0 and out.stdout.strip().splitlines()[-1] == str(UID), out.stdout + out.stderr
    assert n1.run("docker image inspect slurm-ctl:5000/hpc/mpi:1").rc == 0
    assert n1.run("docker image inspect slurm-ctl:5001/hpc/mpi:1").rc != 0
    # the same login cannot push, to either instance
    for target in ("slurm-ctl:5001/hpc/mpi:overwritten", "slurm-ctl:5000/hpc/mpi:overwritten"):
        n1.check_output("docker tag slurm-ctl:5000/hpc/mpi:1 %s" % target)
        pushed = n1.run("docker --config /etc/srun-docker/docker push %s" % target)
        n1.run("docker image rm %s" % target)
        assert pushed.rc != 0, pushed.stdout + pushed.stderr
    # nothing reached the registry: the push account (root's login on the node) finds no such tag
    assert n1.run("docker pull slurm-ctl:5000/hpc/mpi:overwritten").rc != 0


# --- rolling changes: the drain (last: it restarts dockerd on the compute nodes) -----------------------------------

OPERATOR_REASON = "operator: fan replacement"


def _slurm_node(host, name):
    line = host.check_output("scontrol --oneliner show node %s", name)
    state = re.search(r" State=(\S+)", line).group(1)
    reason = re.search(r" Reason=(.*)$", line)
    return state, reason.group(1) if reason else ""


def _dockerd_started(name):
    """Unix time at which the node's running dockerd started."""
    return int(node(name).check_output('date -d "$(systemctl show -p ExecMainStartTimestamp --value docker)" +%s'))


def _task_results(report, name):
    """{host: result} of the task in every play of the report (site.yml's batches are one play each)."""
    hosts = {}
    for play in report["plays"]:
        for task in play["tasks"]:
            if task["task"]["name"].split(" : ")[-1] == name:
                hosts.update(task["hosts"])
    assert hosts, "task %r did not run" % name
    return hosts


def test_a_docker_restart_drains_each_node_waits_for_its_job_and_resumes_it(host, tmp_path):
    """A change that restarts dockerd on the compute nodes (a daemon.json key dockerd cannot reload), run through
    site.yml with its defaults: slurm-n1, running a job, is drained in Slurm (scontrol update State=DRAIN, reason
    "hpc.gpu_containers: ...") and dockerd is not restarted while the job runs; the job ends when the test has seen
    the drain, dockerd restarts after it, and the node is resumed once the verification passed. slurm-n2, which an
    operator drained before the run, is restarted too but keeps its drain and its reason."""
    n1, n2 = NODES
    release = "drain-release-%d" % os.getpid()  # in alice's home, which every node shares
    host.check_output("scontrol update NodeName=%s State=DRAIN Reason=%s", n2, OPERATOR_REASON)
    proc = None
    try:
        job = "while [ ! -e $HOME/%s ]; do sleep 1; done; date +%%s; echo job-done" % release
        submitted = as_user(host, "sbatch --parsable --nodelist=%s --output=drain-%%j.out --wrap %s"
                            % (n1, _quote(job)))
        assert submitted.rc == 0, submitted.stderr
        job_id = submitted.stdout.strip().split(";")[0]
        deadline = time.time() + 120
        while as_user(host, "squeue --noheader --jobs=%s --format=%%T" % job_id).stdout.strip() != "RUNNING":
            assert time.time() < deadline, "job %s did not start" % job_id
            time.sleep(2)
        started = {name: _dockerd_started(name) for name in NODES}

        env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1")
        playbook = shutil.which("ansible-playbook") or os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
        with (tmp_path / "site.out").open("w") as out, (tmp_path / "site.err").open("w") as err:
            proc = subprocess.Popen(  # pylint: disable=consider-using-with
                [playbook, "-i", INVENTORY, "--limit", ",".join(NODES), str(ROOT / "playbooks" / "site.yml"),
                 "--extra-vars", json.dumps({"docker_engine_daemon_settings": {"log-opts": {"max-file": "4"}},
                                             "slurm_docker_drain_poll": 5})],
                env=env, stdout=out, stderr=err, text=True)
        # the run drains slurm-n1 while the job runs, and waits
        deadline = time.time() + 1800
        while "DRAIN" not in _slurm_node(host, n1)[0]:
            assert proc.poll() is None, "site.yml ended without draining %s" % n1
            assert time.time() < deadline, "%s was not drained" % n1
            time.sleep(3)
        time.sleep(20)
        assert _slurm_node(host, n1)[0] != "IDLE+DRAIN" and _dockerd_started(n1) == started[n1]
        assert proc.poll() is None
        as_user(host, "touch %s" % release)
        proc.wait(timeout=2400)
        stdout, stderr = (tmp_path / "site.out").read_text(), (tmp_path / "site.err").read_text()
        assert proc.returncode == 0, stdout[-6000:] + stderr[-3000:]
        report, _end = json.JSONDecoder().raw_decode(stdout[stdout.find("{\n"):])

        drained = _task_results(report, "Drain this node in Slurm")
        assert drained[n1]["changed"] is True and "DRAIN" not in drained[n1]["previous"]["state"], drained[n1]
        assert drained[n1]["reason"].startswith("hpc.gpu_containers: restart of dockerd"), drained[n1]
        assert drained[n2]["changed"] is False and OPERATOR_REASON in drained[n2]["note"], drained[n2]
        waited = _task_results(report, "Wait until this node's jobs have ended")[n1]
        assert waited["jobs"] == [] and waited["waited"] >= 20, waited

        # the job ran to its end, and dockerd restarted after it
        output = as_user(host, "cat drain-%s.out" % job_id).stdout.split()
        assert output[-1] == "job-done", output
        assert _dockerd_started(n1) >= int(output[-2])
        assert _dockerd_started(n2) > started[n2]

        resumed = _task_results(report, "Resume this node in Slurm (the collection drained it, the verification passed)")
        assert resumed[n1]["changed"] is True and resumed[n2]["changed"] is False, resumed
        state, reason = _slurm_node(host, n1)
        assert "DRAIN" not in state and reason == "", (state, reason)
        state, reason = _slurm_node(host, n2)
        assert "DRAIN" in state and reason.startswith(OPERATOR_REASON + " ["), (state, reason)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        as_user(host, "touch %s" % release)
        host.run("scontrol update NodeName=%s State=RESUME", n2)
