# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jobs as a user would submit them (module_utils/_job_launch.py): bsub, an srun step, an srun step in a container."""

from ansible_collections.hpc.gpu_containers.plugins.module_utils._job_launch import (
    bsub_argv,
    srun_container_argv,
    srun_step_argv,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._runtime_verify import srun_podman_argv


def test_bsub_argv_as_root_submits_as_the_user_in_a_login_shell():
    argv = bsub_argv("powerai", "gpu01", ["/verify"], user="lsfadmin", profile="/opt/lsf/conf/profile.lsf",
                     as_root=True)
    assert argv[:4] == ["runuser", "-u", "lsfadmin", "--"]
    assert argv[4:6] == ["/bin/sh", "-lc"]
    assert argv[7:] == ["sh", "/opt/lsf/conf/profile.lsf", "bsub", "-app", "powerai", "-I", "-m", "gpu01", "/verify"]
    # not root: no runuser; no profile: an empty argument the script skips
    argv = bsub_argv("p", "h", ["a b", "c"], user="lsfadmin")
    assert argv[0] == "/bin/sh" and argv[3:] == ["sh", "", "bsub", "-app", "p", "-I", "-m", "h", "a b", "c"]
    assert bsub_argv("p", "h", ["x"], user="root", as_root=True)[0] == "/bin/sh"


def test_bsub_argv_asks_lsf_for_gpus():
    argv = bsub_argv("powerai", "gpu02", ["/verify"], gpus=4)
    assert argv[3:] == ["sh", "", "bsub", "-app", "powerai", "-I", "-m", "gpu02", "-gpu", "num=4", "/verify"]
    assert "-gpu" not in bsub_argv("powerai", "head", ["/verify"], gpus=0)


def test_srun_step():
    assert srun_step_argv("n1") == ["srun", "--nodes=1", "--ntasks=1", "--nodelist=n1", "--job-name=hpc-verify"]
    assert srun_step_argv("n1", gpus=2, partition="gpu", srun="/opt/slurm/bin/srun")[-2:] == [
        "--partition=gpu", "--gres=gpu:2"]


def test_srun_docker_step_as_the_user_in_a_login_shell():
    argv = srun_container_argv("srun-docker", "hpc/verify:1", ["/verify"], "n1", 1, None, "srun",
                               wrapper_options=["--no-ssh"], user="alice", as_root=True, login_shell=True)
    assert argv == ["runuser", "-u", "alice", "--", "/bin/sh", "-lc", 'cd || exit 1; exec "$@"', "sh",
                    "srun", "--nodes=1", "--ntasks=1", "--nodelist=n1", "--job-name=hpc-verify", "--gres=gpu:1",
                    "srun-docker", "--no-ssh", "hpc/verify:1", "--", "/verify"]
    # Not root: no runuser.
    assert srun_container_argv("srun-docker", "i", ["c"], "n1", user="alice", login_shell=True)[0] == "/bin/sh"


def test_srun_podman_step_runs_the_report():
    argv = srun_podman_argv("hpc-verify", ".hpc-verify/home-file", "n2", gpus=1, partition="p")
    assert argv[:7] == ["srun", "--nodes=1", "--ntasks=1", "--nodelist=n2", "--job-name=hpc-verify",
                        "--partition=p", "--gres=gpu:1"]
    assert argv[7:10] == ["srun-podman", "hpc-verify", "--"]
