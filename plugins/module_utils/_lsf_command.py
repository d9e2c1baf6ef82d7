# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""How the collection runs an LSF command: one client for every module that does.

Pure Python, no Ansible: the caller hands in its ``run_command`` (AnsibleModule's, or any callable with its
signature). LSF's commands need LSF's environment, which a site provides one of two ways, and a client is made for
one of them:

* a profile (``profile.lsf``): the command runs in a login shell (``sh -l``: /etc/profile.d puts LSF on the PATH
  on an LSF host), after sourcing ``profile`` when one is given (``LsfCommands(run, profile=...)``);
* the layout the pre-flight found (``lsf_config_info``): LSF_ENVDIR and a PATH with LSF_BINDIR first
  (``LsfCommands(run, envdir=..., bindir=..., path=...)``).

``profile_environment`` reads what a site's ``profile.lsf`` sets up (LSF_BINDIR, LSF_SERVERDIR, PATH), for the
pre-flight's layout. ``failure`` words a failed command the same way everywhere: the command, its status, what
it printed.
"""

from __future__ import annotations

import re

__all__ = ["PRINT_PROFILE", "PROFILE_SHELL", "LsfCommandError", "LsfCommands", "environment", "failure",
           "login_argv", "profile_environment", "profile_values"]

# Source the profile (when given) in a login shell, then run the command: argv "sh", profile, command...
PROFILE_SHELL = 'profile=$1; shift; if [ -n "$profile" ]; then . "$profile" || exit 127; fi; exec "$@"'


# In LSF_ENVDIR: source profile.lsf when it is there (quietly: some print banners), then print what it set up.
PRINT_PROFILE = ('if [ -r ./profile.lsf ]; then . ./profile.lsf >/dev/null 2>&1; fi; '
                 'printf "LSF_BINDIR=%s\\nLSF_SERVERDIR=%s\\nPATH=%s\\n" "${LSF_BINDIR:-}" "${LSF_SERVERDIR:-}" "$PATH"')


class LsfCommandError(Exception):
    """An LSF command failed; the message names it, its status and what it printed."""


def login_argv(profile, argv):
    """``argv`` run in a login shell after sourcing ``profile`` (profile.lsf; '' or None: the login one only)."""
    return ["/bin/sh", "-lc", PROFILE_SHELL, "sh", profile or ""] + list(argv)


def environment(envdir, bindir=None, path=""):
    """LSF_ENVDIR, and PATH with LSF_BINDIR first (then ``path``'s entries, each once)."""
    entries = [bindir] if bindir else []
    for entry in (path or "").split(":"):
        if entry and entry not in entries:
            entries.append(entry)
    return {"LSF_ENVDIR": envdir, "PATH": ":".join(entries)}


def failure(argv, rc, out, err):
    """``<command> failed (rc=N): <what it printed>``."""
    return "%s failed (rc=%d): %s" % (" ".join(argv), rc, (err or out or "").strip())


class LsfCommands:
    """Runs LSF commands with the site's LSF environment (a profile, or an LSF_ENVDIR and LSF_BINDIR)."""

    def __init__(self, run_command, profile=None, envdir=None, bindir=None, path=""):
        self._run_command = run_command
        self.profile = profile or ""
        self.env = environment(envdir, bindir, path) if envdir else None

    def run(self, *argv):
        """``(rc, stdout, stderr)`` of one command."""
        if self.env is not None:
            return self._run_command(list(argv), environ_update=self.env)
        return self._run_command(login_argv(self.profile, argv))

    def check(self, *argv):
        """The command's stdout; LsfCommandError when its status is not 0."""
        rc, out, err = self.run(*argv)
        if rc != 0:
            raise LsfCommandError(failure(argv, rc, out, err))
        return out


def profile_values(text):
    """``KEY=value`` lines (the shell's printout of the environment profile.lsf set up) as a dict."""
    out = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and re.match(r"^[A-Z_]+$", key):
            out[key] = value
    return out


def profile_environment(run_command, envdir):
    """LSF_BINDIR, LSF_SERVERDIR and PATH after ``envdir``/profile.lsf (when readable) is sourced, as a dict.

    LsfCommandError, naming the profile, when the shell that reads it fails.
    """
    rc, out, err = run_command(["/bin/sh", "-c", PRINT_PROFILE], cwd=envdir, environ_update={"LSF_ENVDIR": envdir})
    if rc != 0:
        raise LsfCommandError("%s/profile.lsf: the shell that reads it failed (rc=%d): %s"
                              % (envdir, rc, (err or out or "").strip()))
    return profile_values(out)
