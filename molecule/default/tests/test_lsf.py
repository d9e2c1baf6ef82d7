# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF configuration on the lsf_master after converge (lsf_docker role, site playbook).

The files must say what an administrator following the PowerAI runbook
(seeds 000, "Configure IBM Spectrum LSF") writes by hand: the three lsf.conf
parameters, a ``docker`` Boolean in lsf.shared, ``docker`` in RESOURCES of
every Docker host, a Docker application profile and its interactive twin.
They are read here with a small parser of this file's own, independent of the
collection's models, and compared by meaning (sections, keys, tokens), not
by layout. The recording LSF stubs show the validation and reload calls.

Expectations assume the scenario's test sequence (molecule test): one
converge, then idempotence, which must add no LSF calls. The side_effect step
(drift.yml) checks the calls of each of its own runs and then moves them to
side-effect-calls.jsonl next to the stub log, so the log read here holds what
converge and idempotence called.
"""
from __future__ import annotations

import os
import re

import pytest
import testinfra.utils.ansible_runner
import yaml
from conftest import stub_calls as read_stub_calls

INVENTORY = os.environ.get("MOLECULE_INVENTORY_FILE")
if INVENTORY:
    testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("lsf_master")

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "..", "..", "tests", "fixtures", "lsf10.1", "conf")

LSF_TOP = "/usr/share/lsf"
CONFDIR = LSF_TOP + "/conf"
CLUSTER = os.environ.get("LSF_CLUSTER", "gpucluster")
LSF_CONF = CONFDIR + "/lsf.conf"
LSF_SHARED = CONFDIR + "/lsf.shared"
LSF_CLUSTER = CONFDIR + "/lsf.cluster." + CLUSTER
LSB_APPLICATIONS = "%s/lsbatch/%s/configdir/lsb.applications" % (CONFDIR, CLUSTER)
DOCKER_HOSTS = os.environ.get("LSF_DOCKER_HOSTS", "head gpu01 gpu02").split()
REGISTRY = os.environ.get("REGISTRY_ADDRESS", "head:5000")
# the profiles run the verification image in the test bed (group_vars/all.yml: lsf_docker_image)
IMAGE = REGISTRY + "/hpc/verify:1"
# the runbook's memlock ulimit, at the value the test bed's engine allows (group_vars/all.yml)
with open(os.path.join(HERE, "..", "group_vars", "all.yml"), encoding="utf-8") as handle:
    MEMLOCK = int(yaml.safe_load(handle)["lsf_docker_memlock"])


# --------------------------------------------------------------------------
# An independent reading of the LSF file formats
# --------------------------------------------------------------------------

def strip_comment(line):
    """Drop a '#' comment (LSF reads '#' anywhere as a comment start)."""
    return line.split("#", 1)[0].rstrip()


def logical_lines(text):
    """Physical lines joined on a trailing backslash, comments dropped, blanks skipped."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = strip_comment(raw)
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            out.append(line)
    return out


def conf_values(text):
    """lsf.conf NAME=value pairs, last definition wins, double quotes removed."""
    values = {}
    for line in logical_lines(text):
        match = re.match(r'^([A-Za-z_][A-Za-z0-9_]*)=(.*)$', line)
        assert match, "lsf.conf line is not NAME=value: %r" % line
        value = match.group(2).strip()
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1]
        assert " " not in value or match.group(2).startswith('"'), "unquoted blank in %r" % line
        values[match.group(1)] = value
    return values


def table_tokens(line):
    """Split a table row: '(a b)' is one token, written without the parentheses."""
    tokens, i = [], 0
    while i < len(line):
        if line[i].isspace():
            i += 1
        elif line[i] == "(":
            end = line.index(")", i)
            tokens.append(line[i + 1:end].strip())
            i = end + 1
        else:
            end = i
            while end < len(line) and not line[end].isspace():
                end += 1
            tokens.append(line[i:end])
            i = end
    return tokens


def sections(text, name):
    """Bodies (logical lines) of every 'Begin <name>' ... 'End <name>' section."""
    found, body = [], None
    for line in logical_lines(text):
        words = line.split()
        if words[0].lower() == "begin" and len(words) > 1 and words[1].lower() == name.lower():
            body = []
        elif words[0].lower() == "end" and body is not None:
            found.append(body)
            body = None
        elif body is not None:
            body.append(line)
    return found


def table(text, name):
    """Rows of a table section as dicts keyed by lower-case column name."""
    (body,) = sections(text, name)
    header = [column.lower() for column in body[0].split()]
    rows = []
    for line in body[1:]:
        tokens = table_tokens(line)
        assert len(tokens) == len(header), "%s row %r has %d values for %d columns" % (
            name, line, len(tokens), len(header))
        rows.append(dict(zip(header, tokens)))
    return rows


def profiles(text):
    """lsb.applications profiles: NAME -> {KEY: value}."""
    result = {}
    for body in sections(text, "Application"):
        entries = {}
        for line in body:
            key, dummy, value = line.partition("=")
            entries[key.strip().upper()] = value.strip()
        result[entries["NAME"]] = entries
    return result


def clause(text, keyword, open_="(", close=")"):
    """The argument of keyword(...) / keyword[...], read with a depth counter."""
    match = re.search(r"(?:^|[\s\[])%s\s*%s" % (re.escape(keyword), re.escape(open_)), text)
    if not match:
        return None
    depth, start = 1, match.end()
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return text[start:i].strip()
    raise AssertionError("unbalanced %s%s in %r" % (keyword, open_, text))


def container(value):
    runtime, dummy, rest = value.partition("[")
    return {
        "runtime": runtime.strip(),
        "image": clause(rest, "image"),
        "options": (clause(rest, "options") or "").split(),
    }


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------

@pytest.fixture()
def read(host):
    def _read(path):
        handle = host.file(path)
        assert handle.exists, path
        return handle.content_string
    return _read


@pytest.fixture()
def stub_calls(host):
    return read_stub_calls(host)


def fixture_text(relative):
    with open(os.path.join(FIXTURE, relative), encoding="utf-8") as handle:
        return handle.read()


def is_subsequence(needles, haystack):
    iterator = iter(haystack)
    return all(any(line == candidate for candidate in iterator) for line in needles)


# --------------------------------------------------------------------------
# Tests
# --------------------------------------------------------------------------

def test_lsf_conf_has_the_runbook_parameters(read):
    text = read(LSF_CONF)
    values = conf_values(text)
    assert values["LSF_PROCESS_TRACKING"] == "Y"
    assert values["LSF_LINUX_CGROUP_ACCT"] == "Y"
    assert values["LSB_RESOURCE_ENFORCE"].split() == ["cpu", "memory"]
    # As the runbook writes it: a value with a blank is double-quoted.
    assert re.search(r'(?m)^LSB_RESOURCE_ENFORCE="cpu memory"$', text)
    # The installer's parameters are still there, unchanged.
    before = conf_values(fixture_text("lsf.conf"))
    for key, value in before.items():
        assert values[key] == value, key
    # lsf_docker_gpu_scheduling: auto (the default) wrote LSF's GPU keys the installer's file lacks: without
    # LSB_GPU_NEW_SYNTAX, LSF (and the test bed's bsub) refuses bsub -gpu.
    assert "LSB_GPU_NEW_SYNTAX" not in before and "LSF_GPU_AUTOCONFIG" not in before
    assert values["LSB_GPU_NEW_SYNTAX"] == "extend"
    assert values["LSF_GPU_AUTOCONFIG"] == "Y"
    # The starter wrapper reads the job's environment, which LSF hands it only with LSB_DOCKER_PASS_ENV=Y.
    assert "LSB_DOCKER_PASS_ENV" not in before and values["LSB_DOCKER_PASS_ENV"] == "Y"


def test_bsub_gpu_is_refused_where_lsf_conf_leaves_the_gpu_syntax_off(host):
    """The test bed's bsub refuses -gpu as LSF does without LSB_GPU_NEW_SYNTAX; the GPU tests pass only
    because the role's default wrote it (test_gpu.py submits -gpu jobs under the converged lsf.conf)."""
    envdir = "/tmp/lsf-envdir-without-gpu-syntax"
    host.run_test("rm -rf %s && mkdir -m 0755 %s && grep -v '^LSB_GPU_NEW_SYNTAX=' %s > %s/lsf.conf"
                  " && chmod 0644 %s/lsf.conf", envdir, envdir, LSF_CONF, envdir, envdir)
    try:
        refused = host.run("runuser -u lsfadmin -- bash -lc %s",
                           "LSF_ENVDIR=%s bsub -gpu num=1 -I true" % envdir)
    finally:
        host.run("rm -rf %s", envdir)
    assert refused.rc == 255, refused.stdout + refused.stderr
    assert "LSB_GPU_NEW_SYNTAX" in refused.stderr and "Job not submitted" in refused.stderr


def test_lsf_shared_defines_docker_boolean(read):
    rows = {row["resourcename"]: row for row in table(read(LSF_SHARED), "Resource")}
    docker = rows["docker"]
    assert docker["type"] == "Boolean"
    assert docker["description"] == "Docker container"
    for column in ("interval", "increasing", "consumable", "release"):
        assert docker.get(column, "") in ("", "-"), column
    # Every resource the installer defined is still defined the same way.
    for row in table(fixture_text("lsf.shared"), "Resource"):
        assert rows[row["resourcename"]] == row


def test_lsf_cluster_gives_every_docker_host_the_resource(read):
    rows = {row["hostname"]: row for row in table(read(LSF_CLUSTER), "Host")}
    for name in DOCKER_HOSTS:
        assert "docker" in rows[name]["resources"].split(), name
    # Resources the hosts had before are kept; no row was added or lost.
    original = {row["hostname"]: row for row in table(fixture_text("lsf.cluster." + CLUSTER), "Host")}
    assert sorted(rows) == sorted(original)
    for name, row in original.items():
        assert set(row["resources"].split()) <= set(rows[name]["resources"].split()), name


@pytest.mark.parametrize("name", ["lsf.conf", "lsf.shared", "lsf.cluster." + CLUSTER,
                                  "lsbatch/%s/configdir/lsb.applications" % CLUSTER])
def test_comments_and_untouched_lines_survive(read, name):
    """Edits are in place: every comment line of the installed file is still there, in order."""
    before = [line for line in fixture_text(name).splitlines() if line.lstrip().startswith("#")]
    after = read(CONFDIR + "/" + name).splitlines()
    assert before, "the fixture %s has comments to keep" % name
    assert is_subsequence(before, after)


def test_powerai_profile_matches_the_runbook(host, read):
    apps = profiles(read(LSB_APPLICATIONS))
    powerai = apps["powerai"]
    assert powerai["DESCRIPTION"] == "PowerAI"
    spec = container(powerai["CONTAINER"])
    assert spec["runtime"] == "docker"
    assert spec["image"] == IMAGE
    options = spec["options"]
    for option in ("--ipc=host", "--network=host", "--rm",
                   "--ulimit=memlock=%d:%d" % (MEMLOCK, MEMLOCK),
                   "--volume=/etc/passwd:/etc/passwd:ro", "--volume=/etc/group:/etc/group:ro"):
        assert option in options, option
    # GPU access from facts, not a hard-coded device list: the GPU nodes have
    # the NVIDIA runtime registered with Docker (stand-in toolkit, no GPU).
    assert "--runtime=nvidia" in options
    assert not [o for o in options if re.match(r"--device=/dev/nvidia\d+$", o)]
    # The runbook's bare "--device ..." outside options() is not repeated.
    assert "options(" in powerai["CONTAINER"]


def test_interactive_twin_profile(read):
    apps = profiles(read(LSB_APPLICATIONS))
    batch = container(apps["powerai"]["CONTAINER"])
    twin = container(apps["powerai_interactive"]["CONTAINER"])
    assert twin["image"] == batch["image"]
    assert twin["options"][:len(batch["options"])] == batch["options"]
    assert {"--interactive", "--tty"} <= set(twin["options"])
    assert apps["powerai_interactive"]["EXEC_DRIVER"] == apps["powerai"]["EXEC_DRIVER"]


def test_existing_profiles_are_kept(read):
    before = profiles(fixture_text("lsbatch/%s/configdir/lsb.applications" % CLUSTER))
    after = profiles(read(LSB_APPLICATIONS))
    for name, entries in before.items():
        assert after[name] == entries, name


def test_exec_driver_and_starter_wrapper(host, read):
    exec_driver = profiles(read(LSB_APPLICATIONS))["powerai"]["EXEC_DRIVER"]
    assert clause(exec_driver, "context", "[", "]") == "user(lsfadmin)"
    starter = clause(exec_driver, "starter", "[", "]")
    for script, name in ((clause(exec_driver, "controller", "[", "]"), "docker-control.py"),
                         (clause(exec_driver, "monitor", "[", "]"), "docker-monitor.py")):
        assert script.endswith("/etc/" + name)
        assert host.file(script).exists, script
    wrapper = host.file(starter)
    assert wrapper.is_file
    assert wrapper.mode & 0o111
    assert "BASH_FUNC_" in wrapper.content_string


def test_starter_wrapper_ignores_a_hostile_job_environment(host, read):
    """The installed wrapper, run as LSF would with a submitter's environment: LSF_SERVERDIR and PYTHONPATH point
    at code that must never run; the driver of the fixed LSF_SERVERDIR (the recording stub) runs instead, with the
    job's arguments, even with an exported bash function and a restrictive umask in the environment."""
    exec_driver = profiles(read(LSB_APPLICATIONS))["powerai"]["EXEC_DRIVER"]
    starter = clause(exec_driver, "starter", "[", "]")
    evil = "/tmp/lsf-docker-starter-evil"
    canary = evil + "/ran"
    payload = "open(%r, 'w').write('ran')\n" % canary
    host.run_test("mkdir -p %s && printf %%s %s > %s/docker-starter.py && cp %s/docker-starter.py %s/sitecustomize.py",
                  evil, payload, evil, evil, evil)
    before = len(read_stub_calls(host))
    try:
        # env execs the wrapper directly: sh (dash) would drop the bash function variable.
        probe = host.run("umask 077; env %s LSF_SERVERDIR=%s PYTHONPATH=%s %s a b",
                         "BASH_FUNC_ml%%=() {  eval $(lmod ml) \n}", evil, evil, starter)
        ran = host.file(canary).exists
    finally:
        host.run("rm -rf %s", evil)
    assert probe.rc == 0, probe.stderr
    assert not ran
    drivers = [c for c in read_stub_calls(host)[before:] if c["cmd"] == "docker-starter.py"]
    assert [c["argv"] for c in drivers] == [["a", "b"]]


def test_python_for_the_exec_driver(host):
    assert host.file("/usr/bin/python").exists


def test_ckconfig_then_each_needed_reload_once(stub_calls):
    calls = [(c["cmd"], c["argv"]) for c in stub_calls if c["cmd"] in ("lsadmin", "badmin")]
    # Both checks first, then the reloads: lsf.conf, lsf.shared and lsf.cluster
    # changed, so LIM is reconfigured and (IBM, for lsf.shared/lsf.cluster)
    # mbatchd restarted, which re-reads lsb.applications too: no separate
    # "badmin reconfig"; LSB_DOCKER_PASS_ENV was written, which sbatchd and RES
    # read only at their start, so both restart on every host, last. Each once;
    # idempotence adds none.
    assert calls == [
        ("lsadmin", ["ckconfig", "-v"]),
        ("badmin", ["ckconfig", "-v"]),
        ("lsadmin", ["reconfig", "-f"]),
        ("badmin", ["mbdrestart", "-f"]),
        ("badmin", ["hrestart", "-f", "all"]),
        ("lsadmin", ["resrestart", "-f", "all"]),
    ]


def test_lsf_commands_ran_with_the_cluster_envdir(stub_calls):
    admin = [c for c in stub_calls if c["cmd"] in ("lsadmin", "badmin")]
    assert admin and all(c["lsf_envdir"] == CONFDIR for c in admin)


def test_lshosts_confirms_the_docker_resource_after_the_reload(stub_calls):
    """After the reload the role asks LSF itself which hosts carry the resource (once, after lsadmin reconfig)."""
    order = [(c["cmd"], c["argv"]) for c in stub_calls if c["cmd"] in ("lsadmin", "badmin", "lshosts")]
    reload = order.index(("lsadmin", ["reconfig", "-f"]))
    checks = [call for call in order if call == ("lshosts", ["-w", "-R", "select[docker]"])]
    assert len(checks) == 1 and order.index(checks[0]) > reload, order
