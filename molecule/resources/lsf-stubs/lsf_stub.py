#!/usr/bin/python3
# Copyright: contributors to hpc.gpu_containers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recording stand-in for the LSF commands, for the test bed only.

Installed under several names (lsadmin, badmin, lshosts, lsid, bsub and the
Docker driver scripts of LSF_SERVERDIR); the name it is called by picks the
behaviour. Every call is appended as one JSON line to
/var/log/lsf-stub/calls.jsonl (timestamp, command, argv, cwd, user, host).

Switches (files) for failure tests:
  /etc/lsf-stub/fail-ckconfig           both ckconfig -v fail with its text
  /etc/lsf-stub/fail-lsadmin-ckconfig   only lsadmin ckconfig fails
  /etc/lsf-stub/fail-badmin-ckconfig    only badmin ckconfig fails
Without a switch, "ckconfig" still checks the structure LSF itself rejects:
Begin/End pairs and, in table sections, one value per header column.

Cluster state, as mbatchd keeps it (LSB_SHAREDIR/<cluster>/lsf-stub, shared by every
node where LSF_TOP is shared; LSF_STUB_CLUSTER_DIR overrides it):
  * hosts: "badmin hclose [-C comment] [host ...]" closes a host (closed_Adm, with the
    comment), "badmin hopen" opens it; "bhosts [-w|-l] [host ...]" shows status, job
    counts and the ADMIN ACTION COMMENT;
  * jobs: every job gets a record (PEND, RUN, DONE or EXIT; its execution host is the
    node it runs on) that "bjobs [-u user|all] [-w] [-m host] [-r|-p|-d|-a]" lists;
  * a job whose host is closed waits for dispatch until the host is opened, as LSF
    dispatches nothing to a closed host.

Jobs run on the node where bsub is called, as LSF runs them on the execution host.
"bsub -I" holds the terminal until the job ends; a batch job (no -I) runs in the
background, its output going to -o/-oo (else the job's output file in the cluster
state), and "job-start" / "job-finish" entries in the log mark its start and end:
  * -gpu is refused unless lsf.conf sets LSB_GPU_NEW_SYNTAX to Y or extend, as IBM documents
    ("Enables the bsub -gpu option"; LSF leaves it off); the message is the stub's own;
  * -gpu "num=N" allocates N free GPUs of this host (the host's GPUs are the
    test bed's stand-in NVML values, /etc/nvidia-standin/nvml.conf; busy ones
    are recorded under the state directory while a job runs) and exports
    CUDA_VISIBLE_DEVICES with their indices, as LSF does for GPU jobs; with GPU enforcement
    (LSB_RESOURCE_ENFORCE naming gpu) renumbered from 0, the host's indices in
    CUDA_VISIBLE_DEVICES_ORIG (the cgroup itself is not modelled);
  * a profile with CONTAINER runs the job in a container: through the
    EXEC_DRIVER's starter[] when the profile names one (the starter execs
    LSF_SERVERDIR/docker-starter.py, which this stub provides), and the job's
    environment goes into the container, as LSF's Docker driver does;
  * the EXEC_DRIVER scripts get the job submission user's environment only where lsf.conf
    sets LSB_DOCKER_PASS_ENV=Y, as IBM documents ("By default ... they do not inherit the
    job submission user's environment"). Without it the starter gets the stub's less kind
    reading: none of the job's variables (not even LSF's GPU allocation), only PATH, the
    user's names, LSF's directories and LSB_JOBID; what the starter passes on is what
    the container gets.
"badmin hrestart -f all" and "lsadmin resrestart -f all" print LSF's per-host lines;
/etc/lsf-stub/fail-badmin-hrestart (or fail-lsadmin-resrestart) makes them fail with its text.
"""

import datetime
import fcntl
import getpass
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time

LOG_DIR = os.environ.get("LSF_STUB_LOG_DIR", "/var/log/lsf-stub")
SWITCH_DIR = os.environ.get("LSF_STUB_SWITCH_DIR", "/etc/lsf-stub")
STATE_DIR = os.environ.get("LSF_STUB_STATE_DIR", "/var/lib/lsf-stub")
CLUSTER_DIR = os.environ.get("LSF_STUB_CLUSTER_DIR")
DEFAULT_ENVDIR = "/usr/share/lsf/conf"
NVML_VALUES = os.environ.get("NVIDIA_STANDIN_NVML_CONF", "/etc/nvidia-standin/nvml.conf")
# Job environment the Docker driver does not carry into the container (host-only or the stub's own).
HOST_ONLY_ENV = frozenset(("PATH", "HOSTNAME", "PWD", "OLDPWD", "SHLVL", "_", "TERM", "SHELL", "MAIL",
                           "LS_COLORS", "DISPLAY", "XDG_RUNTIME_DIR", "XDG_SESSION_ID", "SUDO_COMMAND",
                           "SUDO_USER", "SUDO_UID", "SUDO_GID"))
DOCKER_RUN_ENV = "LSF_STUB_DOCKER_RUN"
# What the EXEC_DRIVER starter gets of the job's environment without LSB_DOCKER_PASS_ENV=Y (and the stub's own
# LSF_STUB_* channels).
DRIVER_ONLY_ENV = frozenset(("PATH", "HOME", "USER", "LOGNAME", "LANG", "LSF_ENVDIR", "LSF_SERVERDIR", "LSF_BINDIR",
                             "LSB_JOBID"))
IMAGE_VARIABLE = ("$LSB_CONTAINER_IMAGE", "${LSB_CONTAINER_IMAGE}")
# Set for the background process that runs a batch job: the job's id and how to run it.
JOB_RUNNER_ENV = "LSF_STUB_BATCH_JOB"
ADMIN_CLOSED = "closed_Adm"
# Jobs that hold processes on their execution host.
STARTED = ("RUN", "SSUSP", "USUSP")
UNFINISHED = ("PEND", "PSUSP", "RUN", "SSUSP", "USUSP")
DISPATCH_POLL = 1.0
VERSION_BANNER = "IBM Spectrum LSF Standard 10.1.0.13, Jan 17 2023"


def emit(text="", file=None):
    """A CLI prints: one line to stdout (or the given stream)."""
    (file or sys.stdout).write(text + "\n")


def open_shared(path, flags):
    """Open (creating) a file every user can write: LSF commands run as anyone.

    An existing file is opened without O_CREAT: in a sticky world-writable directory
    the kernel (fs.protected_regular) refuses O_CREAT on another user's file, even to root.
    """
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        return os.open(path, flags)
    os.fchmod(fd, 0o666)               # the creator's umask must not lock others out
    return fd


def record(command, argv, extra=None):
    entry = {
        "ts": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "cmd": command,
        "argv": argv,
        "cwd": os.getcwd(),
        "user": getpass.getuser(),
        "uid": os.getuid(),
        "host": socket.gethostname(),
        "lsf_envdir": os.environ.get("LSF_ENVDIR"),
    }
    if extra:
        entry.update(extra)
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    os.makedirs(LOG_DIR, exist_ok=True)
    # One write() on an O_APPEND descriptor: concurrent callers never interleave.
    fd = open_shared(os.path.join(LOG_DIR, "calls.jsonl"), os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


# --------------------------------------------------------------------------
# Reading the configuration
# --------------------------------------------------------------------------

def envdir():
    return os.environ.get("LSF_ENVDIR") or DEFAULT_ENVDIR


def read_lsf_conf():
    values = {}
    with open(os.path.join(envdir(), "lsf.conf"), encoding="utf-8") as handle:
        for line in handle:
            match = re.match(r'^\s*([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|[^\s#]*)', line)
            if match:
                values[match.group(1)] = match.group(2).strip('"')
    return values


def confdir(conf):
    return conf.get("LSF_CONFDIR", envdir())


def logical_lines(path):
    """(line number, text) with comments cut, continuations joined, blanks dropped."""
    out = []
    pending, start = "", 0
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, 1):
            text = raw.rstrip("\n")
            if not pending:
                start = number
            if text.rstrip().endswith("\\"):
                pending += text.rstrip()[:-1] + " "
                continue
            text = pending + text
            pending = ""
            text = re.sub(r"#.*", "", text).strip()
            if text:
                out.append((start, text))
    return out


def tokens(text):
    """Table tokens: bare words, or (...) groups, which count as one token."""
    result, i = [], 0
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text[i] == "(":
            end = text.find(")", i)
            if end < 0:
                raise ValueError("unbalanced parenthesis")
            result.append(text[i + 1:end].strip())
            i = end + 1
        else:
            match = re.match(r"[^\s(]+", text[i:])
            result.append(match.group(0))
            i += len(match.group(0))
    return result


def sections(path):
    """{name: [(line, [(line, text), ...]), ...]}; raises ValueError("path(line): msg")."""
    found = {}
    current, body, begin_line = None, [], 0
    for number, text in logical_lines(path):
        word = text.split()
        if word[0].lower() == "begin" and len(word) > 1:
            if current is not None:
                raise ValueError("%s(%d): Begin %s inside section %s" % (path, number, word[1], current))
            current, body, begin_line = word[1], [], number
        elif word[0].lower() == "end":
            if current is None:
                raise ValueError("%s(%d): End without Begin" % (path, number))
            found.setdefault(current.lower(), []).append((begin_line, body))
            current = None
        elif current is not None:
            body.append((number, text))
    if current is not None:
        raise ValueError("%s(%d): section %s has no End" % (path, begin_line, current))
    return found


def check_table(path, name, body):
    if not body:
        return []
    if "=" in body[0][1]:
        return []                      # KEY = value section
    header_line, header = body[0]
    columns = tokens(header)
    errors = []
    for number, text in body[1:]:
        try:
            values = tokens(text)
        except ValueError as exc:
            errors.append("%s(%d): %s" % (path, number, exc))
            continue
        if len(values) != len(columns):
            errors.append(
                "%s(%d): values do not match keys for %s section (%d values, %d keys in line %d); ignoring line"
                % (path, number, name, len(values), len(columns), header_line))
    return errors


def cluster_name(conf):
    shared = os.path.join(confdir(conf), "lsf.shared")
    for _begin, body in sections(shared).get("cluster", []):
        for _number, text in body[1:]:
            return text.split()[0]
    raise ValueError("%s: no cluster name in the Cluster section" % shared)


def host_rows(conf):
    path = os.path.join(confdir(conf), "lsf.cluster." + cluster_name(conf))
    rows = []
    for _begin, body in sections(path).get("host", []):
        columns = [c.lower() for c in tokens(body[0][1])]
        for _number, text in body[1:]:
            values = tokens(text)
            if len(values) == len(columns):
                rows.append(dict(zip(columns, values)))
    return rows


def lim_errors(conf):
    errors = []
    shared = os.path.join(confdir(conf), "lsf.shared")
    try:
        for name, found in sections(shared).items():
            for _begin, body in found:
                errors += check_table(shared, name, body)
        cluster_file = os.path.join(confdir(conf), "lsf.cluster." + cluster_name(conf))
        found = sections(cluster_file)
        if "host" not in found:
            errors.append("%s: Host section missing" % cluster_file)
        for name, blocks in found.items():
            for _begin, body in blocks:
                errors += check_table(cluster_file, name, body)
    except (OSError, ValueError) as exc:
        errors.append(str(exc))
    conf_path = os.path.join(envdir(), "lsf.conf")
    with open(conf_path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if not re.match(r'^[A-Za-z_][A-Za-z0-9_]*=("[^"]*"|[^\s"]*)\s*(#.*)?$', text):
                errors.append("%s(%d): syntax error in lsf.conf" % (conf_path, number))
    return errors


def batch_errors(conf):
    errors = []
    try:
        directory = os.path.join(conf.get("LSB_CONFDIR", os.path.join(confdir(conf), "lsbatch")),
                                 cluster_name(conf), "configdir")
        path = os.path.join(directory, "lsb.applications")
        if os.path.exists(path):
            for begin, body in sections(path).get("application", []):
                keys = [text.split("=", 1)[0].strip().upper() for _n, text in body if "=" in text]
                if "NAME" not in keys:
                    errors.append("%s(%d): Application section has no NAME; ignoring" % (path, begin))
                for number, text in body:
                    if "=" not in text:
                        errors.append("%s(%d): missing '=' in Application section" % (path, number))
                    elif text.count("[") != text.count("]") or text.count("(") != text.count(")"):
                        errors.append("%s(%d): unbalanced brackets in %s" % (path, number, text.split("=")[0].strip()))
    except (OSError, ValueError) as exc:
        errors.append(str(exc))
    return errors


# --------------------------------------------------------------------------
# Cluster state (mbatchd's view): host states and the job table
# --------------------------------------------------------------------------
def shared_dir(path):
    """Create a directory every user can write: LSF commands run as anyone, and each replaces
    the others' records (not sticky: a rename over another user's file must work)."""
    try:
        os.makedirs(path)
    except FileExistsError:
        return path
    try:
        os.chmod(path, 0o777)
    except OSError:
        pass
    return path


def cluster_dir(conf):
    """LSB_SHAREDIR/<cluster>/lsf-stub where LSB_SHAREDIR exists (shared where LSF_TOP is), else per node."""
    if CLUSTER_DIR:
        path = CLUSTER_DIR
    else:
        share = conf.get("LSB_SHAREDIR")
        if share and os.path.isdir(share):
            path = os.path.join(share, cluster_name(conf), "lsf-stub")
        else:
            path = os.path.join(STATE_DIR, "cluster")
    for sub in ("", "jobs", "output"):
        shared_dir(os.path.join(path, sub))
    return path


class ClusterLock:
    """One writer at a time for host states and job records (every node, where the directory is shared)."""

    def __init__(self, conf):
        self.path = os.path.join(cluster_dir(conf), "lock")

    def __enter__(self):
        self.fd = open_shared(self.path, os.O_RDWR)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def write_json(path, data):
    """Replace a JSON file in one rename, readable and replaceable by every user."""
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = open_shared(tmp, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, json.dumps(data, sort_keys=True).encode())
    finally:
        os.close(fd)
    os.rename(tmp, path)


def read_json(path, default):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return default


def local_host():
    return socket.gethostname().split(".")[0]


def known_hosts(conf):
    return [row["hostname"] for row in host_rows(conf)]


def host_states(conf):
    """{host: {status, comment, user, time}} of the hosts an administrator opened or closed."""
    return read_json(os.path.join(cluster_dir(conf), "hosts.json"), {})


def host_status(conf, host):
    return host_states(conf).get(host, {}).get("status", "ok")


def set_host_state(conf, host, status, comment):
    with ClusterLock(conf):
        states = host_states(conf)
        states[host] = {"status": status, "comment": comment, "user": getpass.getuser(),
                        "time": datetime.datetime.now(datetime.timezone.utc).isoformat()}
        write_json(os.path.join(cluster_dir(conf), "hosts.json"), states)


def job_file(conf, job):
    return os.path.join(cluster_dir(conf), "jobs", "%d.json" % job)


def save_job(conf, record_):
    with ClusterLock(conf):
        write_json(job_file(conf, record_["job"]), record_)


def update_job(conf, job, **changes):
    with ClusterLock(conf):
        current = read_json(job_file(conf, job), {"job": job})
        current.update(changes)
        write_json(job_file(conf, job), current)


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def load_jobs(conf):
    """Every job record, oldest first; a started job whose process on this node is gone counts as EXIT."""
    jobs = []
    directory = os.path.join(cluster_dir(conf), "jobs")
    for name in os.listdir(directory):
        if not name.endswith(".json"):
            continue
        job = read_json(os.path.join(directory, name), None)
        if not job or "stat" not in job:
            continue
        if (job["stat"] in STARTED and job.get("exec_host") == local_host() and job.get("pid")
                and not process_alive(job["pid"])):
            job["stat"] = "EXIT"
        jobs.append(job)
    return sorted(jobs, key=lambda job: job["job"])


def wait_for_dispatch(conf, host):
    """LSF dispatches nothing to a closed host: hold the job until the host is open."""
    while host_status(conf, host) == ADMIN_CLOSED:
        time.sleep(DISPATCH_POLL)


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------
def switch_text(*names):
    for name in names:
        path = os.path.join(SWITCH_DIR, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                return handle.read().strip() or "configuration error"
    return None


def ckconfig(tool, conf):
    emit("\nChecking configuration files ...\n")
    forced = switch_text("fail-%s-ckconfig" % tool, "fail-ckconfig")
    errors = [forced] if forced else (lim_errors(conf) if tool == "lsadmin" else batch_errors(conf))
    if errors:
        for error in errors:
            emit(error)
        emit("---------------------------------------------------------")
        emit("There are fatal errors.\n")
        emit("Do you want to see detailed messages? [y/n] n")
        return 255
    emit("No errors found.\n")
    return 0


def cmd_lsadmin(argv, conf):
    sub = argv[0] if argv else ""
    if sub == "ckconfig":
        return ckconfig("lsadmin", conf)
    if sub in ("reconfig", "limrestart"):
        status = ckconfig("lsadmin", conf)
        if status:
            return status
        names = [row["hostname"] for row in host_rows(conf)]
        for name in names:
            emit("Restart LIM on <%s> ...... done" % name)
        return 0
    if sub == "resrestart":
        return host_restart("lsadmin", sub, "RES", conf)
    if sub in ("limstartup", "resstartup", "limshutdown"):
        return 0
    emit("lsadmin: unknown command %s" % sub, file=sys.stderr)
    return 1


def cmd_badmin(argv, conf):
    sub = argv[0] if argv else ""
    if sub == "ckconfig":
        return ckconfig("badmin", conf)
    if sub in ("reconfig", "mbdrestart"):
        status = ckconfig("badmin", conf)
        if status:
            return status
        emit("Reconfiguration initiated" if sub == "reconfig" else "MBD restart initiated")
        return 0
    if sub in ("hclose", "hopen"):
        return host_control(sub, argv[1:], conf)
    if sub == "hrestart":
        return host_restart("badmin", sub, "slave batch daemon", conf)
    if sub in ("hstartup", "hshutdown"):
        return 0
    emit("badmin: unknown command %s" % sub, file=sys.stderr)
    return 1


def host_restart(tool, sub, daemon, conf):
    """badmin hrestart / lsadmin resrestart [-f] all: one line per host of the cluster file, as LSF prints them."""
    forced = switch_text("fail-%s-%s" % (tool, sub))
    if forced:
        emit(forced, file=sys.stderr)
        return 255
    for row in host_rows(conf):
        emit("Restart %s on <%s> ...... done" % (daemon, row["hostname"]))
    return 0


def driver_env(conf, env):
    """The environment LSF starts an EXEC_DRIVER script with: the job's only with LSB_DOCKER_PASS_ENV=Y."""
    if conf.get("LSB_DOCKER_PASS_ENV", "N").strip().strip('"').lower() == "y":
        return dict(env)
    return dict((name, value) for name, value in env.items()
                if name in DRIVER_ONLY_ENV or name.startswith("LSF_STUB_"))


def host_control(sub, args, conf):
    """badmin hclose|hopen [-C comment] [-i] [host ... | all]: no host is the local host."""
    comment, names, i = "", [], 0
    while i < len(args):
        if args[i] == "-C" and i + 1 < len(args):
            comment, i = args[i + 1], i + 2
        elif args[i].startswith("-"):
            i += 1
        else:
            names.append(args[i])
            i += 1
    known = known_hosts(conf)
    names = known if names == ["all"] else (names or [local_host()])
    status = 0
    for name in names:
        if name not in known:
            emit("%s: Bad host name, host group name or cluster name" % name, file=sys.stderr)
            status = 255
            continue
        set_host_state(conf, name, ADMIN_CLOSED if sub == "hclose" else "ok", comment)
        emit("%s <%s> ...... done" % ("Close" if sub == "hclose" else "Open", name))
    return status


def machine():
    arch = os.uname().machine
    if arch == "ppc64le":
        return "LINUXPPC64LE", "POWER9", 25.0
    if arch == "aarch64":
        return "LINUX_ARM64", "ARM8l", 6.0
    return "X86_64", "Intel_E5", 12.5


def memory():
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return "%dG" % (int(line.split()[1]) // (1024 * 1024))
    except OSError:
        pass
    return "-"


def selected_resources(argv):
    """The resource names of ``-R "select[a && b]"`` (or ``-R a``): lshosts lists hosts that have all."""
    if "-R" not in argv or argv.index("-R") + 1 >= len(argv):
        return []
    text = argv[argv.index("-R") + 1]
    match = re.search(r"select\[([^\]]*)\]", text)
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", match.group(1) if match else text)


def cmd_lshosts(argv, conf):
    required = selected_resources(argv)
    wanted = [a for i, a in enumerate(argv) if not a.startswith("-") and (i == 0 or argv[i - 1] != "-R")]
    auto_type, auto_model, cpuf = machine()
    emit("%-12s %-13s %-9s %5s %5s %7s %7s %6s %s" % (
        "HOST_NAME", "type", "model", "cpuf", "ncpus", "maxmem", "maxswp", "server", "RESOURCES"))
    for row in host_rows(conf):
        name = row.get("hostname")
        if wanted and name not in wanted:
            continue
        host_type = row.get("type", "!") if row.get("type", "!") not in ("!", "") else auto_type
        model = row.get("model", "!") if row.get("model", "!") not in ("!", "") else auto_model
        server = "Yes" if row.get("server", "1") == "1" else "No"
        resources = row.get("resources", "")
        resources = "" if resources in ("-",) else resources
        if any(name not in resources.strip("()").split() for name in required):
            continue
        emit("%-12s %-13s %-9s %5.1f %5d %7s %7s %6s (%s)" % (
            name, host_type, model, cpuf, os.cpu_count() or 1, memory(), "-", server, resources))
    return 0


def cmd_lsid(argv, conf):
    emit(VERSION_BANNER)
    emit("Copyright International Business Machines Corp. 1992, 2016.")
    emit("US Government Users Restricted Rights - Use, duplication or disclosure "
         "restricted by GSA ADP Schedule Contract with IBM Corp.\n")
    emit("My cluster name is %s" % cluster_name(conf))
    masters = conf.get("LSF_MASTER_LIST", "").split()
    emit("My master name is %s" % (masters[0] if masters else socket.gethostname()))
    return 0


# bsub options that take a value (the rest are flags).
BSUB_VALUE_OPTIONS = {
    "-app", "-q", "-J", "-o", "-oo", "-e", "-eo", "-n", "-R", "-gpu", "-m", "-P", "-G", "-W", "-M",
    "-env", "-cwd", "-u", "-w", "-E", "-Ep", "-sp", "-c", "-i", "-is", "-L", "-U", "-g", "-sla",
}


def parse_bsub(argv):
    options, i = {}, 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            break
        if arg in BSUB_VALUE_OPTIONS and i + 1 < len(argv):
            options[arg] = argv[i + 1]
            i += 2
        else:
            options[arg] = True
            i += 1
    return options, argv[i:]


def application(conf, name):
    """The KEY = value settings of one lsb.applications profile (upper-case keys)."""
    directory = os.path.join(conf.get("LSB_CONFDIR", os.path.join(confdir(conf), "lsbatch")),
                             cluster_name(conf), "configdir")
    path = os.path.join(directory, "lsb.applications")
    for _begin, body in sections(path).get("application", []):
        settings = {}
        for _number, text in body:
            if "=" in text:
                key, value = text.split("=", 1)
                settings[key.strip().upper()] = value.strip()
        if settings.get("NAME") == name:
            return settings
    return None


def bracket_argument(value, keyword):
    """The text inside keyword(...) of a CONTAINER value, with nesting."""
    match = re.search(r"(?<![A-Za-z_])" + re.escape(keyword) + r"\(", value)
    if not match:
        return None
    depth, start = 1, match.end()
    for index in range(start, len(value)):
        if value[index] == "(":
            depth += 1
        elif value[index] == ")":
            depth -= 1
            if depth == 0:
                return value[start:index]
    return None


def container_command(container, command, env=None):
    """docker run argv for CONTAINER = docker[image(..) options(..)], as LSF's driver would.

    The job environment (``env``) goes into the container by name (``--env NAME``), as LSF's
    Docker driver carries the job's environment into the job container.
    """
    runtime = container.split("[", 1)[0].strip()
    if runtime not in ("docker", "nvidia-docker"):
        raise ValueError("runtime %s is not supported by the stub" % runtime)
    image = bracket_argument(container, "image")
    options = bracket_argument(container, "options") or ""
    words = []
    for word in shlex.split(options):
        if word.startswith("@"):
            # An options script: its output is spliced in as more options.
            words += shlex.split(subprocess.run([word[1:]], check=True, capture_output=True, text=True).stdout)
        else:
            words.append(word)
    passed = ["--env=%s" % name for name in sorted(env or {}) if name not in HOST_ONLY_ENV
              and not name.startswith("LSF_STUB_")]
    return ["docker", "run"] + passed + words + [image] + command


def next_job_id(conf):
    """Job ids are unique in the cluster, as mbatchd hands them out."""
    path = os.path.join(cluster_dir(conf), "jobid")
    fd = open_shared(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        current = int(os.read(fd, 32) or b"100")
        os.lseek(fd, 0, 0)
        os.ftruncate(fd, 0)
        os.write(fd, str(current + 1).encode())
        return current + 1
    finally:
        os.close(fd)


def host_gpus():
    """Indices of this host's GPUs, as LSF's GPU auto-configuration finds them through NVML."""
    count = 0
    try:
        with open(NVML_VALUES, encoding="utf-8") as handle:
            for line in handle:
                key, _sep, value = line.partition("=")
                if key.strip() == "gpu.count":
                    count = int(value.split("#")[0].strip())
    except OSError:
        return []
    return list(range(count))


def gpu_request(value):
    """num=N of a -gpu requirement (LSF's default is 1)."""
    if value in (None, "-"):
        return 1
    match = re.search(r"(?:^|:)num=(\d+)", value)
    return int(match.group(1)) if match else 1


def allocate_gpus(job, count):
    """Take ``count`` free GPUs of this host for ``job`` (lowest indices first, as LSF packs them)."""
    directory = os.path.join(STATE_DIR, "gpus")
    os.makedirs(directory, exist_ok=True)
    lock = open_shared(os.path.join(STATE_DIR, "gpus.lock"), os.O_RDWR)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        busy = set()
        for name in os.listdir(directory):
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                busy.update(json.load(handle))
        free = [index for index in host_gpus() if index not in busy]
        if len(free) < count:
            raise ValueError("job <%d> asks for %d GPU(s); %s has %d free of %d" % (
                job, count, socket.gethostname(), len(free), len(host_gpus())))
        taken = free[:count]
        fd = open_shared(os.path.join(directory, str(job)), os.O_WRONLY | os.O_TRUNC)
        os.write(fd, json.dumps(taken).encode())
        os.close(fd)
        return taken
    finally:
        os.close(lock)


def release_gpus(job):
    try:
        os.unlink(os.path.join(STATE_DIR, "gpus", str(job)))
    except OSError:
        pass


def bracket_clause(value, keyword):
    """The text inside keyword[...] of an EXEC_DRIVER value."""
    match = re.search(r"(?<![A-Za-z_])" + re.escape(keyword) + r"\[([^\]]*)\]", value or "")
    return match.group(1).strip() if match else None


def cmd_bsub(argv, conf):
    options, command = parse_bsub(argv)
    if not command:
        emit("bsub: no job command", file=sys.stderr)
        return 255
    if "-gpu" in options and conf.get("LSB_GPU_NEW_SYNTAX", "N").strip().strip('"').lower() not in ("y", "extend"):
        emit("bsub: the -gpu option needs LSB_GPU_NEW_SYNTAX=Y or extend in lsf.conf (it is %s). Job not submitted."
             % conf.get("LSB_GPU_NEW_SYNTAX", "not set"), file=sys.stderr)
        return 255
    interactive = any(flag in options for flag in ("-I", "-Is", "-Ip", "-K"))
    queue = options.get("-q", "interactive" if interactive else "normal")
    job = next_job_id(conf)
    env = dict(os.environ, LSB_JOBID=str(job), LSB_HOSTS=socket.gethostname(), LSB_QUEUE=queue)
    gpus = []
    # LSF sets the job's effective resource requirement for every job; bsub -gpu shows in it as ngpus_physical.
    env["LSB_EFFECTIVE_RSRCREQ"] = "select[type == local] order[r15s:pg]"
    if "-gpu" in options:
        gpus = allocate_gpus(job, gpu_request(options["-gpu"]))
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(index) for index in gpus)
        if "gpu" in conf.get("LSB_RESOURCE_ENFORCE", "").lower().split():
            # LSF's GPU enforcement: the job's cgroup holds only its GPUs, which it sees numbered from 0.
            env["CUDA_VISIBLE_DEVICES_ORIG"] = env["CUDA_VISIBLE_DEVICES"]
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(index) for index in range(len(gpus)))
        env["LSB_EFFECTIVE_RSRCREQ"] = "select[(ngpus>0) && (type == local)] order[r15s:pg] rusage[ngpus_physical=%d.00]" % len(gpus)
    run = command
    app_name = options.get("-app")
    starter = None
    if app_name:
        settings = application(conf, app_name)
        if settings is None:
            release_gpus(job)
            emit("%s: No such application. Job not submitted." % app_name, file=sys.stderr)
            return 255
        if settings.get("CONTAINER"):
            run = container_command(settings["CONTAINER"], command, env)
            starter = bracket_clause(settings.get("EXEC_DRIVER"), "starter")
    extra = {"job": job, "run": run, "queue": queue, "app": app_name, "gpus": gpus, "starter": starter}
    if not interactive:
        extra["batch"] = True
    record("bsub-job", argv, extra)
    host = local_host()
    save_job(conf, {"job": job, "user": getpass.getuser(), "stat": "PEND", "queue": queue, "from_host": host,
                    "exec_host": None, "job_name": options.get("-J") or " ".join(command), "app": app_name,
                    "interactive": interactive, "submit_time": time.time(), "pid": None})
    emit("Job <%d> is submitted to %squeue <%s>." % (job, "" if "-q" in options else "default ", queue))
    if not interactive:
        return submit_batch(conf, job, run, starter, env, options)
    emit("<<Waiting for dispatch ...>>")
    sys.stdout.flush()
    status = 255
    try:
        wait_for_dispatch(conf, host)
        update_job(conf, job, stat="RUN", exec_host=host, start_time=time.time(), pid=os.getpid())
        emit("<<Starting on %s>>" % socket.gethostname())
        sys.stdout.flush()
        if starter:
            # LSF runs the EXEC_DRIVER starter with the job's environment; it ends in
            # LSF_SERVERDIR/docker-starter.py, which starts the container.
            env[DOCKER_RUN_ENV] = json.dumps(run)
            status = subprocess.call([starter], env=driver_env(conf, env))
        else:
            status = subprocess.call(run, env=env)
        return status
    finally:
        release_gpus(job)
        update_job(conf, job, stat="DONE" if status == 0 else "EXIT", exit_code=status, end_time=time.time())


def submit_batch(conf, job, run, starter, env, options):
    """Start the batch job in the background, detached from bsub, and return at once."""
    output = options.get("-oo") or options.get("-o") or os.path.join(cluster_dir(conf), "output", "%d.out" % job)
    fd = open_shared(output, os.O_WRONLY | (os.O_TRUNC if "-oo" in options else os.O_APPEND))
    env[JOB_RUNNER_ENV] = json.dumps({"job": job, "run": run, "starter": starter})
    try:
        subprocess.Popen([sys.executable, os.path.realpath(__file__)], env=env, stdin=subprocess.DEVNULL,
                         stdout=fd, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    finally:
        os.close(fd)
    update_job(conf, job, output=output)
    return 0


def run_batch_job(conf):
    """The background side of a batch job: wait for dispatch, run it, record how it ended."""
    spec = json.loads(os.environ.pop(JOB_RUNNER_ENV))
    job, run, starter = spec["job"], spec["run"], spec["starter"]
    host = local_host()
    env = dict(os.environ)
    status = 255
    try:
        wait_for_dispatch(conf, host)
        update_job(conf, job, stat="RUN", exec_host=host, start_time=time.time(), pid=os.getpid())
        record("job-start", [], {"job": job})
        sys.stdout.flush()
        if starter:
            env[DOCKER_RUN_ENV] = json.dumps(run)
            status = subprocess.call([starter], env=driver_env(conf, env))
        else:
            status = subprocess.call(run, env=env)
    finally:
        release_gpus(job)
        update_job(conf, job, stat="DONE" if status == 0 else "EXIT", exit_code=status, end_time=time.time())
        record("job-finish", [], {"job": job, "exit_code": status})
    return 0


def host_jobs(conf, host, jobs=None):
    return [job for job in (load_jobs(conf) if jobs is None else jobs)
            if job.get("exec_host") == host and job["stat"] in STARTED]


def cmd_bhosts(argv, conf):
    """bhosts [-w] [-l] [host ...]: status, job counts and, with -l, the administrator's comment."""
    long_format = "-l" in argv
    wanted = [arg for arg in argv if not arg.startswith("-")]
    known = known_hosts(conf)
    for name in wanted:
        if name not in known:
            emit("%s: Bad host name, host group name or cluster name" % name, file=sys.stderr)
            return 255
    states = host_states(conf)
    jobs = load_jobs(conf)
    _type, _model, cpuf = machine()
    slots = os.cpu_count() or 1
    if not long_format:
        emit("%-18s %-15s %4s %6s %6s %6s %6s %6s %6s" % (
            "HOST_NAME", "STATUS", "JL/U", "MAX", "NJOBS", "RUN", "SSUSP", "USUSP", "RSV"))
    for name in wanted or known:
        state = states.get(name, {})
        status = state.get("status", "ok")
        started = host_jobs(conf, name, jobs)
        counts = dict((stat, len([job for job in started if job["stat"] == stat])) for stat in STARTED)
        if not long_format:
            emit("%-18s %-15s %4s %6d %6d %6d %6d %6d %6d" % (
                name, status, "-", slots, len(started), counts["RUN"], counts["SSUSP"], counts["USUSP"], 0))
            continue
        emit("HOST  %s" % name)
        emit("STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW")
        emit("%-14s %6.2f %5s %6d %6d %6d %6d %6d %6d      -" % (
            status, cpuf, "-", slots, len(started), counts["RUN"], counts["SSUSP"], counts["USUSP"], 0))
        emit("")
        emit(" CURRENT LOAD USED FOR SCHEDULING:")
        emit("              r15s   r1m  r15m    ut    pg    io   ls    it   tmp   swp   mem  slots")
        emit(" Total         0.0   0.0   0.0    0%%   0.0     0    0     0    0M    0M   %4s %6d" % (memory(), slots))
        emit(" Reserved      0.0   0.0   0.0    0%   0.0     0    0     0    0M    0M     0M      -")
        emit("")
        if state.get("comment"):
            emit(' ADMIN ACTION COMMENT: "%s"' % state["comment"])
        emit("")
    return 0


# bjobs options that take a value.
BJOBS_VALUE_OPTIONS = {"-u", "-m", "-q", "-J", "-P", "-g", "-app", "-G", "-sla", "-o"}


def cmd_bjobs(argv, conf):
    """bjobs [-u user|all] [-m host] [-q queue] [-w] [-r|-p|-d|-a] [-noheader] [jobid ...]."""
    options, ids, i = {}, [], 0
    while i < len(argv):
        arg = argv[i]
        if arg in BJOBS_VALUE_OPTIONS and i + 1 < len(argv):
            options[arg], i = argv[i + 1], i + 2
        elif arg.startswith("-"):
            options[arg], i = True, i + 1
        else:
            ids.append(int(arg))
            i += 1
    if "-a" in options:
        states, word = None, ""
    elif "-r" in options:
        states, word = ("RUN",), "running "
    elif "-p" in options:
        states, word = ("PEND", "PSUSP"), "pending "
    elif "-d" in options:
        states, word = ("DONE", "EXIT"), "done "
    else:
        states, word = UNFINISHED, "unfinished "
    user = options.get("-u", getpass.getuser())
    jobs = [job for job in load_jobs(conf)
            if (states is None or job["stat"] in states)
            and (user == "all" or job.get("user") == user)
            and ("-m" not in options or job.get("exec_host") == options["-m"])
            and ("-q" not in options or job.get("queue") == options["-q"])
            and (not ids or job["job"] in ids)]
    if not jobs:
        emit("No %sjob found" % word, file=sys.stderr)
        return 255
    if "-noheader" not in options:
        emit("%-7s %-7s %-5s %-10s %-11s %-11s %-10s %s" % (
            "JOBID", "USER", "STAT", "QUEUE", "FROM_HOST", "EXEC_HOST", "JOB_NAME", "SUBMIT_TIME"))
    for job in jobs:
        name = job.get("job_name") or "-"
        if "-w" not in options and len(name) > 10:
            name = "*" + name[-9:]
        emit("%-7d %-7s %-5s %-10s %-11s %-11s %-10s %s" % (
            job["job"], job.get("user", "-"), job["stat"], job.get("queue", "-"), job.get("from_host") or "-",
            job.get("exec_host") or "-", name, time.strftime("%b %d %H:%M", time.localtime(job.get("submit_time", 0)))))
    return 0


def cmd_driver(argv, conf):
    """LSF_SERVERDIR/docker-{starter,control,monitor}.py.

    docker-starter.py, reached through a profile's starter with a job to start, runs
    the job container with the environment it was given (after the starter's changes).
    An image() of ``$LSB_CONTAINER_IMAGE`` is read from that environment here, at run
    time (how users pick an image with ``bsub -env LSB_CONTAINER_IMAGE=...``, and how a
    profile's starter hands over the image it chose); unset, the job fails.
    The others are only recorded.
    """
    planned = os.environ.get(DOCKER_RUN_ENV)
    if os.path.basename(sys.argv[0]) != "docker-starter.py" or not planned:
        return 0
    run = json.loads(planned)
    # The environment as the starter left it: re-derive the --env names from it.
    names = ["--env=%s" % name for name in sorted(os.environ) if name not in HOST_ONLY_ENV
             and not name.startswith("LSF_STUB_")]
    words = [word for word in run[2:] if not word.startswith("--env=") or "=" in word[len("--env="):]]
    if any(word in IMAGE_VARIABLE for word in words):
        if not os.environ.get("LSB_CONTAINER_IMAGE"):
            emit("docker-starter.py: the profile's image() is $LSB_CONTAINER_IMAGE, which the job's "
                 "environment does not set", file=sys.stderr)
            return 255
        words = [os.environ["LSB_CONTAINER_IMAGE"] if word in IMAGE_VARIABLE else word for word in words]
    argv = run[:2] + names + words
    env = dict((k, v) for k, v in os.environ.items() if k != DOCKER_RUN_ENV)
    record("docker-run", argv, {"env": {k: env[k] for k in sorted(env) if k.endswith("VISIBLE_DEVICES")}})
    sys.stdout.flush()
    return subprocess.call(argv, env=env)


COMMANDS = {
    "lsadmin": cmd_lsadmin,
    "badmin": cmd_badmin,
    "lshosts": cmd_lshosts,
    "lsid": cmd_lsid,
    "bsub": cmd_bsub,
    "bhosts": cmd_bhosts,
    "bjobs": cmd_bjobs,
    "docker-starter.py": cmd_driver,
    "docker-control.py": cmd_driver,
    "docker-monitor.py": cmd_driver,
}


def main():
    if JOB_RUNNER_ENV in os.environ:
        return run_batch_job(read_lsf_conf())
    command = os.path.basename(sys.argv[0])
    argv = sys.argv[1:]
    record(command, argv)
    handler = COMMANDS.get(command)
    if handler is None:
        emit("%s: not provided by the LSF stub" % command, file=sys.stderr)
        return 127
    try:
        conf = read_lsf_conf()
    except OSError as exc:
        emit("%s: cannot open lsf.conf: %s" % (command, exc), file=sys.stderr)
        return 255
    try:
        return handler(argv, conf)
    except (OSError, ValueError, subprocess.CalledProcessError) as exc:
        emit("%s: %s" % (command, exc), file=sys.stderr)
        return 255


if __name__ == "__main__":
    sys.exit(main())
