"""Docker options of the GPU device nodes of this host, for a Docker profile in "devices" mode.

A profile names this script as CONTAINER options(@<scripts dir>/lsf-docker-gpu-devices.py); LSF runs it on the
execution host at job start and adds what it prints to the container's options: --device for each NVIDIA GPU
device node of this host (/dev/nvidia<N>, whatever the other hosts have) and, on a host with a GPU, each of the
site's control devices (CONTROL) that exists here. A host without a GPU
device node prints nothing.

Nothing is read from the environment, which may be the job submitter's; only character devices are named, by
their fixed paths. Which of the host's GPUs a job may use is LSF's GPU enforcement (LSB_RESOURCE_ENFORCE with gpu):
without it, every container on the host gets all of them.

This file is the program's source (roles/lsf_docker/files/lsf_docker_gpu_devices.py). The role installs it through
templates/lsf-docker-gpu-devices.py.j2, which adds the interpreter line and, at the end, the site's CONTROL.
"""
import os
import re
import stat
import sys

DEV = "/dev"
# The site's control devices (lsf_docker_gpu_control_devices): the installed program sets them before it calls
# main(); these are the role's defaults.
CONTROL = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
GPU_NODE = re.compile(r"nvidia([0-9]{1,4})\Z")


def is_char_device(path):
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def device_nodes(dev=DEV, control=None):
    """This host's GPU device nodes in GPU number order, then the control devices it has (only with a GPU)."""
    gpus = sorted((int(match.group(1)), name) for match, name in
                  ((GPU_NODE.match(name), name) for name in os.listdir(dev)) if match)
    found = [os.path.join(dev, name) for _number, name in gpus if is_char_device(os.path.join(dev, name))]
    if found:
        found += [path for path in (CONTROL if control is None else control) if is_char_device(path)]
    return found


def main():
    try:
        nodes = device_nodes()
    except OSError as err:
        sys.stderr.write("lsf-docker-gpu-devices: cannot list %s: %s\n" % (DEV, err.strerror))
        return 1
    sys.stdout.write(" ".join("--device=%s" % path for path in nodes) + "\n")
    return 0
