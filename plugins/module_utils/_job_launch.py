# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Command lines that run a command as a scheduler job, the way a user would: one builder per launcher.

Pure Python, no Ansible. The verification modules run their report as a job to see what a job sees:

* ``bsub_argv``: an interactive LSF job (``bsub -I``) of an application profile on one host, ``gpus`` GPUs asked
  for with ``-gpu "num=N"``;
* ``srun_step_argv``: the ``srun`` part of a one-task Slurm job step on one node (``--gres=gpu:N`` for GPUs);
* ``srun_container_argv``: such a step whose container a wrapper starts (``srun-docker``, ``srun-podman``), with
  the wrapper's own options before the image.

A job is submitted by a user, never root (LSF refuses root jobs unless LSF_ROOT_USER=Y, srun-docker refuses
root): called as root, ``as_user`` runs the submission as ``user`` through ``runuser``.
"""

from __future__ import annotations

from ._lsf_command import login_argv

__all__ = ["as_user", "bsub_argv", "srun_step_argv", "srun_container_argv"]


def as_user(argv, user, as_root):
    """``argv`` run as ``user`` through ``runuser`` when the caller is root, else as it is."""
    if as_root and user and user != "root":
        return ["runuser", "-u", user, "--"] + list(argv)
    return list(argv)


def bsub_argv(app, host, command, user=None, profile=None, as_root=False, gpus=0):
    """argv that submits ``command`` as an interactive job of LSF application profile ``app`` on ``host``.

    ``gpus`` > 0 asks LSF for that many GPUs (``-gpu "num=N"``); the job's container must see exactly the GPUs LSF
    allocated. ``bsub -I`` holds the submitting process until the job ends and relays the job's output, so the
    report comes back on stdout. The submission runs in a login shell (``sh -l``: /etc/profile.d puts LSF on the
    PATH on LSF hosts), after sourcing ``profile`` (profile.lsf) when one is given: the LSF client's login
    shell (``_lsf_command.login_argv``).
    """
    gpu = ["-gpu", "num=%d" % gpus] if gpus else []
    return as_user(login_argv(profile, ["bsub", "-app", app, "-I", "-m", host] + gpu + list(command)), user, as_root)


def srun_step_argv(node, gpus=0, partition=None, srun="srun", job_name="hpc-verify"):
    """The ``srun`` of a one-task job step on ``node``, with ``gpus`` GPUs (``--gres=gpu:N``) when > 0."""
    argv = [srun, "--nodes=1", "--ntasks=1", "--nodelist=%s" % node, "--job-name=%s" % job_name]
    if partition:
        argv.append("--partition=%s" % partition)
    if gpus:
        argv.append("--gres=gpu:%d" % gpus)
    return argv


def srun_container_argv(wrapper, image, command, node, gpus=0, partition=None, srun="srun", wrapper_options=(),
                        job_name="hpc-verify", user=None, as_root=False, login_shell=False):
    """argv that runs ``command`` in ``image`` as a job step on ``node``, in the container ``wrapper`` starts.

    srun holds the submitting process until the step ends and relays its output. With ``login_shell`` the step is
    started from the user's home in a login shell (``sh -l``, so the site's profile puts Slurm on the PATH).
    """
    argv = srun_step_argv(node, gpus, partition, srun, job_name) + [wrapper] + list(wrapper_options) + [image, "--"]
    argv += list(command)
    if login_shell:
        argv = ["/bin/sh", "-lc", 'cd || exit 1; exec "$@"', "sh"] + argv
    return as_user(argv, user, as_root)
