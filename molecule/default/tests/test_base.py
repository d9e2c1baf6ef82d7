"""Base state of every node: systemd, the LSF tree, the stubs, Docker."""

import uuid

import pytest
from conftest import CLUSTER, LSF_ENVDIR, LSF_TOP, STUB_LOG, login_shell, stub_calls

testinfra_hosts = ["all"]


def test_systemd_is_pid_1_and_running(host):
    assert host.process.get(pid=1).comm == "systemd"
    state = host.run("systemctl is-system-running").stdout.strip()
    assert state == "running", host.run("systemctl --failed --no-legend").stdout


@pytest.mark.parametrize("name", [
    "lsf.conf",
    "lsf.shared",
    "lsf.cluster." + CLUSTER,
    "profile.lsf",
    "lsbatch/%s/configdir/lsb.applications" % CLUSTER,
    "lsbatch/%s/configdir/lsb.params" % CLUSTER,
    "lsbatch/%s/configdir/lsb.queues" % CLUSTER,
])
def test_lsf_tree_present(host, name):
    conf = host.file("%s/%s" % (LSF_ENVDIR, name))
    assert conf.is_file
    assert conf.user == "lsfadmin"


def test_lsf_conf_names_the_tree(host):
    conf = host.file(LSF_ENVDIR + "/lsf.conf").content_string
    assert "LSF_TOP=%s\n" % LSF_TOP in conf
    assert "LSF_ENVDIR=%s\n" % LSF_ENVDIR in conf
    assert 'LSF_MASTER_LIST="head"' in conf


def test_cluster_file_lists_the_three_nodes(host):
    rows = host.file("%s/lsf.cluster.%s" % (LSF_ENVDIR, CLUSTER)).content_string.splitlines()
    names = [row.split()[0] for row in rows if row.split() and row.split()[0] in ("head", "gpu01", "gpu02")]
    assert names == ["head", "gpu01", "gpu02"]


def test_lsfadmin_exists(host):
    assert host.user("lsfadmin").exists


def test_profile_lsf_linked_from_profile_d(host):
    link = host.file("/etc/profile.d/lsf.sh")
    assert link.is_symlink
    assert link.linked_to == LSF_ENVDIR + "/profile.lsf"


@pytest.mark.parametrize("command", ["lsadmin", "badmin", "lshosts", "lsid", "bsub"])
def test_stub_on_login_path(host, lsf_bin_dir, command):
    found = login_shell(host, "command -v " + command)
    assert found.rc == 0
    assert found.stdout.strip() == "%s/bin/%s" % (lsf_bin_dir, command)


def test_login_environment_from_profile_lsf(host, lsf_bin_dir):
    env = login_shell(host, 'echo "$LSF_ENVDIR $LSF_SERVERDIR"').stdout.split()
    assert env == [LSF_ENVDIR, lsf_bin_dir + "/etc"]


def test_lshosts_reads_the_cluster_file(host):
    out = login_shell(host, "lshosts")
    assert out.rc == 0
    names = [line.split()[0] for line in out.stdout.splitlines()[1:]]
    assert names == ["head", "gpu01", "gpu02"]


def test_stub_log_records_calls_of_any_user(host):
    marker = "testinfra-" + uuid.uuid4().hex
    run = host.run("su - lsfadmin -c %s", "lsid %s" % marker)
    assert run.rc == 0, run.stderr
    assert "My cluster name is %s" % CLUSTER in run.stdout
    log = host.file(STUB_LOG)
    assert log.is_file and log.mode & 0o004
    mine = [c for c in stub_calls(host) if c["argv"] == [marker]]
    assert len(mine) == 1
    assert mine[0]["cmd"] == "lsid" and mine[0]["user"] == "lsfadmin"


def test_ckconfig_fail_switch(host):
    """The fail switch makes ckconfig fail like LSF; removing it restores success."""
    switch = "/etc/lsf-stub/fail-ckconfig"
    # A log of its own: the converge's log must show only the calls the roles made.
    selftest = "LSF_STUB_LOG_DIR=/tmp/lsf-stub-selftest "
    host.run("printf '%%s\\n' %s > %s", "lsf.shared(99): Syntax error (test switch)", switch)
    try:
        failed = login_shell(host, selftest + "lsadmin ckconfig -v")
        assert failed.rc != 0
        assert "lsf.shared(99): Syntax error (test switch)" in failed.stdout
        assert "fatal errors" in failed.stdout
    finally:
        host.run("rm -f %s", switch)
    ok = login_shell(host, selftest + "badmin ckconfig -v")
    assert ok.rc == 0 and "No errors found." in ok.stdout


def test_bsub_interactive_runs_the_job(host):
    run = login_shell(host, "bsub -I -q interactive hostname")
    assert run.rc == 0
    assert run.stdout.strip().splitlines()[-1] == host.check_output("hostname")


def test_dockerd_is_running(host):
    """docker_engine installed Docker from Debian's archive and dockerd runs."""
    assert host.package("docker.io").is_installed
    assert host.service("docker").is_running
    assert host.service("docker").is_enabled
    version = host.run("docker version --format '{{.Server.Version}}'")
    assert version.rc == 0 and version.stdout.strip().startswith("20.10.")


def test_the_engine_came_with_the_recommended_packages_it_uses_only(host):
    """docker_engine's default (docker_engine_install_recommends: false): docker.io without its Recommends,
    with the four of them the engine uses."""
    for name in ("apparmor", "ca-certificates", "pigz", "xz-utils"):
        assert host.package(name).is_installed, name
    for name in ("needrestart", "git", "criu"):
        assert not host.package(name).is_installed, name


def test_docker_runs_a_container(host):
    """A container really runs inside the node (docker-in-docker), from an imported image."""
    script = (
        "set -e; d=$(mktemp -d); mkdir -p $d/bin; cp /usr/bin/busybox $d/bin/busybox 2>/dev/null"
        " || cp /bin/busybox $d/bin/busybox; ln -s busybox $d/bin/sh;"
        " tar -C $d -c . | docker import - testbed/busybox:probe >/dev/null; rm -rf $d;"
        " docker run --rm testbed/busybox:probe sh -c 'echo nested-ok'"
    )
    if not host.exists("busybox"):
        pytest.fail("busybox is missing on the node: prepare.yml installs busybox-static")
    run = host.run("bash -c %s", script)
    assert run.rc == 0, run.stderr
    assert run.stdout.strip() == "nested-ok"
