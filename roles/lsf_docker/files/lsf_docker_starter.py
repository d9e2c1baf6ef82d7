"""Starter for LSF Docker jobs (EXEC_DRIVER starter[...]).

LSF runs this as the Docker driver's user (the role's lsf_docker_exec_driver_user, a member of the docker
group) with the environment of the job, which the submitting user controls.
It runs LSF's own docker-starter.py (DRIVER) after these steps:

* Trust: the driver's path was fixed when this file was written (never taken
  from the job's environment), Python runs isolated (-I: no PYTHONPATH, no
  user site, no script directory on sys.path), and variables that change what
  a program loads or runs (LD_*, PYTHON*, BASH_ENV, ...) are dropped before
  the driver starts. They never reach the container either.
* The driver runs "docker" by name as a member of the docker group: it gets
  the site's PATH (SEARCH_PATH), after the directory of the site's Docker client
  (DOCKER_CLIENT), whatever the job's PATH. The job's Docker client settings (every DOCKER_*
  variable: DOCKER_HOST, DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH, ...) are dropped,
  and DOCKER_CONFIG is the driver user's own ~/.docker, never the submitter's (HOME is the job's).
  LSF_ENVDIR, LSF_BINDIR and LSF_SERVERDIR are the site's; LSF's directories
  come after the system's in PATH.
* Exported bash functions (BASH_FUNC_name%% / BASH_FUNC_name() variables,
  e.g. Lmod's "ml" and "module") are removed: Docker refuses an environment
  whose names hold blanks or parentheses (moby/moby#33677).
* The umask is set to UMASK: a restrictive user umask stops
  Docker-based jobs from starting.
* GPUs, with GPU_ISOLATION (the role's default): the container gets the GPUs LSF allocated to the job and no
  other. A job has GPUs only when LSF's effective resource requirement of the job
  (LSB_EFFECTIVE_RSRCREQ, which LSF sets for every job over the submitter's)
  reserves them (rusage[ngpus_physical=N], what bsub -gpu becomes); the GPU
  variables of any other job are the submitter's and are dropped. LSF names
  the GPUs in CUDA_VISIBLE_DEVICES; with LSF's GPU enforcement
  (LSB_RESOURCE_ENFORCE with gpu in lsf.conf, read at job start) it renumbers them from 0 and
  keeps the host's numbers in CUDA_VISIBLE_DEVICES_ORIG, which is read only
  then. They become NVIDIA_VISIBLE_DEVICES, which the NVIDIA runtime reads,
  and CUDA_VISIBLE_DEVICES is renumbered from 0, as the container sees them.
  A job allocated no GPU gets NVIDIA_VISIBLE_DEVICES=void (no GPU), even if
  its image says "all". The job's other NVIDIA_* runtime settings are
  dropped; its NVIDIA_DRIVER_CAPABILITIES can only narrow the site's
  (DRIVER_CAPABILITIES). An allocation LSF never makes (not GPU indices or UUIDs,
  repeated, more than 128 GPUs) fails the job with one line.
  In "devices" mode (DEVICES_MODE) the container gets the host's GPU
  device nodes (the options script), not the runtime's, so no NVIDIA_* setting
  reaches it (NVIDIA_VISIBLE_DEVICES=void) and CUDA_VISIBLE_DEVICES stays as LSF
  set it: the host's numbers, or LSF's renumbering under its GPU enforcement,
  both right for a container that sees the host's devices through LSF's cgroup.
* The image, in a profile's own starter (LOGICAL_IMAGE set): with IMAGE_SELECTION "job_start" the profile's
  logical image becomes the variant built for this node (the image catalogue's rule, python3 RESOLVER), handed
  to the driver in LSB_CONTAINER_IMAGE, which the profile's image() names; with "node" the profile's image()
  names the node image, the tag each node keeps for its own variant. A node that no variant fits fails the job
  here, before any container, with the reason of every variant.

This file is the program's source (roles/lsf_docker/files/lsf_docker_starter.py). The role installs it through
templates/lsf-docker-starter.py.j2, which adds the interpreter line and, at the end, the site's values of the
settings below (the wrapper and each image profile's starter get their own).
"""
import errno
import os
import pwd
import re
import subprocess
import sys

# The site's settings: the installed program sets each of them (templates/lsf-docker-starter.py.j2) before it calls
# main(); these are the role's defaults, with LSF's directories left empty.
DRIVER = ""
UMASK = 0o022
GPU_ISOLATION = True
# "devices" mode: the container gets device nodes, not the runtime's GPUs.
DEVICES_MODE = False
# LSF's GPU enforcement as the role wrote it; lsf.conf, read at job start, has the last word.
GPU_ENFORCED = False
LSF_CONF = ""
# LSF's own directories, as the site has them: the driver reads lsf.conf and runs LSF's commands from there.
LSF_DIRS = {"LSF_ENVDIR": "", "LSF_BINDIR": "", "LSF_SERVERDIR": ""}
DRIVER_CAPABILITIES = "compute,utility"
DOCKER_CLIENT = "/usr/bin/docker"
SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# A profile's own starter: its logical image; "" for the wrapper.
LOGICAL_IMAGE = ""
# "job_start": the starter hands the variant to the driver in LSB_CONTAINER_IMAGE; "node": image() names the
# node image, and the starter only checks that a variant fits.
IMAGE_SELECTION = "node"
NODE_REPOSITORY = "localhost/hpc-node"
RESOLVER = "/usr/local/lib/hpc-gpu-containers/image_variant.py"
CATALOGUE = "/etc/hpc-gpu-containers/images.json"
PLATFORM = "/etc/hpc-gpu-containers/platform.json"

# Never passed on: each makes a program load or run code of the caller's choosing, or points the driver's
# docker at another daemon, context, configuration or certificates (DOCKER_*).
DROP_PREFIXES = ("BASH_FUNC_", "LD_", "PYTHON", "DYLD_", "DOCKER_")
DROP_NAMES = frozenset(("BASH_ENV", "ENV", "IFS", "CDPATH", "GCONV_PATH", "LOCPATH", "NLSPATH",
                        "HOSTALIASES", "RESOLV_HOST_CONF", "PERL5LIB", "PERL5OPT", "PERLLIB",
                        "RUBYLIB", "RUBYOPT", "NODE_OPTIONS", "MALLOC_CHECK_", "GLIBC_TUNABLES"))
# The GPU variables: with isolation, only what LSF allocated sets them.
GPU_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES_ORIG")
# Most GPUs one job is handed on one host (LSF_HOST_MAX_GPU is at most 32; MIG instances multiply that).
MAX_GPUS = 128
# One GPU as LSF names it: its index, or its UUID (GPU-..., MIG-...).
GPU_RE = re.compile(r"(?:[0-9]{1,4}|(?:GPU|MIG)-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"
                    r"|MIG-GPU-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}/[0-9]{1,2}/[0-9]{1,2})\Z")
# A GPU reservation in LSF's effective resource requirement: rusage[...ngpus_physical=N...] (bsub -gpu), or
# one of the older ngpus_* resources.
ENFORCE_RE = re.compile(r"[ \t]*LSB_RESOURCE_ENFORCE[ \t]*=(.*)")
RUSAGE_RE = re.compile(r"rusage\[([^\]]*)\]")
GPU_RUSAGE_RE = re.compile(r"(?:^|[\s:,])ngpus(?:_physical|_shared|_excl_t|_excl_p)?\s*=\s*([0-9]+(?:\.[0-9]+)?)")


class Refused(Exception):
    """The job cannot start; ``str()`` is the one line to show."""


def clean_environment(environ):
    """The job environment without the variables this starter must not pass on."""
    return dict((name, value) for name, value in environ.items()
                if name not in DROP_NAMES and not name.startswith(DROP_PREFIXES))


def driver_environment(env):
    """The site's programs and Docker client settings for the driver, whatever the job's."""
    if not os.path.isabs(DOCKER_CLIENT):
        raise Refused("the Docker client %r is not an absolute path" % DOCKER_CLIENT)
    client_dir = os.path.dirname(DOCKER_CLIENT)
    # Only absolute directories: an empty or relative entry would search the job's working directory.
    # LSF's commands after the system's, as profile.lsf puts them.
    path = [client_dir]
    for part in SEARCH_PATH.split(":") + [LSF_DIRS["LSF_BINDIR"], LSF_DIRS["LSF_SERVERDIR"]]:
        if os.path.isabs(part) and part not in path:
            path.append(part)
    env["PATH"] = ":".join(path)
    env.pop("LSF_LIBDIR", None)
    env.update((name, value) for name, value in LSF_DIRS.items() if value)
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        raise Refused("the driver's user (uid %d) has no passwd entry, so no Docker configuration of its own"
                      % os.getuid())
    env["DOCKER_CONFIG"] = os.path.join(home, ".docker")
    return env


def gpu_enforced():
    """Whether LSF enforces GPU access: the last LSB_RESOURCE_ENFORCE of lsf.conf names gpu.

    LSF then renumbers CUDA_VISIBLE_DEVICES from 0 and keeps the host's numbers in CUDA_VISIBLE_DEVICES_ORIG;
    without it LSF sets no CUDA_VISIBLE_DEVICES_ORIG, and one in the job's environment is the submitter's.
    The role's value when lsf.conf cannot be read.
    """
    try:
        with open(LSF_CONF, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return GPU_ENFORCED
    value = ""
    for line in lines:
        match = ENFORCE_RE.match(line)
        if match:
            value = match.group(1)
    return "gpu" in value.split("#", 1)[0].replace('"', " ").replace("'", " ").lower().split()


def gpus_requested(environ):
    """Whether LSF reserved GPUs for the job (its effective resource requirement, set by LSF for every job)."""
    for rusage in RUSAGE_RE.findall(environ.get("LSB_EFFECTIVE_RSRCREQ", "")):
        for amount in GPU_RUSAGE_RE.findall(rusage):
            if float(amount) > 0:
                return True
    return False


def gpu_list(environ, name):
    """The GPUs LSF names in ``name``; Refused when the value is none LSF makes."""
    value = environ.get(name, "")
    gpus = [gpu.strip() for gpu in value.split(",") if gpu.strip()]
    shown = value if len(value) <= 60 else "%s... (%d bytes)" % (value[:40], len(value))
    if len(gpus) > MAX_GPUS:
        raise Refused("%s: %d GPUs (%r): LSF hands a job at most %d on one host" % (name, len(gpus), shown, MAX_GPUS))
    for gpu in gpus:
        if not GPU_RE.match(gpu):
            raise Refused("%s: %r is not a GPU index or UUID as LSF names GPUs (in %r)" % (name, gpu[:60], shown))
    if len(set(gpus)) != len(gpus):
        raise Refused("%s: %r names a GPU twice" % (name, shown))
    return gpus


def driver_capabilities(asked):
    """The site's NVIDIA_DRIVER_CAPABILITIES, narrowed to those of ``asked`` it has (never wider)."""
    site = [cap.strip() for cap in DRIVER_CAPABILITIES.split(",") if cap.strip()]
    wanted = set(cap.strip() for cap in (asked or "").split(",") if cap.strip())
    if "all" in site:
        narrowed = sorted(wanted - {"all"}) if wanted and "all" not in wanted else []
    else:
        narrowed = [cap for cap in site if cap in wanted]
    return ",".join(narrowed) if narrowed else DRIVER_CAPABILITIES


def gpu_environment(environ):
    """The job environment with its GPU variables set from what LSF allocated, and only from that."""
    asked_capabilities = environ.get("NVIDIA_DRIVER_CAPABILITIES")
    env = dict((name, value) for name, value in environ.items()
               if name not in GPU_NAMES and not name.startswith("NVIDIA_"))
    if DEVICES_MODE:
        # The runtime hands out no GPU; LSF's CUDA_VISIBLE_DEVICES names the job's GPUs among the host's devices.
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
        for name in GPU_NAMES:
            if gpus_requested(environ) and environ.get(name, "").strip():
                env[name] = ",".join(gpu_list(environ, name))
        return env
    if not gpus_requested(environ):
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
        return env
    gpus = gpu_list(environ, "CUDA_VISIBLE_DEVICES")
    if environ.get("CUDA_VISIBLE_DEVICES_ORIG", "").strip() and gpu_enforced():
        host_gpus = gpu_list(environ, "CUDA_VISIBLE_DEVICES_ORIG")
        if gpus != [str(index) for index in range(len(host_gpus))]:
            raise Refused("CUDA_VISIBLE_DEVICES_ORIG: %d GPUs, but CUDA_VISIBLE_DEVICES (%s) is not LSF's renumbering "
                          "of them" % (len(host_gpus), ",".join(gpus) or "empty"))
        gpus = host_gpus
    if not gpus:
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
        return env
    env.update({
        "NVIDIA_VISIBLE_DEVICES": ",".join(gpus),
        "NVIDIA_DRIVER_CAPABILITIES": driver_capabilities(asked_capabilities),
        "CUDA_VISIBLE_DEVICES": ",".join(str(index) for index in range(len(gpus))),
    })
    return env


def resolve_image(logical_image, path):
    """The image of this node's variant of ``logical_image`` (its node image name in "node" selection); exits
    (the job fails) when none fits."""
    node_image = ["--node-image", NODE_REPOSITORY] if IMAGE_SELECTION != "job_start" else []
    proc = subprocess.run([sys.executable, "-I", RESOLVER, "--catalogue", CATALOGUE, "--platform", PLATFORM]
                          + node_image + [logical_image], capture_output=True, text=True, check=False,
                          env={"PATH": path})
    if proc.returncode != 0 or not proc.stdout.strip():
        sys.stderr.write(proc.stderr or "image-variant: no image for %s (exit %s)\n" % (logical_image, proc.returncode))
        sys.exit(proc.returncode or 1)
    return proc.stdout.strip()


def main():
    try:
        env = driver_environment(clean_environment(os.environ))
        if GPU_ISOLATION:
            env = gpu_environment(env)
    except Refused as err:
        sys.stderr.write("lsf-docker-starter: %s\n" % err)
        sys.exit(1)
    if LOGICAL_IMAGE:
        image = resolve_image(LOGICAL_IMAGE, env["PATH"])
        if IMAGE_SELECTION == "job_start":
            env["LSB_CONTAINER_IMAGE"] = image
    os.umask(UMASK)
    try:
        os.execve(sys.executable, [sys.executable, "-I", DRIVER] + sys.argv[1:], env)
    except OSError as err:
        if err.errno != errno.E2BIG:
            raise
        size = sum(len(name) + len(value) + 2 for name, value in env.items())
        largest = max(env, key=lambda n: len(env[n]))
        sys.stderr.write("lsf-docker-starter: the job environment is too large for the Docker driver (%d bytes in %d "
                         "variables, the largest %s): %s\n" % (size, len(env), largest, err.strerror))
        sys.exit(1)
