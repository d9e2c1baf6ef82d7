# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""CPU architecture names, in the spellings the tools around a GPU node use.

Pure Python, no Ansible. One architecture has several names: the kernel's (``uname -m``, Ansible's
``ansible_facts['architecture']``, RPM's), Go's (OCI image indexes, Docker manifest lists, ``docker inspect``)
and Debian's (dpkg, apt sources):

=========  =======  ========
kernel     Go/OCI   Debian
=========  =======  ========
x86_64     amd64    amd64
aarch64    arm64    arm64
ppc64le    ppc64le  ppc64el
=========  =======  ========

``machine`` reads any of them as the kernel's name; ``go_arch`` and ``deb_arch`` write the others. Names outside
the table (s390x, riscv64, ...) pass through ``machine`` unchanged, and ``go_arch`` knows the other Go names.

The image catalogue's resolver (``_image_catalogue.py``) is copied to nodes as a program of its own and imports
nothing from the collection: it keeps a copy of ``MACHINE_ALIASES``, which a unit test holds equal to this one.
"""

from __future__ import annotations

from ._hostvars import facts_of

# The architectures the collection supports, kernel spelling.
ARCHITECTURES = ("x86_64", "ppc64le", "aarch64")

# Other spellings of a supported architecture -> the kernel's.
MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "ppc64el": "ppc64le", "powerpc64le": "ppc64le"}

# Kernel spelling -> Go's (GOARCH), for architectures beyond the supported three too.
_GO = {
    "x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "ppc64": "ppc64", "s390x": "s390x",
    "armv7l": "arm", "armv6l": "arm", "arm": "arm", "i386": "386", "i686": "386", "386": "386",
    "riscv64": "riscv64",
}

# Kernel spelling -> Debian's.
_DEB = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64el", "i686": "i386", "armv7l": "armhf"}


def machine(name):
    """Any spelling -> the kernel's (``amd64`` -> ``x86_64``); '' for None; unknown names lower-cased."""
    key = str(name or "").strip().lower()
    return MACHINE_ALIASES.get(key, key)


def go_arch(name):
    """Any spelling -> Go's (``x86_64`` -> ``amd64``); None stays None; unknown names pass through."""
    if name is None:
        return None
    key = machine(name)
    return _GO.get(key, key)


def deb_arch(name):
    """Any spelling -> Debian's (``ppc64le`` -> ``ppc64el``); unknown names pass through."""
    key = machine(name)
    return _DEB.get(key, key)


def architecture_builder(architecture, candidates, hostvars, play_hosts, inventory_hosts, named=None, default=None):
    """The host that builds the images of ``architecture`` for the others: the one ``named`` gives for it, else
    the first of ``candidates`` (in the inventory) with that architecture, else ``default``.

    A candidate outside this play (``play_hosts``: a --limit slice without it, a node the drift fast path left
    out) ends the search: its architecture is not known here, so it is taken to be the builder, and the play's
    hosts only pull what it built.
    """
    architecture = machine(architecture)
    if named and named.get(architecture):
        return named[architecture]
    for host in candidates:
        if host not in inventory_hosts:
            continue
        if host not in play_hosts:
            return host
        if machine(facts_of(hostvars, host).get("architecture")) == architecture:
            return host
    return default
