# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Installed packages and what an install at a version pin would change.

One query of the package database (``dpkg-query`` on Debian-family nodes, ``rpm`` on RHEL-family ones) gives the
installed version of each named package. Which one is the node's own comes from ``/etc/os-release``
(:func:`native_manager`): a RHEL node can have dpkg too (EPEL ships it), and a Debian node rpm, and the other
database knows nothing of what the node's package manager installed. From it, :func:`plan` says which wanted packages are missing, which are
installed at another version than the pin, which unwanted ones are installed, and the package specs to hand the
package manager (pinned where asked). Used by the ``package_info`` module and by the drift fingerprint.

A pin matches an installed version in one of two ways:

``prefix``   the installed version starts with the pin (Docker's ``5:24.0.7`` matches ``5:24.0.7-1~debian.12``);
             apt gets ``name=<pin>*``.
``release``  the installed version is the pin, or the pin and a release (``1.17.9`` matches ``1.17.9-1`` and
             ``1.17.9``, not ``1.17.90-1``); apt gets ``name=<pin>-*``.

On rpm the pin is compared with the package's version (no epoch, no release) and dnf gets ``name-<pin>``.

Nothing here imports Ansible: the command runner is passed in (``run(argv) -> (rc, stdout, stderr)``, ``rc``
``None`` when the command is not there).
"""

from __future__ import annotations

MATCHES = ("prefix", "release")

DPKG_QUERY = ["dpkg-query", "-W", "-f", "${Package}\t${Version}\t${db:Status-Status}\n"]
RPM_QUERY = ["rpm", "-q", "--qf", "%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}.%{ARCH}\tinstalled\n"]


# /etc/os-release ID and ID_LIKE words of the distribution families, by their package database.
RPM_FAMILY = frozenset(("rhel", "fedora", "centos", "rocky", "almalinux", "ol", "amzn", "suse", "sles", "opensuse",
                        "opensuse-leap", "opensuse-tumbleweed", "sled"))
DPKG_FAMILY = frozenset(("debian", "ubuntu"))
OS_RELEASE = "/etc/os-release"


class PackageError(Exception):
    """No package database this module can read, or a bad request."""


def native_manager(os_release):
    """``rpm`` or ``dpkg``, the package database of the distribution ``os_release`` (the text of
    /etc/os-release) names in ``ID``, else in ``ID_LIKE`` (in its order); None for a family neither has."""
    fields = {}
    for line in os_release.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("ID", "ID_LIKE"):
            fields[key.strip()] = value.strip().strip("\"'").lower().split()
    for word in fields.get("ID", []) + fields.get("ID_LIKE", []):
        if word in DPKG_FAMILY:
            return "dpkg"
        if word in RPM_FAMILY:
            return "rpm"
    return None


def node_manager(path=OS_RELEASE):
    """:func:`native_manager` of this node (None when the file cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return native_manager(handle.read())
    except OSError:
        return None


def query(names, run, prefer=None):
    """``(manager, {name: version})`` for the installed packages among ``names``; manager ``dpkg`` or ``rpm``.

    The database ``prefer`` names (the node's own, :func:`node_manager`) is asked first, else dpkg; the other
    only when the first's command is not there. The version is dpkg's (with its epoch) or rpm's
    ``EPOCH:VERSION-RELEASE.ARCH`` (``(none)`` for no epoch). Raises :class:`PackageError` when neither command
    is there.
    """
    names = list(names)
    if not names:  # dpkg-query and rpm would list every package
        return None, {}
    databases = [("dpkg", DPKG_QUERY), ("rpm", RPM_QUERY)]
    if prefer == "rpm":
        databases.reverse()
    for manager, argv in databases:
        rc, stdout, dummy = run(argv + names)
        if rc is not None:
            return manager, _installed(stdout, names)
    raise PackageError("neither dpkg-query nor rpm is installed: cannot read the installed packages")


def _installed(stdout, names):
    """name -> version of the installed packages the query printed. A package that is not installed: dpkg-query
    names it on stderr (rc 1), rpm prints "is not installed" on stdout; dpkg's "config-files" is not installed."""
    installed = {}
    wanted = set(names)
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] in wanted and parts[2] == "installed":
            installed[parts[0]] = parts[1]
    return installed


def comparable_version(manager, version):
    """The part of an installed version a pin is compared with: dpkg's whole version, rpm's VERSION."""
    if manager != "rpm":
        return version
    rest = version.split(":", 1)[1] if ":" in version else version
    return rest.rsplit("-", 1)[0] if "-" in rest else rest


def fits(version, pin, match):
    """Whether an installed (comparable) version matches the pin."""
    if match == "prefix":
        return version.startswith(pin)
    return version == pin or version.startswith(pin + "-")


def spec(manager, name, pin, match):
    """The package manager's spec for ``name`` at ``pin``."""
    if manager == "rpm":
        return "%s-%s" % (name, pin)
    return "%s=%s%s" % (name, pin, "*" if match == "prefix" else "-*")


def plan(manager, installed, names, version="", versioned=None, match="prefix", absent=()):
    """What an install of ``names`` (``versioned`` ones at ``version``) and removal of ``absent`` would change.

    Returns a dict: ``missing``, ``off_pin`` (installed at another version), ``unwanted`` (of ``absent``, the
    installed ones), ``install_needed``, ``specs`` (``names`` for the package manager, pinned where asked) and
    ``installed`` (name: version, of every name asked about).
    """
    if match not in MATCHES:
        raise PackageError("match must be one of %s, not %r" % (", ".join(MATCHES), match))
    names = list(names)
    pinned = list(names if versioned is None else versioned)
    stray = [name for name in pinned if name not in names]
    if stray:
        raise PackageError("versioned names that are not among the names: %s" % ", ".join(stray))
    missing = [name for name in names if name not in installed]
    off_pin = [] if not version else [
        name for name in pinned
        if name in installed and not fits(comparable_version(manager, installed[name]), version, match)]
    specs = [spec(manager, name, version, match) if version and name in pinned else name for name in names]
    asked = names + [name for name in absent if name not in names]
    return {
        "missing": missing,
        "off_pin": off_pin,
        "unwanted": [name for name in absent if name in installed],
        "install_needed": bool(missing or off_pin),
        "specs": specs,
        "installed": {name: installed.get(name) for name in asked},
    }
