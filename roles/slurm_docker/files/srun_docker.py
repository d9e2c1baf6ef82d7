"""srun-docker (srun-podman): run a Slurm job's command in Docker (podman) containers, as the user, on every node of the job.

    srun-docker [options] IMAGE [--] [COMMAND [ARG...]]

In a batch script (or an salloc shell) it starts one container per node of the job, each running the
user's own sshd on a per-user port with a key made for this job, waits until every one answers, then
runs COMMAND in the container on the first node, with a host file of the job's nodes and an ssh
configuration that mpirun (or pdsh, or ssh) uses to reach the others. Inside a job step (srun
srun-docker ...) it runs COMMAND in one container on this node, for this task, without sshd.

Every container runs as the user (uid, gid and groups; /etc/passwd and /etc/group read-only; $HOME and
the working directory mounted) and gets the GPUs Slurm allocated to the job or step on its node, by UUID
(never all of the node's GPUs). Containers are removed when the command ends, fails or the job is
cancelled; the Slurm epilog removes whatever a killed job left, by job id.

The same script runs Docker (srun-docker, the user in the docker group, GPUs through the NVIDIA runtime) or
rootless podman (srun-podman: the user's own podman, --userns=keep-id, the allocated GPUs as CDI devices
nvidia.com/gpu=<UUID>); the settings' "engine" decides.

IMAGE may be a logical image of the site's image catalogue (a bare name such as "deeplearning"): every node
then runs its own variant, the one built for its CPU, driver and GPUs, kept as <repository>/<name>:node
(Docker: tagged by the hpc.gpu_containers.image_variants role at converge; podman: pulled into the user's
store and tagged here). A node no variant fits fails the job with every variant's reason.

Site settings: a JSON file the hpc.gpu_containers.slurm_docker role writes (<slurm_docker_config_dir>/<program>.json).
`srun-docker --help` lists the options and names that file.

This file is the program's source (roles/slurm_docker/files/srun_docker.py): the role installs it as srun-docker and
srun-podman through templates/srun-docker.j2, which adds the interpreter line and, at the end, the program's name,
its settings file and its engine (PROG, CONFIG_PATH, ENGINE below).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

# The program's name, its settings file and its engine: the installed program sets them (templates/srun-docker.j2)
# before it calls main(); these are the role's defaults for Docker.
PROG = "srun-docker"
CONFIG_PATH = "/etc/srun-docker/srun-docker.json"
ENGINE = "docker"
# The site settings' defaults; "engine" (docker or podman) and "docker" (the engine's command) are ENGINE unless
# the settings say otherwise (load_config).
DEFAULTS = {
    "srun": "srun",
    "scontrol": "scontrol",
    "sshd": "/usr/sbin/sshd",
    "ssh_keygen_image_fallback": True,
    "ssh_port_base": 20000,
    "ssh_port_span": 10000,
    "state_dir": "~/.srun-docker",
    "pull": "missing",
    "docker_config": "",
    "registry": "",
    # The registry's pull-only instance (container_registry_pull_users): images of "registry" are pulled from
    # there, with the login of a pull-only account, and tagged with the name the job gave.
    "pull_registry": "",
    "allowed_registries": [],
    "docker_options": ["--network=host", "--ipc=host"],
    "denied_options": [],
    "environment": {},
    "gpu_runtime": "",
    "gpu_driver_capabilities": "compute,utility",
    "gpu_map": "",
    "ready_timeout": 300,
    "stop_timeout": 20,
    "label": "hpc.gpu_containers.slurm_job",
    "refuse_root": True,
    "limit_resources": True,
    # The image catalogue's logical images (the image_variants role): a logical name runs each node's own variant,
    # kept under <repository>/<name>:node on every node. {repository, catalogue, platform, resolver}; {}: none.
    "node_images": {},
}
# Environment names never handed to a container: they make a program load or run code of the caller's
# choosing, or (SLURM_*) make MPI inside the container believe it runs under Slurm and call srun there.
DROP_PREFIXES = ("SLURM_", "LD_", "BASH_FUNC_", "PYTHON", "OMPI_MCA_plm")
HOST_KEY_ALIAS = "srun-docker-job"


class UsageError(Exception):
    """A problem with the command line, the job or the site settings: printed, exit 2."""


def log(message):
    sys.stderr.write("%s: %s\n" % (PROG, message))
    sys.stderr.flush()


def load_config(path=None):
    config = dict(DEFAULTS, engine=ENGINE, docker=ENGINE)
    path = path or CONFIG_PATH
    try:
        with open(path) as handle:
            config.update(json.load(handle))
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        raise UsageError("cannot read the site settings %s: %s" % (path, exc))
    return config


# --- pure helpers (unit-tested) ------------------------------------------------------------------

def expand_tasks_per_node(value, count):
    """SLURM_TASKS_PER_NODE ("2(x3),1") -> [2, 2, 2, 1], padded with 1 to ``count`` nodes."""
    out = []
    for part in (value or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "(x" in part:
            number, repeat = part.rstrip(")").split("(x")
            out.extend([int(number)] * int(repeat))
        else:
            out.append(int(part))
    out = out[:count]
    return out + [1] * (count - len(out))


def ssh_port(uid, base, span):
    """The user's sshd port: the same on every node, different for every user (modulo ``span``)."""
    return int(base) + int(uid) % int(span)


def allocated_gpu_ids(environ, in_step):
    """Slurm's GPU indices of this node's allocation: the step's inside a step, else the job's.

    None when Slurm named no GPU (the job or step has none here).
    """
    names = ("SLURM_STEP_GPUS",) if in_step else ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS")
    for name in names:
        value = environ.get(name)
        if value is not None and value.strip():
            return [part.strip() for part in value.split(",") if part.strip()]
    return None


def gpu_environment(ids, gpu_map, runtime, capabilities):
    """Run options and environment that hand the container exactly the GPUs ``ids`` (Slurm's indices).

    ``gpu_map`` lists this node's GPUs in Slurm's index order (``[{"index": 0, "uuid": "GPU-..."}]``).
    ``runtime`` "cdi" (podman): one ``--device=nvidia.com/gpu=<UUID>`` per allocated GPU and none otherwise.
    Any other runtime (Docker's "nvidia"): that runtime with NVIDIA_VISIBLE_DEVICES set to the UUIDs; no GPU
    allocated: NVIDIA_VISIBLE_DEVICES=void, so an image that says "all" gets none. An index the map lacks is an
    error: the container is never given more (or other) GPUs than Slurm allocated.
    """
    cdi = runtime == "cdi"
    if not runtime or not gpu_map:
        if ids:
            raise UsageError("Slurm allocated GPUs %s here, but this node has no GPU map or GPU runtime "
                             "in the %s settings" % (",".join(ids), PROG))
        return [], {}
    if not ids:
        return ([], {}) if cdi else (["--runtime=%s" % runtime], {"NVIDIA_VISIBLE_DEVICES": "void"})
    by_index = dict((str(gpu["index"]), gpu["uuid"]) for gpu in gpu_map)
    missing = [gpu_id for gpu_id in ids if gpu_id not in by_index]
    if missing:
        raise UsageError("Slurm allocated GPU index %s, which this node's GPU map (%d GPUs) does not list"
                         % (",".join(missing), len(gpu_map)))
    uuids = [by_index[gpu_id] for gpu_id in ids]
    visible = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(uuids)))}
    if cdi:
        return ["--device=nvidia.com/gpu=%s" % uuid for uuid in uuids], visible
    return ["--runtime=%s" % runtime], dict(visible, **{
        "NVIDIA_VISIBLE_DEVICES": ",".join(uuids),
        "NVIDIA_DRIVER_CAPABILITIES": capabilities})


# The docker run options a job may add with --dockopts (Docker's CLI, pflag): long name -> (short letter, takes a
# value). Everything else is refused: the identity, the GPUs, devices, capabilities, namespaces, mounts, the
# cgroup and the resources are srun-docker's to decide. Values are checked by check_option_value.
ALLOWED_OPTIONS = {
    "--env": ("e", True),
    "--label": ("l", True),
    "--tmpfs": ("", True),
    "--shm-size": ("", True),
    "--read-only": ("", False),
    "--init": ("", False),
    "--tty": ("t", False),
    "--interactive": ("i", False),
}
# Short letters of every docker run option that takes a value (pflag reads "-u0" as -u with the value 0 and "-it"
# as -i -t): to name a refused option right, not to allow it.
VALUE_SHORTS = set("acehlmpuvw")
# Variables that decide which GPUs (or how) a container gets: srun-docker alone sets them.
GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES",
                 "HIP_VISIBLE_DEVICES")
GPU_PREFIXES = ("NVIDIA_",)
BOOL_VALUES = ("true", "false", "1", "0", "t", "f", "TRUE", "FALSE", "True", "False", "T", "F")


def variable_refusal(name):
    """Why srun-docker does not hand the variable ``name`` from the job to a container (None: it does)."""
    if not name or "=" in name or any(c.isspace() or c == "\0" for c in name):
        return "not a variable name"
    if name in GPU_VARIABLES or name.startswith(GPU_PREFIXES):
        return "it decides the container's GPUs, which only %s sets" % PROG
    if name.startswith(DROP_PREFIXES):
        return "%s does not pass on %s* variables" % (PROG, [p for p in DROP_PREFIXES if name.startswith(p)][0])
    return None


def check_option_value(name, value, label):
    """Refuse the value of an allowed option where it would reach what srun-docker decides."""
    if name == "--env":
        why = variable_refusal(value.partition("=")[0])
        if why:
            raise UsageError("--dockopts %s %s: %s" % (name, value, why))
    elif name == "--label":
        if value.partition("=")[0].startswith(label):
            raise UsageError("--dockopts %s %s: the %s labels are %s's own (they say whose container it is)"
                             % (name, value, label, PROG))
    elif name == "--tmpfs":
        if not value.startswith("/"):
            raise UsageError("--dockopts --tmpfs takes an absolute path inside the container, not %r" % value)


def check_options(options, denied=(), label="hpc.gpu_containers.slurm_job"):
    """The --dockopts a job may pass, parsed as docker run (pflag) parses them: ``--opt=value``, ``--opt value``,
    ``-o value``, ``-ovalue``, combined short flags ``-it``, repeated options. Only ALLOWED_OPTIONS, less the site's
    ``denied`` ones, pass; anything else (another option, an image, a command, ``--``) is refused, naming it."""
    shorts = dict((short, name) for name, (short, _value) in ALLOWED_OPTIONS.items() if short)
    denied = set(denied or ())

    def allowed(name, shown):
        if name not in ALLOWED_OPTIONS or name in denied or shown in denied:
            raise UsageError("docker option %s is not allowed in --dockopts (allowed: %s)"
                             % (shown, ", ".join(sorted(n for n in ALLOWED_OPTIONS if n not in denied))))
        return ALLOWED_OPTIONS[name][1]

    index = 0
    while index < len(options):
        option = options[index]
        index += 1
        if option == "--" or not option.startswith("-") or option == "-":
            raise UsageError("--dockopts takes docker run options only, not %r (the image and the command are %s's "
                             "own arguments)" % (option, PROG))
        if option.startswith("--"):
            name, has_value, value = option.partition("=")
            takes_value = allowed(name, name)
            if takes_value and not has_value:
                if index >= len(options):
                    raise UsageError("docker option %s needs a value" % name)
                value = options[index]
                index += 1
            elif not takes_value and has_value and value not in BOOL_VALUES:
                raise UsageError("docker option %s takes no value (%r)" % (name, option))
            if takes_value:
                check_option_value(name, value, label)
            continue
        letters = option[1:]
        while letters:
            letter, letters = letters[0], letters[1:]
            name = shorts.get(letter)
            if name is None or not ALLOWED_OPTIONS[name][1]:
                if name is None:
                    allowed("-" + letter, "-" + letter + (letters if letter in VALUE_SHORTS else ""))
                allowed(name, "-" + letter)
                if letters.startswith("="):
                    raise UsageError("docker option -%s takes no value (%r)" % (letter, option))
                continue
            allowed(name, "-" + letter)
            value = letters[1:] if letters.startswith("=") else letters
            letters = ""
            if not value:
                if index >= len(options):
                    raise UsageError("docker option -%s needs a value" % letter)
                value = options[index]
                index += 1
            check_option_value(name, value, label)
    return options


# A docker image reference (distribution's reference grammar): [host[:port]/]path[:tag][@digest].
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:localhost|\[[0-9a-fA-F:]+\]|[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*)"
IMAGE_REFERENCE = re.compile(r"(?:%s(?::[0-9]+)?/)?%s(?:/%s)*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
                             r"(?:@sha256:[0-9a-f]{64})?\Z" % (_HOST, _COMPONENT, _COMPONENT))


def check_image(image):
    """The image argument must be an image reference: an option there (``-- --privileged IMG``) would be docker's."""
    if not image or len(image) > 512 or not IMAGE_REFERENCE.match(image):
        raise UsageError("%r is not an image reference (docker options go in --dockopts, and few are allowed)"
                         % image)
    return image


def qualify_image(image, registry, allowed):
    """Prefix an image without a registry host with the site registry; check it against allowed registries."""
    first = image.split("/", 1)[0]
    has_host = "/" in image and ("." in first or ":" in first or first == "localhost")
    if not has_host and registry:
        image = "%s/%s" % (registry, image)
        first = registry
        has_host = True
    if allowed:
        host = first if has_host else "docker.io"
        if host not in allowed:
            raise UsageError("image %s is not from an allowed registry (%s)" % (image, ", ".join(allowed)))
    return image


# Host paths no job mounts: the engine's socket and state, the kernel's and the devices' interfaces.
HOST_PATHS_REFUSED = ("/proc", "/sys", "/dev", "/run", "/var/run", "/var/lib/docker", "/var/lib/containers",
                      "/etc/docker", "/boot")


def pull_source(image, registry, pull_registry):
    """Where ``image`` is pulled from: an image of the site registry from its pull-only instance, when it has one."""
    if pull_registry and registry and image.startswith(registry + "/"):
        return pull_registry + image[len(registry):]
    return image


def mount_source(path, what):
    """A host path a job mounts: absolute, existing and reachable as the user (this program runs as the user, so a
    directory the user may not enter stops it; dockerd, root, would otherwise create a missing path or reach past
    it), symbolic links resolved, not one of HOST_PATHS_REFUSED or below one."""
    if not path.startswith("/"):
        raise UsageError("%s takes absolute paths, not %r" % (what, path))
    if not os.path.exists(path):
        raise UsageError("%s %s: no such file or directory, or not yours to reach" % (what, path))
    real = os.path.realpath(path)
    for refused in HOST_PATHS_REFUSED:
        if real == refused or real.startswith(refused + "/"):
            raise UsageError("%s %s: %s is not mounted into job containers" % (what, path, refused))
    return real


def mount_options(home, workdir, datamnts, mounts):
    """-v options: $HOME, the working directory when outside it, --datamnts (same path), --mount SRC[:DST[:ro]]."""
    volumes = []
    seen = set()

    def add(spec, target):
        if target not in seen:
            seen.add(target)
            volumes.append("--volume=%s" % spec)

    add("%s:%s" % (mount_source(home, "$HOME"), home), home)
    if workdir and not (workdir == home or workdir.startswith(home.rstrip("/") + "/")):
        add("%s:%s" % (mount_source(workdir, "the working directory"), workdir), workdir)
    for path in datamnts:
        add("%s:%s" % (mount_source(path, "--datamnts"), path), path)
    for spec in mounts:
        parts = spec.split(":")
        if (not parts[0].startswith("/") or len(parts) > 3 or (len(parts) == 3 and parts[2] not in ("ro", "rw"))
                or (len(parts) > 1 and not parts[1].startswith("/"))):
            raise UsageError("--mount takes SRC[:DST[:ro|rw]] with absolute paths, not %r" % spec)
        target = parts[1] if len(parts) > 1 else parts[0]
        add(":".join([mount_source(parts[0], "--mount"), target] + parts[2:]), target)
    return volumes


def container_environment(environ, config, extra_env, gpu_env):
    """The environment of the container: the user's identity, site settings, --env, the GPUs."""
    env = {}
    for name in ("HOME", "USER", "LOGNAME", "LANG", "TZ"):
        if environ.get(name):
            env[name] = environ[name]
    env.update(config.get("environment") or {})
    for item in extra_env:
        name, sep, value = item.partition("=")
        why = variable_refusal(name)
        if why:
            raise UsageError("--env %s: %s" % (item, why))
        if sep:
            env[name] = value
        elif name in environ:
            env[name] = environ[name]
    env.update(gpu_env)
    return env


def parse_cpu_list(text):
    """A cpuset list ("0-3,8,10-11") -> the set of CPU numbers."""
    cpus = set()
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, _sep, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def format_cpu_list(cpus):
    """The set of CPU numbers -> a cpuset list, ranges joined ({0, 1, 2, 5} -> "0-2,5")."""
    out = []
    for cpu in sorted(cpus):
        if out and out[-1][1] == cpu - 1:
            out[-1][1] = cpu
        else:
            out.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (OSError, ValueError):
        return None


def cgroup_limits(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """The limits of this process's cgroup, its ancestors' included (the job step's, where Slurm's cgroup plugins
    put it): {"cpus": set or None, "cpu_quota": CPUs (float) or None, "memory": bytes or None}. cgroup v2 (the
    "0::" line): cpuset.cpus.effective, cpu.max, memory.max; v1: the cpuset, cpu and memory hierarchies."""
    limits = {"cpus": None, "cpu_quota": None, "memory": None}
    text = _read(proc_cgroup) or ""
    paths = {}
    for line in text.splitlines():
        _hid, _sep, rest = line.partition(":")
        controllers, _sep, path = rest.partition(":")
        for controller in controllers.split(","):
            paths[controller] = path

    def chain(base, path):
        """The cgroup's directory and its ancestors' up to ``base`` (the closest first)."""
        parts = [p for p in path.split("/") if p and p not in (".", "..")]
        return [os.path.join(base, *parts[:n]) for n in range(len(parts), -1, -1)]

    def smallest(values):
        values = [v for v in values if v is not None]
        return min(values) if values else None

    def number(text, unlimited=2 ** 60):
        if text is None or text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            return None
        return value if 0 < value < unlimited else None

    def quota(text, period_text=None):
        if text is None:
            return None
        fields = text.split()
        period = fields[1] if len(fields) > 1 else period_text
        if fields[0] == "max" or fields[0].startswith("-") or not period:
            return None
        try:
            return int(fields[0]) / int(period)
        except (ValueError, ZeroDivisionError):
            return None

    if "" in paths:  # cgroup v2
        dirs = chain(root, paths[""])
        effective = _read(os.path.join(dirs[0], "cpuset.cpus.effective"))
        limits["cpus"] = parse_cpu_list(effective) if effective else None
        limits["cpu_quota"] = smallest(quota(_read(os.path.join(d, "cpu.max"))) for d in dirs)
        limits["memory"] = smallest(number(_read(os.path.join(d, "memory.max"))) for d in dirs)
        return limits
    if "cpuset" in paths:
        directory = chain(os.path.join(root, "cpuset"), paths["cpuset"])[0]
        effective = _read(os.path.join(directory, "cpuset.effective_cpus")) or _read(os.path.join(directory, "cpuset.cpus"))
        limits["cpus"] = parse_cpu_list(effective) if effective else None
    if "cpu" in paths:
        base = os.path.join(root, "cpu,cpuacct" if os.path.isdir(os.path.join(root, "cpu,cpuacct")) else "cpu")
        limits["cpu_quota"] = smallest(quota(_read(os.path.join(d, "cpu.cfs_quota_us")),
                                             _read(os.path.join(d, "cpu.cfs_period_us")))
                                       for d in chain(base, paths["cpu"]))
    if "memory" in paths:
        limits["memory"] = smallest(number(_read(os.path.join(d, "memory.limit_in_bytes")))
                                    for d in chain(os.path.join(root, "memory"), paths["memory"]))
    return limits


def slurm_limits(environ):
    """The CPUs and memory (bytes) Slurm gave the job on this node, from its environment (None: not said)."""
    def integer(name):
        try:
            value = int(environ.get(name, "").strip())
        except ValueError:
            return None
        return value if value > 0 else None

    cpus = integer("SLURM_CPUS_ON_NODE")
    memory = integer("SLURM_MEM_PER_NODE")
    per_cpu = integer("SLURM_MEM_PER_CPU")
    if memory is None and per_cpu is not None and cpus is not None:
        memory = per_cpu * cpus
    return {"cpus": cpus, "memory": memory * 1024 * 1024 if memory is not None else None}


def resource_options(cgroup, slurm, affinity, swap_accounting=True):
    """docker run options that hold the container to the job step's CPUs and memory: the CPUs this process may run
    on (its affinity, within its cgroup's cpuset) as --cpuset-cpus; as many CPUs' time as the smallest of that
    count, the cgroup's quota and Slurm's CPUs on this node as --cpus; the smallest of the cgroup's and Slurm's
    memory as --memory, with no swap beyond it (--memory-swap the same, where the kernel accounts swap: else Docker
    warns and has nothing to limit)."""
    cpus = set(affinity or ())
    if cgroup.get("cpus"):
        cpus = (cpus & cgroup["cpus"]) or set(cgroup["cpus"])
    opts = []
    counts = [c for c in (len(cpus) or None, cgroup.get("cpu_quota"), slurm.get("cpus")) if c]
    if cpus:
        opts.append("--cpuset-cpus=%s" % format_cpu_list(cpus))
    if counts:
        opts.append("--cpus=%s" % ("%.3f" % min(counts)).rstrip("0").rstrip("."))
    memories = [m for m in (cgroup.get("memory"), slurm.get("memory")) if m]
    if memories:
        opts.append("--memory=%d" % min(memories))
        if swap_accounting:
            opts.append("--memory-swap=%d" % min(memories))
    return opts


def identity_options(engine, uid, gid, groups):
    """The user's ids inside: Docker runs the container as uid:gid with the user's groups; rootless podman maps
    the user to the same uid (--userns=keep-id), and has no way to hand on groups it has no mapping for."""
    if engine == "podman":
        return ["--userns=keep-id", "--user=%d:%d" % (uid, gid)]
    return ["--user=%d:%d" % (uid, gid)] + ["--group-add=%d" % g for g in groups if g != gid]


def usable_runtime_dir(environ, uid):
    """False when XDG_RUNTIME_DIR names a directory rootless podman cannot use (a login node's, handed on by
    Slurm, that does not exist on this node or is not the user's): podman then picks its own."""
    path = environ.get("XDG_RUNTIME_DIR")
    if not path:
        return True
    try:
        return os.stat(path).st_uid == uid
    except OSError:
        return False


# The node's users and groups, read-only, in every container of the job (ssh-keygen and sshd look the user up).
IDENTITY_FILES = ["--volume=/etc/passwd:/etc/passwd:ro", "--volume=/etc/group:/etc/group:ro"]


def run_options(spec, name, gpu_opts, env, keep=False):
    """The run options of one job container."""
    # The job's --dockopts first: for an option given twice Docker keeps the last, which must be srun-docker's.
    opts = list(spec["user_options"])
    opts += ["--name=%s" % name, "--label=%s=%s" % (spec["label"], spec["job_id"]),
             "--label=%s.user=%s" % (spec["label"], spec["uid"])]
    opts += identity_options(spec.get("engine", "docker"), spec["uid"], spec["gid"], spec["groups"])
    opts += IDENTITY_FILES
    opts += spec["volumes"]
    # The image was pulled (or found) before, with the site's registry login: never pull again here.
    opts += ["--workdir=%s" % spec["workdir"], "--pull=never"]
    if not keep:
        opts.append("--rm")
    opts += list(spec["docker_options"]) + list(spec.get("resources") or [])
    opts += ["--env=%s=%s" % item for item in sorted(env.items())]
    opts += gpu_opts
    return opts


def sshd_config(state, port, user):
    return "\n".join([
        "# srun-docker: this job's sshd, run as %s inside each of its containers" % user,
        "Port %d" % port,
        "HostKey %s/host_key" % state,
        "AuthorizedKeysFile %s/id.pub" % state,
        "PidFile none",
        "UsePAM no",
        "StrictModes no",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin no",
        "AllowUsers %s" % user,
        "X11Forwarding no",
        "AllowAgentForwarding no",
        "PrintMotd no",
        "LogLevel ERROR",
        ""])


def ssh_config(state, port, user):
    return "\n".join([
        "# srun-docker: how this job's containers reach each other",
        "Host *",
        "    Port %d" % port,
        "    User %s" % user,
        "    IdentityFile %s/id" % state,
        "    IdentitiesOnly yes",
        "    HostKeyAlias %s" % HOST_KEY_ALIAS,
        "    UserKnownHostsFile %s/known_hosts" % state,
        "    StrictHostKeyChecking yes",
        "    BatchMode yes",
        "    LogLevel ERROR",
        ""])


def mpi_environment(state, nodes, slots):
    """What the command in the first container gets to reach the others (mpirun reads OMPI_MCA_*)."""
    return {
        "SRUN_DOCKER_NODES": ",".join(nodes),
        "SRUN_DOCKER_NUM_NODES": str(len(nodes)),
        "SRUN_DOCKER_HOSTFILE": "%s/hostfile" % state,
        "SRUN_DOCKER_HOSTLIST": ",".join("%s:%d" % pair for pair in zip(nodes, slots)),
        "SRUN_DOCKER_NP": str(sum(slots)),
        "SRUN_DOCKER_SSH_CONFIG": "%s/ssh_config" % state,
        "OMPI_MCA_plm_rsh_agent": "ssh -F %s/ssh_config" % state,
        "OMPI_MCA_orte_default_hostfile": "%s/hostfile" % state,
    }


# --- the job side -----------------------------------------------------------------------------------

# srun-docker's own options that take a value (the next argument, or after "=").
OWN_VALUE_OPTIONS = ("--datamnts", "--mount", "--dockopts", "--env", "--workdir", "--pull", "--sshd-port", "--script",
                     "--_node")


def glue_dockopts(argv):
    """``--dockopts '-u0'`` as ``--dockopts=-u0``: argparse takes a value that begins with "-" for an option of its
    own and stops. Only srun-docker's options, before the image, are looked at: the command's arguments stay."""
    out = list(argv)
    index = 0
    while index < len(out):
        arg = out[index]
        if arg == "--" or not arg.startswith("-"):
            break
        if arg in OWN_VALUE_OPTIONS and index + 1 < len(out):
            if arg == "--dockopts":
                out[index:index + 2] = ["--dockopts=" + out[index + 1]]
                index += 1
            else:
                index += 2
            continue
        index += 1
    return out


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__.split("\n\n")[1], epilog="site settings: %s" % CONFIG_PATH,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("image", nargs="?", help="the image (a name without registry host is taken from the site "
                        "registry); a logical image of the site's image catalogue runs each node's own variant")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command and its arguments")
    parser.add_argument("--datamnts", action="append", default=[], metavar="PATH[,PATH...]",
                        help="directories mounted at the same path (repeatable)")
    parser.add_argument("--mount", action="append", default=[], metavar="SRC[:DST[:ro]]",
                        help="a bind mount (repeatable)")
    parser.add_argument("--dockopts", action="append", default=[], metavar="'OPTIONS'",
                        help="more docker run options, as one quoted string (repeatable); only %s"
                        % ", ".join("%s%s" % (name, "/-" + short if short else "")
                                    for name, (short, _value) in sorted(ALLOWED_OPTIONS.items())))
    parser.add_argument("--env", action="append", default=[], metavar="NAME[=VALUE]",
                        help="pass a variable to the command (repeatable)")
    parser.add_argument("--workdir", help="working directory in the containers (default: the current one)")
    parser.add_argument("--pull", choices=["missing", "always", "never"], help="image pull policy")
    parser.add_argument("--sshd-port", type=int, help="port of the job's sshd (default: per user)")
    parser.add_argument("--ssh", dest="ssh", action="store_true", default=None,
                        help="start sshd even for a one-node job")
    parser.add_argument("--no-ssh", dest="ssh", action="store_false",
                        help="no sshd; the command runs as the container's process (one node only)")
    parser.add_argument("--script", help="a script to run (the seed's --script): same as giving it as COMMAND")
    parser.add_argument("--_launcher", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--_node", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args(glue_dockopts(argv))
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if args.script:
        args.command = [args.script] + args.command
    return args


def run(argv, **kwargs):
    return subprocess.run(argv, check=False, **kwargs)


# A logical image name of the catalogue (image_variant's rule): a bare name, no registry, path, tag or digest.
LOGICAL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def logical_image(name, settings):
    """``name`` when it is a logical image of the site's image catalogue (``settings``: the "node_images" setting),
    else None: then it is an image reference as usual. The catalogue is the site's file, never the job's."""
    if not name or not settings.get("repository") or not LOGICAL_NAME.match(name):
        return None
    try:
        with open(settings["catalogue"]) as handle:
            catalogue = json.load(handle)
    except (OSError, ValueError, KeyError, RecursionError):
        return None
    return name if isinstance(catalogue, dict) and name in catalogue else None


class Job:
    """One srun-docker invocation inside a Slurm job."""

    def __init__(self, args, config, environ):
        self.args = args
        self.config = config
        self.environ = environ
        self.docker = config["docker"]
        self.engine = config.get("engine", "docker")
        if not environ.get("SLURM_JOB_ID"):
            raise UsageError("not inside a Slurm job: run %s in a batch script (sbatch), an salloc "
                             "shell or a job step" % PROG)
        self.job_id = environ["SLURM_JOB_ID"]
        self.uid, self.gid = os.getuid(), os.getgid()
        if self.uid == 0 and config.get("refuse_root", True):
            raise UsageError("refusing to run job containers as root")
        self.user = environ.get("USER") or environ.get("SLURM_JOB_USER") or str(self.uid)
        self.home = os.path.realpath(environ.get("HOME") or os.path.expanduser("~"))
        self.workdir = os.path.realpath(args.workdir or os.getcwd())
        if self.workdir == "/":
            # never mount the node's root filesystem: a job started from / works in $HOME
            self.workdir = self.home
        self.node = environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
        if self.engine == "podman" and not usable_runtime_dir(environ, self.uid):
            os.environ.pop("XDG_RUNTIME_DIR", None)
            environ.pop("XDG_RUNTIME_DIR", None)
        self.children = []
        self.containers = []
        # The logical image of the catalogue the job named (main, or the launcher's spec on the other nodes).
        self.logical = None
        self.variant = None  # this node's variant of self.logical, once resolve() has named it

    # -- shared pieces --
    def spec(self, image, state=None):
        datamnts = [p for item in self.args.datamnts for p in item.split(",") if p]
        user_options = []
        for item in self.args.dockopts:
            user_options += shlex.split(item)
        check_options(user_options, self.config.get("denied_options") or [], self.config["label"])
        return {
            "job_id": self.job_id, "uid": self.uid, "gid": self.gid, "engine": self.engine,
            "groups": sorted(set(os.getgroups())), "user": self.user, "image": image,
            "volumes": mount_options(self.home, self.workdir, datamnts, self.args.mount),
            "workdir": self.workdir, "pull": self.args.pull or self.config["pull"],
            "docker_options": self.config.get("docker_options") or [], "user_options": user_options,
            "label": self.config["label"], "state": state, "env": self.args.env, "logical": self.logical,
            "resources": self.resources(),
        }

    def resources(self):
        """The job step's CPUs and memory, as run options: a Docker container is dockerd's child, outside the job's
        cgroup. Not for rootless podman, which cannot set limits on a cgroup v1 node."""
        if self.engine != "docker" or not self.config.get("limit_resources", True):
            return []
        try:
            affinity = os.sched_getaffinity(0)
        except (AttributeError, OSError):
            affinity = set()
        swap = (os.path.exists("/sys/fs/cgroup/cgroup.controllers")
                or os.path.exists("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"))
        return resource_options(cgroup_limits(), slurm_limits(self.environ), affinity, swap)

    def gpu(self, in_step):
        gpu_map = []
        if self.config.get("gpu_map") and os.path.exists(self.config["gpu_map"]):
            with open(self.config["gpu_map"]) as handle:
                gpu_map = json.load(handle)
        return gpu_environment(allocated_gpu_ids(self.environ, in_step), gpu_map,
                               self.config.get("gpu_runtime"), self.config.get("gpu_driver_capabilities"))

    def container_name(self, token, node):
        return "%s-%s-%s-%s" % (PROG, self.job_id, token, node)

    def resolve(self, logical, node_image):
        """This node's variant of the logical image (the site's resolver, this node's platform): its node image name
        (``node_image``; the variant's own image is then kept in ``self.variant``), else the variant's own image.
        UsageError with every variant's reason when none fits."""
        settings = self.config["node_images"]
        argv = [sys.executable, "-I", settings["resolver"], "--catalogue", settings["catalogue"],
                "--platform", settings["platform"], "--node", self.node]
        argv += ["--node-image", settings["repository"], "--and-variant"] if node_image else []
        result = run(argv + [logical], capture_output=True, text=True)
        lines = result.stdout.split() if result.returncode == 0 else []
        if len(lines) != (2 if node_image else 1):
            raise UsageError((result.stderr.strip().replace("image-variant: ", "", 1) if result.stderr else "")
                             or "no image for %s on %s (resolver exit %d)" % (logical, self.node, result.returncode))
        if node_image:
            self.variant = lines[1]
        return lines[0]

    def ensure_node_image(self, image, policy):
        """The node image of ``self.logical``. Docker: the one the image_variants role keeps (root pulled and
        tagged it; nothing is pulled here). Podman (the user's own store): this node's variant, pulled as
        ``policy`` says and tagged with the node image name."""
        if self.engine == "podman":
            variant = self.variant or self.resolve(self.logical, node_image=False)
            self.ensure_image(variant, policy, logical=False)
            tagged = run([self.docker, "tag", variant, image], capture_output=True, text=True)
            if tagged.returncode != 0:
                raise UsageError("cannot tag %s as %s: %s" % (variant, image, (tagged.stderr or tagged.stdout).strip()))
            return
        if run([self.docker, "image", "inspect", image], stdout=subprocess.DEVNULL,
               stderr=subprocess.DEVNULL).returncode == 0:
            return
        variant = self.variant or self.resolve(self.logical, node_image=False)
        raise UsageError("%s: this node's variant of %s is %s, but the node does not keep it as %s (the "
                         "image_variants role tags it at converge: site.yml --tags images)"
                         % (self.node, self.logical, variant, image))

    def ensure_image(self, image, policy, logical=True):
        """Pull ``image`` as ``policy`` says, with the site's registry login when it has one (the users' own
        Docker configuration has none for the private registry). A logical image's node image: see
        :meth:`ensure_node_image`."""
        if logical and self.logical:
            return self.ensure_node_image(image, policy)
        if policy == "never":
            return
        if policy == "missing" and run([self.docker, "image", "inspect", image], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL).returncode == 0:
            return
        login = self.config.get("docker_config")
        auth = login and os.access(os.path.join(login, "config.json"), os.R_OK)
        if self.engine == "podman":
            argv = [self.docker, "pull", "--quiet"] + (["--authfile", os.path.join(login, "config.json")] if auth else [])
        else:
            argv = [self.docker] + (["--config", login] if auth else []) + ["pull"] + ["--quiet"]
        source = pull_source(image, self.config.get("registry"), self.config.get("pull_registry"))
        result = run(argv + [source], capture_output=True, text=True)
        if result.returncode != 0:
            raise UsageError("cannot pull %s: %s" % (source, (result.stderr or result.stdout).strip()))
        if source != image:
            # the job's name for it; then the pull-only name goes (the image stays, under the job's name)
            tagged = run([self.docker, "tag", source, image], capture_output=True, text=True)
            if tagged.returncode != 0:
                raise UsageError("cannot tag %s as %s: %s" % (source, image, (tagged.stderr or tagged.stdout).strip()))
            run([self.docker, "image", "rm", source], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def remove(self, name):
        run([self.docker, "rm", "--force", name], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def on_signal(self, signum, _frame):
        raise SystemExit(128 + signum)

    def trap(self):
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(signum, self.on_signal)

    # -- one container for this task (inside a step, or a one-node job without sshd) --
    def direct(self, image, in_step):
        if not self.args.command:
            raise UsageError("no command given")
        if self.logical:
            image = self.resolve(self.logical, node_image=True)
        spec = self.spec(image)
        gpu_opts, gpu_env = self.gpu(in_step)
        env = container_environment(self.environ, self.config, spec["env"], gpu_env)
        env["SRUN_DOCKER_JOB_ID"] = self.job_id
        token = "%s-%d" % (self.environ.get("SLURM_STEP_ID", "b"), os.getpid())
        name = self.container_name(token, self.node)
        interactive = ["--interactive"] + (["--tty"] if sys.stdin.isatty() and sys.stdout.isatty() else [])
        argv = [self.docker, "run"] + interactive + run_options(spec, name, gpu_opts, env) + [image] + self.args.command
        self.containers.append(name)
        self.trap()
        self.ensure_image(image, spec["pull"])
        proc = subprocess.Popen(argv)
        self.children.append(proc)
        return proc.wait()

    # -- the launcher: a container per node, sshd in each, the command in the first --
    def launch(self, image):
        nodes = run([self.config["scontrol"], "show", "hostnames", self.environ.get("SLURM_JOB_NODELIST", "")],
                    capture_output=True, text=True).stdout.split()
        if not nodes:
            raise UsageError("cannot list the job's nodes (SLURM_JOB_NODELIST=%r)"
                             % self.environ.get("SLURM_JOB_NODELIST"))
        use_ssh = self.args.ssh if self.args.ssh is not None else len(nodes) > 1
        if not use_ssh:
            if len(nodes) > 1:
                raise UsageError("--no-ssh needs a one-node job (this one has %d nodes)" % len(nodes))
            return self.direct(image, in_step=False)
        if self.node not in nodes:
            # An salloc shell on a login node: continue on the job's first node.
            argv = [self.config["srun"], "--nodes=1", "--ntasks=1", "--nodelist=%s" % nodes[0], "--overlap",
                    "--kill-on-bad-exit=1",
                    os.path.realpath(sys.argv[0]), "--_launcher"] + sys.argv[1:]
            os.execvp(argv[0], argv)
        if not self.args.command:
            raise UsageError("no command given")
        if self.logical:
            # Where the job's command runs, so no variant fitting this node fails here, with the reasons.
            image = self.resolve(self.logical, node_image=True)
        nodes = [self.node] + [n for n in nodes if n != self.node]
        slots = expand_tasks_per_node(self.environ.get("SLURM_TASKS_PER_NODE"), len(nodes))
        port = self.args.sshd_port or ssh_port(self.uid, self.config["ssh_port_base"], self.config["ssh_port_span"])
        token = str(os.getpid())
        base = os.path.expanduser(self.config["state_dir"].replace("~", self.home, 1))
        state = os.path.join(base, "%s-%s" % (self.job_id, token))
        self.trap()
        try:
            os.makedirs(base, mode=0o700, exist_ok=True)
            os.makedirs(os.path.join(state, "ready"), mode=0o700)
            spec = self.spec(image, state)
            spec.update(port=port, token=token, sshd=self.config["sshd"])
            self.write_state(state, spec, nodes, slots, port)
            self.make_keys(state, image, spec)
            step = [self.config["srun"], "--nodes=%d" % len(nodes), "--ntasks=%d" % len(nodes),
                    "--ntasks-per-node=1", "--overlap", "--kill-on-bad-exit=1", "--job-name=srun-docker",
                    "--nodelist=%s" % ",".join(nodes), os.path.realpath(sys.argv[0]),
                    "--_node", os.path.join(state, "spec.json"), "-"]
            daemons = subprocess.Popen(step, stdin=subprocess.DEVNULL)
            self.children.append(daemons)
            self.wait_ready(state, nodes, daemons)
            env = container_environment(self.environ, self.config, spec["env"], {})
            env.update(mpi_environment(state, nodes, slots))
            env["SRUN_DOCKER_JOB_ID"] = self.job_id
            name = self.container_name(token, self.node)
            tty = ["--tty"] if sys.stdin.isatty() and sys.stdout.isatty() else []
            argv = ([self.docker, "exec", "--interactive"] + tty
                    + ["--user=%d:%d" % (self.uid, self.gid), "--workdir=%s" % self.workdir]
                    + ["--env=%s=%s" % item for item in sorted(env.items())] + [name] + self.args.command)
            command = subprocess.Popen(argv)
            self.children.append(command)
            return command.wait()
        finally:
            self.stop_daemons(state)
            shutil.rmtree(state, ignore_errors=True)

    def write_state(self, state, spec, nodes, slots, port):
        def write(name, text, mode=0o600):
            path = os.path.join(state, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
        write("spec.json", json.dumps(spec, indent=1, sort_keys=True) + "\n")
        write("sshd_config", sshd_config(state, port, self.user))
        write("ssh_config", ssh_config(state, port, self.user))
        write("hostfile", "".join("%s slots=%d\n" % pair for pair in zip(nodes, slots)))

    def make_keys(self, state, image, spec):
        """A user key and a host key for this job only: ssh-keygen here, else the image's own."""
        quoted = shlex.quote(state)
        script = (f"ssh-keygen -q -t ed25519 -N '' -C srun-docker-job -f {quoted}/id && "
                  f"ssh-keygen -q -t ed25519 -N '' -C srun-docker-host -f {quoted}/host_key")
        if shutil.which("ssh-keygen"):
            result = run(["sh", "-c", script], capture_output=True, text=True)
        else:
            self.ensure_image(image, spec["pull"])
            result = run([self.docker, "run", "--rm", "--pull=never", "--network=none",
                          "--user=%d:%d" % (self.uid, self.gid), "--volume=%s:%s" % (state, state),
                          *IDENTITY_FILES, "--entrypoint=sh", image, "-c", script], capture_output=True, text=True)
        if result.returncode != 0:
            raise UsageError("cannot make the job's ssh keys: %s" % (result.stderr or result.stdout).strip())
        with open(os.path.join(state, "host_key.pub")) as handle:
            host_key = handle.read().split()
        with open(os.path.join(state, "known_hosts"), "w") as handle:
            handle.write("%s %s %s\n" % (HOST_KEY_ALIAS, host_key[0], host_key[1]))

    def wait_ready(self, state, nodes, daemons):
        deadline = time.monotonic() + float(self.config["ready_timeout"])
        ready_dir = os.path.join(state, "ready")
        while True:
            ready = set(os.listdir(ready_dir))
            failed = sorted(name for name in ready if name.endswith(".failed"))
            if failed:
                reasons = []
                for name in failed:
                    with open(os.path.join(ready_dir, name)) as handle:
                        reasons.append("%s: %s" % (name[:-len(".failed")], handle.read().strip()))
                raise UsageError("the job container did not start on %s" % "; ".join(reasons))
            if all(node in ready for node in nodes):
                return
            if daemons.poll() is not None:
                raise UsageError("the containers' job step ended (exit %s) before every node was ready (missing: %s)"
                                 % (daemons.returncode, ", ".join(n for n in nodes if n not in ready)))
            if time.monotonic() > deadline:
                raise UsageError("not every node's container was ready after %s s (missing: %s)"
                                 % (self.config["ready_timeout"], ", ".join(n for n in nodes if n not in ready)))
            time.sleep(0.2)

    def stop_daemons(self, state=None):
        if state and os.path.isdir(state):
            with open(os.path.join(state, "stop"), "w") as handle:
                handle.write("stop\n")
            deadline = time.monotonic() + float(self.config["stop_timeout"])
            for child in self.children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    break
        for child in reversed(self.children):
            if child.poll() is None:
                try:
                    child.send_signal(signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.monotonic() + float(self.config["stop_timeout"])
        for child in self.children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()

    # -- one node of the launcher's step: the container with sshd, until the step ends --
    def node_daemon(self, spec_path):
        with open(spec_path) as handle:
            spec = json.load(handle)
        state = spec["state"]
        ready = os.path.join(state, "ready", self.node)
        name = self.container_name(spec["token"], self.node)
        self.trap()
        try:
            # Each node its own variant under the same node image name; one no variant fits fails with the reasons.
            self.logical = logical_image(spec.get("logical"), self.config.get("node_images") or {})
            if self.logical:
                spec["image"] = self.resolve(self.logical, node_image=True)
            gpu_opts, gpu_env = self.gpu(in_step=True)
            env = container_environment(self.environ, self.config, spec["env"], gpu_env)
            argv = ([self.docker, "run", "--detach"] + run_options(spec, name, gpu_opts, env)
                    + ["--entrypoint=%s" % spec["sshd"], spec["image"], "-D", "-e", "-f", "%s/sshd_config" % state])
            if self.listening(spec["port"]):
                raise UsageError("port %d is in use on %s already (another %s job of yours on this node?); "
                                 "give this one another with --sshd-port" % (spec["port"], self.node, PROG))
            self.containers.append(name)
            self.ensure_image(spec["image"], spec["pull"])
            started = run(argv, capture_output=True, text=True)
            if started.returncode != 0:
                raise UsageError((started.stderr or started.stdout).strip() or "docker run failed")
            deadline = time.monotonic() + float(self.config["ready_timeout"])
            while not (self.listening(spec["port"]) and self.running(name)):
                if not self.running(name):
                    logs = run([self.docker, "logs", name], capture_output=True, text=True)
                    raise UsageError("sshd ended: %s" % (logs.stderr or logs.stdout).strip()[-300:])
                if time.monotonic() > deadline:
                    raise UsageError("sshd did not listen on port %d" % spec["port"])
                time.sleep(0.1)
            with open(ready, "w") as handle:
                handle.write("%s\n" % name)
            # Until the launcher says stop (or the container ends): then the container goes, and this task
            # ends normally, which a signal to srun would not give (srun kills the step's tasks).
            stop = os.path.join(state, "stop")
            waiter = subprocess.Popen([self.docker, "wait", name], stdout=subprocess.DEVNULL)
            self.children.append(waiter)
            while not os.path.exists(stop):
                if waiter.poll() is not None:
                    return 1
                time.sleep(0.5)
            return 0
        except UsageError as exc:
            with open(ready + ".failed", "w") as handle:
                handle.write("%s\n" % exc)
            raise

    def running(self, name):
        result = run([self.docker, "container", "inspect", name], capture_output=True, text=True)
        if result.returncode != 0:
            return False
        try:
            return bool(json.loads(result.stdout)[0]["State"]["Running"])
        except (ValueError, LookupError, TypeError):
            return False

    @staticmethod
    def listening(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    def cleanup(self):
        for name in self.containers:
            self.remove(name)
        for child in self.children:
            if child.poll() is None:
                child.terminate()


def main(argv=None):
    job = None
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        config = load_config()
        job = Job(args, config, dict(os.environ))
        if args._node:
            return job.node_daemon(args._node)
        if not args.image:
            raise UsageError("no image given (%s --help)" % PROG)
        job.logical = logical_image(args.image, config.get("node_images") or {})
        image = args.image if job.logical else qualify_image(
            check_image(args.image), config.get("registry"), config.get("allowed_registries") or [])
        in_step = os.environ.get("SLURM_STEP_ID", "") not in ("", "batch", "interactive", "extern")
        if in_step and not args._launcher:
            return job.direct(image, in_step=True)
        return job.launch(image)
    except UsageError as exc:
        log(str(exc))
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    finally:
        if job is not None:
            job.cleanup()
