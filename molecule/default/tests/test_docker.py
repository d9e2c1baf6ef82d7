# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Docker engine and NVIDIA runtime on the test-bed nodes, checked on the real
dockerd inside each node.

The GPU nodes got the NVIDIA runtime because the role's default
(``nvidia_container_runtime_enabled: auto``) found their GPUs, through the
test bed's stand-in libnvidia-ml.so.1. The toolkit comes from the STAND-IN
package repository (molecule/resources/nvidia-standin): its
``nvidia-container-runtime`` logs each call to /run/nvidia-standin/runtime.log,
hands the container the GPUs NVIDIA_VISIBLE_DEVICES names, and then execs runc.

Images cannot be pulled here, so each node builds a one-binary image from its
own /usr/bin/echo and the libraries ldd names.

The last tests rerun the two roles from the controller (only under molecule,
which exports MOLECULE_INVENTORY_FILE): a rerun must change nothing, and
``--check --diff`` after a key was deleted from daemon.json must report it.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest
import testinfra.utils.ansible_runner
import yaml
from conftest import ansible_tool

INVENTORY = os.environ.get("MOLECULE_INVENTORY_FILE")
TEST_IMAGE = "hpc-test/echo:1"
DAEMON_JSON = "/etc/docker/daemon.json"
RUNTIME_LOG = "/run/nvidia-standin/runtime.log"
CDI_SPEC = "/etc/cdi/nvidia.yaml"
# Where NVIDIA's nvidia-cdi-refresh.service (toolkit 1.18+) writes unless told otherwise, and the role's drop-in.
REFRESH_SPEC = "/var/run/cdi/nvidia.yaml"
REFRESH_DROPIN = "/etc/systemd/system/nvidia-cdi-refresh.service.d/hpc-gpu-containers.conf"
ROLE_VARS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "nvidia_container_runtime", "vars",
                         "main.yml")


def _host_vars(host):
    return host.ansible.get_variables()


def _runtime_expected(host):
    """GPU nodes: the role's default (auto) finds their GPUs through the stand-in NVML library."""
    return "gpu_nodes" in _host_vars(host).get("group_names", [])


def _runtime_nodes():
    if not INVENTORY:
        return []
    return sorted(testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("gpu_nodes"))


def _docker_json(host, fmt):
    out = host.check_output("docker info --format %s", fmt)
    return json.loads(out)


def _ensure_test_image(host):
    if host.run("docker image inspect %s", TEST_IMAGE).rc == 0:
        return
    host.check_output(
        "tar -C / -chf - usr/bin/echo "
        "$(ldd /usr/bin/echo | grep -o '/[^ ]*' | sed 's|^/||') "
        "| docker import - %s",
        TEST_IMAGE,
    )


# --- every node: the engine -------------------------------------------------

def test_docker_service_enabled_and_running(host):
    docker = host.service("docker")
    assert docker.is_enabled
    assert docker.is_running


def test_docker_runs_a_container(host):
    _ensure_test_image(host)
    out = host.check_output("docker run --rm %s /usr/bin/echo engine-ok", TEST_IMAGE)
    assert out.strip() == "engine-ok"


def test_daemon_json_has_the_role_defaults(host):
    config = json.loads(host.file(DAEMON_JSON).content_string)
    assert config["log-driver"] == "json-file"
    assert config["log-opts"]["max-size"] == "100m"
    # and dockerd runs with them
    assert _docker_json(host, "{{json .LoggingDriver}}") == "json-file"


def test_lsfadmin_in_docker_group_when_present(host):
    lsfadmin = host.user("lsfadmin")
    if not lsfadmin.exists:
        pytest.skip("no lsfadmin on this node")
    assert "docker" in lsfadmin.groups


# --- the NVIDIA runtime -----------------------------------------------------

def test_nvidia_runtime_registered_only_where_wanted(host):
    runtimes = _docker_json(host, "{{json .Runtimes}}")
    if _runtime_expected(host):
        assert "nvidia" in runtimes
        assert runtimes["nvidia"]["path"] == "nvidia-container-runtime"
    else:
        assert "nvidia" not in runtimes
        assert not host.package("nvidia-container-toolkit").is_installed


def test_container_starts_with_runtime_nvidia(host):
    if not _runtime_expected(host):
        pytest.skip("no NVIDIA runtime on this node")
    _ensure_test_image(host)
    before = host.run("wc -l < %s", RUNTIME_LOG)
    calls_before = int(before.stdout.strip() or 0) if before.rc == 0 else 0
    out = host.check_output("docker run --rm --runtime nvidia %s /usr/bin/echo runtime-ok", TEST_IMAGE)
    assert out.strip() == "runtime-ok"
    # the stand-in runtime, not plain runc, started it
    calls_after = int(host.check_output("wc -l < %s", RUNTIME_LOG).strip())
    assert calls_after > calls_before


def test_toolkit_packages_at_one_version(host):
    if not _runtime_expected(host):
        pytest.skip("no NVIDIA runtime on this node")
    wanted = str(_host_vars(host).get("nvidia_container_runtime_version") or _default_toolkit(host))
    versions = {
        name: host.package(name).version
        for name in (
            "nvidia-container-toolkit",
            "nvidia-container-toolkit-base",
            "libnvidia-container-tools",
            "libnvidia-container1",
        )
    }
    assert len(set(versions.values())) == 1, versions
    assert all(v.startswith(wanted + "-") for v in versions.values()), versions


def test_daemon_json_merged_not_overwritten(host):
    if not _runtime_expected(host):
        pytest.skip("no NVIDIA runtime on this node")
    config = json.loads(host.file(DAEMON_JSON).content_string)
    assert config["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "runtimeArgs": []}
    # features.cdi merged next to the feature prepare put there
    assert config["features"] == {"buildkit": True, "cdi": True}
    # the key another tool wrote before converge is still there
    assert config["labels"] == ["site=test"]


def _default_toolkit(host):
    """The role's default toolkit version for the node's architecture (vars/main.yml)."""
    with open(ROLE_VARS, encoding="utf-8") as handle:
        versions = yaml.safe_load(handle)["__nvidia_container_runtime_default_versions"]
    return str(versions[host.system_info.arch])


def test_cdi_spec_written(host):
    if not _runtime_expected(host):
        pytest.skip("no NVIDIA runtime on this node")
    spec = host.file(CDI_SPEC)
    assert spec.exists
    assert spec.mode == 0o644
    assert "kind: nvidia.com/gpu" in spec.content_string


def test_nvidias_cdi_refresh_writes_the_one_spec(host):
    """The scenario runs the x86_64 default, the 1.18 line, whose package enables NVIDIA's nvidia-cdi-refresh
    and runs it at install: it wrote /var/run/cdi/nvidia.yaml, which would shadow the role's spec. The role pointed
    the refresh at its own spec (a drop-in) and removed that copy: run again, as at boot or on a driver change, the
    refresh rewrites the role's spec, with the same bytes, and makes no second one."""
    if not _runtime_expected(host):
        pytest.skip("no NVIDIA runtime on this node")
    assert host.package("nvidia-container-toolkit-base").version.startswith("1.18."), "not the 1.18 line"
    # the stand-in package's postinst ran the refresh at install, as NVIDIA's does
    assert "Regenerating NVIDIA CDI specification" in host.file("/var/log/apt/term.log").content_string
    assert host.service("nvidia-cdi-refresh.path").is_enabled
    assert host.service("nvidia-cdi-refresh.service").is_enabled
    assert host.file(REFRESH_DROPIN).contains("^Environment=NVIDIA_CTK_CDI_OUTPUT_FILE_PATH=%s$" % CDI_SPEC)
    assert not host.file(REFRESH_SPEC).exists
    before = host.file(CDI_SPEC).content_string
    stamp = host.check_output("stat -c %%y %s", CDI_SPEC)
    host.check_output("systemctl restart nvidia-cdi-refresh.service")
    # it ran (its ExecCondition found the driver's module) and wrote the role's spec
    assert host.check_output("systemctl show -p Result --value nvidia-cdi-refresh.service") == "success"
    assert host.check_output("stat -c %%y %s", CDI_SPEC) != stamp
    assert host.file(CDI_SPEC).content_string == before
    assert not host.file(REFRESH_SPEC).exists


# What prepare.yml installed on each GPU node before converge (stand-in packages; the two conflict).
LEGACY_PACKAGES = {"gpu01": "nvidia-docker", "gpu02": "nvidia-docker2"}


def test_legacy_nvidia_docker_plugin_removed(host):
    if not _runtime_expected(host):
        pytest.skip("no NVIDIA runtime on this node")
    assert not host.file("/etc/docker/plugins/nvidia-docker.spec").exists
    for name in ("nvidia-docker", "nvidia-docker2"):
        assert not host.package(name).is_installed, name
    assert not host.file("/usr/bin/nvidia-docker").exists


def test_the_legacy_runtime_the_node_had_was_stopped_and_removed(host):
    """prepare.yml installed nvidia-docker 1.0 (its plugin service running) on gpu01 and nvidia-docker2 on gpu02;
    dpkg's log shows both the install and the role's removal, and the plugin service is gone."""
    name = host.check_output("hostname -s")
    if name not in LEGACY_PACKAGES:
        pytest.skip("prepare installed no legacy runtime here")
    package = LEGACY_PACKAGES[name]
    log = host.file("/var/log/dpkg.log").content_string.splitlines()
    installed = [i for i, line in enumerate(log) if " status installed %s:all " % package in line]
    removed = [i for i, line in enumerate(log) if " remove %s:all " % package in line]
    assert installed and removed and removed[-1] > installed[0], "dpkg.log: installed %s, removed %s" % (
        installed, removed)
    if package == "nvidia-docker":
        assert host.run("systemctl is-active nvidia-docker.service").stdout.strip() != "active"
        # (the bracket keeps pgrep from finding the shell that runs it)
        assert host.run("pgrep -f '[/]usr/bin/nvidia-docker-plugin'").rc != 0


# --- reruns from the controller (molecule only) -------------------------------

PLAYBOOK = textwrap.dedent(
    """\
    - name: Docker engine and NVIDIA runtime, again
      hosts: all
      roles:
        - hpc.gpu_containers.docker_engine
        - hpc.gpu_containers.nvidia_container_runtime
    """
)

needs_molecule = pytest.mark.skipif(
    not _runtime_nodes(), reason="needs MOLECULE_INVENTORY_FILE with a node that has the NVIDIA runtime"
)


@pytest.fixture(scope="module")
def playbook(tmp_path_factory):
    path = tmp_path_factory.mktemp("rerun") / "rerun.yml"
    path.write_text(PLAYBOOK)
    return path


def _run_playbook(playbook, *args):
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run(
        [ansible_tool("ansible-playbook"), "-i", INVENTORY, "--limit", ",".join(_runtime_nodes()), str(playbook), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # Molecule's ansible.cfg enables profile_tasks, which prints timing lines
    # around the JSON report: decode from the report's first line on.
    start = proc.stdout.find("{\n")
    report, dummy = json.JSONDecoder().raw_decode(proc.stdout[start:])
    return report


def _task_results(report, task_name):
    for play in report["plays"]:
        for task in play["tasks"]:
            # role tasks are reported as "<role> : <name>"
            if task["task"]["name"].split(" : ")[-1] == task_name:
                return task["hosts"]
    raise AssertionError("task %r did not run" % task_name)


@needs_molecule
def test_rerun_changes_nothing(playbook):
    report = _run_playbook(playbook)
    changed = {name: stats["changed"] for name, stats in report["stats"].items()}
    assert changed and all(count == 0 for count in changed.values()), changed


@needs_molecule
def test_check_diff_reports_a_deleted_key_and_a_driver_change(playbook):
    """One --check --diff run after two kinds of drift on one node: a key
    deleted from daemon.json, and a driver upgrade (the stand-in nvidia-ctk
    reads its driver version from /etc/nvidia-standin/driver-version)."""
    node = _runtime_nodes()[0]
    target = testinfra.get_host("ansible://%s?ansible_inventory=%s" % (node, INVENTORY))
    original = target.check_output("base64 -w0 %s", DAEMON_JSON)
    spec_before = target.file(CDI_SPEC).content_string
    # what NVIDIA's refresh leaves where it was not pointed at the role's spec
    target.check_output("mkdir -p /var/run/cdi && cp %s %s", CDI_SPEC, REFRESH_SPEC)
    config = json.loads(target.file(DAEMON_JSON).content_string)
    del config["runtimes"]["nvidia"]
    target.check_output("printf '%%s\\n' %s > %s", json.dumps(config, indent=4), DAEMON_JSON)
    target.check_output("mkdir -p /etc/nvidia-standin && echo 999.99.99 > /etc/nvidia-standin/driver-version")
    try:
        report = _run_playbook(playbook, "--check", "--diff")
        result = _task_results(report, "Register the NVIDIA runtime with Docker")[node]
        assert result["changed"] is True
        assert "runtimes.nvidia" in result["changed_keys"]
        diff = result["diff"][0] if isinstance(result["diff"], list) else result["diff"]
        assert '"nvidia"' not in diff["before"]
        assert '"nvidia"' in diff["after"]
        spec = _task_results(report, "Install the CDI spec when it is missing or differs")[node]
        assert spec["changed"] is True
        spec_diff = spec["diff"][0] if isinstance(spec["diff"], list) else spec["diff"]
        assert "999.99.99" in spec_diff["after"] and "999.99.99" not in spec_diff["before"]
        assert _task_results(report, "Remove the spec the refresh wrote at its default path")[node]["changed"] is True
        assert report["stats"][node]["changed"] >= 3
        # check mode wrote nothing
        assert "nvidia" not in json.loads(target.file(DAEMON_JSON).content_string)["runtimes"]
        assert target.file(CDI_SPEC).content_string == spec_before
        assert target.file(REFRESH_SPEC).exists
    finally:
        target.check_output("echo %s | base64 -d > %s", original, DAEMON_JSON)
        target.check_output("rm -f /etc/nvidia-standin/driver-version %s", REFRESH_SPEC)
    assert json.loads(target.file(DAEMON_JSON).content_string)["runtimes"]["nvidia"]["path"] == (
        "nvidia-container-runtime"
    )
