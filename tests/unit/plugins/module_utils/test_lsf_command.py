# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF command client (module_utils/_lsf_command.py): a profile's login shell or an LSF_ENVDIR environment,
and one wording for a failed command. The login shell runs for real, with a stand-in bhosts on the PATH."""

import os
import subprocess

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_command import (
    LsfCommandError,
    LsfCommands,
    environment,
    login_argv,
    profile_environment,
    profile_values,
)


def test_environment_puts_bindir_first_each_entry_once():
    env = environment("/lsf/conf", "/lsf/bin", "/usr/bin:/lsf/bin::/bin")
    assert env == {"LSF_ENVDIR": "/lsf/conf", "PATH": "/lsf/bin:/usr/bin:/bin"}
    assert environment("/lsf/conf", None, "")["PATH"] == ""


def _run(argv, environ_update=None):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=environ_update)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def lsf_tree(tmp_path):
    """A profile.lsf that puts a bin directory with a stand-in bhosts on the PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    bhosts = bindir / "bhosts"
    bhosts.write_text('#!/bin/sh\nif [ "$1" = fail ]; then echo "bhosts: no such host" >&2; exit 255; fi\n'
                      'echo "bhosts $* (LSF_ENVDIR=$LSF_ENVDIR)"\n')
    bhosts.chmod(0o755)
    profile = tmp_path / "profile.lsf"
    profile.write_text('LSF_ENVDIR=%s; export LSF_ENVDIR; PATH=%s:$PATH; export PATH\n' % (tmp_path, bindir))
    return tmp_path, bindir, profile


def test_a_profile_is_sourced_in_a_login_shell(lsf_tree):
    top, _bindir, profile = lsf_tree
    lsf = LsfCommands(_run, profile=str(profile))
    assert lsf.check("bhosts", "-l", "gpu 01") == "bhosts -l gpu 01 (LSF_ENVDIR=%s)\n" % top
    with pytest.raises(LsfCommandError, match=r"^bhosts fail failed \(rc=255\): bhosts: no such host$"):
        lsf.check("bhosts", "fail")
    # A profile that cannot be read stops the shell before the command.
    rc, out, _err = LsfCommands(_run, profile=str(top / "missing")).run("bhosts")
    assert rc != 0 and out == ""
    assert login_argv(None, ["bhosts"])[3:] == ["sh", "", "bhosts"]


def test_an_envdir_and_bindir(lsf_tree):
    top, bindir, _profile = lsf_tree
    lsf = LsfCommands(_run, envdir=str(top), bindir=str(bindir), path="/usr/bin:/bin")
    assert lsf.run("bhosts", "-w") == (0, "bhosts -w (LSF_ENVDIR=%s)\n" % top, "")


def _run_in(argv, cwd=None, environ_update=None):
    """run_command with AnsibleModule's cwd and environ_update (added to this process's environment)."""
    env = dict(os.environ, **(environ_update or {}))
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=cwd, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def test_what_a_sites_profile_sets_up(lsf_tree):
    top, bindir, profile = lsf_tree
    profile.write_text(profile.read_text() + 'echo "Welcome to LSF"\nLSF_SERVERDIR=/lsf/etc; export LSF_SERVERDIR\n')
    values = profile_environment(_run_in, str(top))
    assert values["LSF_SERVERDIR"] == "/lsf/etc" and values["LSF_BINDIR"] == ""
    assert values["PATH"].split(":")[0] == str(bindir)
    # No profile.lsf in LSF_ENVDIR: nothing set up, PATH as it was.
    profile.unlink()
    assert profile_environment(_run_in, str(top))["LSF_SERVERDIR"] == ""


def test_a_shell_that_fails_names_the_profile(tmp_path):
    with pytest.raises(LsfCommandError, match=r"^%s/profile\.lsf: the shell that reads it failed \(rc=2\): boom$"
                       % tmp_path):
        profile_environment(lambda argv, cwd, environ_update: (2, "", "boom\n"), str(tmp_path))
    assert profile_values("LSF_BINDIR=/x/bin\nPATH=/a:/b\nnoise\nlower=x\n") == {"LSF_BINDIR": "/x/bin",
                                                                                 "PATH": "/a:/b"}
