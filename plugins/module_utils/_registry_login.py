# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The registry logins of a Docker host: the site registry and the upstream ones (NGC, Docker Hub, a vendor's).

Pure Python, no Ansible. A login is one registry and one account whose ``~/.docker/config.json`` holds it: the
connecting user's (``config_path`` None) and each account of ``container_registry_login_users``. The site
registry's accounts are the collection's own (``managed``): its password may be one the registry host does not
have yet in check mode. An upstream's are not: a refused login there is always a failure.

Nothing here returns a password except in the login entries themselves, which only a ``no_log`` task reads.
"""

from __future__ import annotations

import posixpath
import re

# host[:port], as Docker names a registry in ~/.docker/config.json and /etc/docker/certs.d
_REGISTRY = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$")
_UPSTREAM_KEYS = {"registry", "username", "password", "ca_src"}
MASK = "********"


class RegistryLoginError(ValueError):
    """An upstream entry or account that cannot be used, with the variable it comes from."""


def check_upstreams(upstreams):
    """The upstream entries, each checked: a registry name (host[:port], no scheme), a username and a
    password. The error names the entry by its position and registry, never its password."""
    if not isinstance(upstreams, (list, tuple)):
        raise RegistryLoginError("container_registry_upstreams must be a list, got %s" % type(upstreams).__name__)
    seen = set()
    checked = []
    for index, entry in enumerate(upstreams):
        where = "container_registry_upstreams[%d]" % index
        if not isinstance(entry, dict):
            raise RegistryLoginError("%s must be a dict with registry, username and password" % where)
        unknown = sorted(set(entry) - _UPSTREAM_KEYS)
        if unknown:
            raise RegistryLoginError("%s: unknown keys %s (known: %s)" % (
                where, ", ".join(unknown), ", ".join(sorted(_UPSTREAM_KEYS))))
        registry = str(entry.get("registry") or "")
        if not _REGISTRY.match(registry):
            raise RegistryLoginError(
                "%s: registry %r is not a registry name (host or host:port, as in nvcr.io; no scheme, no path)"
                % (where, registry))
        where = "%s (%s)" % (where, registry)
        if registry in seen:
            raise RegistryLoginError("%s is named twice in container_registry_upstreams" % where)
        seen.add(registry)
        for key in ("username", "password"):
            if not str(entry.get(key) or ""):
                raise RegistryLoginError("%s has no %s" % (where, key))
        checked.append(entry)
    return checked


def upstream_cas(upstreams):
    """Registry name -> CA file on the controller, for the upstreams with a CA of their own. No credentials."""
    return {str(e["registry"]): str(e["ca_src"]) for e in check_upstreams(upstreams) if e.get("ca_src")}


def login_accounts(lookups):
    """The accounts besides the connecting user that get the logins: [{name, home, uid, gid, config}], from the
    results of a ``getent passwd <name>`` loop over them (``fail_key: false``: each result's
    ``ansible_facts.getent_passwd`` maps the name to [password, uid, gid, gecos, home, shell], or to nothing when
    the host has no such account). One lookup per name, as sssd without enumeration answers an LDAP account by
    name only. An account the host does not have is an error: its pulls would fail without a login."""
    accounts = []
    for result in lookups or []:
        if result.get("skipped"):
            continue
        name = result.get("item")
        fields = (result.get("ansible_facts", {}).get("getent_passwd") or {}).get(name)
        if not fields or len(fields) < 5 or not fields[4]:
            raise RegistryLoginError(
                "container_registry_login_users: this host has no account '%s' (getent passwd %s)" % (name, name))
        home = posixpath.normpath(fields[4])
        accounts.append({"name": name, "uid": int(fields[1]), "gid": int(fields[2]), "home": home,
                         "config": posixpath.join(home, ".docker", "config.json")})
    return accounts


def login_entries(site, upstreams, accounts=None):
    """Every login of this host: ``site`` (the site registry's {registry, username, password}, or None when it
    asks for none) and the upstreams, each for the connecting user and for every account of ``accounts``
    (login_accounts). Each entry: registry, username, password, managed, account (None: the connecting user),
    config_path (None: the connecting user's default)."""
    registries = []
    if site:
        registries.append(dict(site, managed=True))
    registries.extend(dict(registry=e["registry"], username=e["username"], password=e["password"], managed=False)
                      for e in check_upstreams(upstreams))
    owners = [(None, None)] + [(a["name"], a["config"]) for a in accounts or []]
    return [dict(r, account=account, config_path=config) for r in registries for account, config in owners]


def mask(text, secrets):
    """``text`` with every non-empty secret replaced."""
    text = str(text)
    for secret in sorted({str(s) for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


_REFUSED = re.compile(r"\b401\b|unauthorized", re.IGNORECASE)


def login_failures(results, check_mode=False):
    """The failed logins of a docker_login loop's results (``failed_when: false``; a login that worked has a
    ``login_result``), each {registry, account, message, pending}, the message with every password of the loop
    masked. ``pending``: in check mode the site registry refused a password it is not given until the registry
    host converges (a change to report, not a failure)."""
    secrets = [r.get("item", {}).get("password") for r in results or []]
    failures = []
    for result in results or []:
        if result.get("skipped") or "login_result" in result:
            continue
        item = result.get("item", {})
        message = mask(result.get("msg") or "no message", secrets)
        account = item.get("account") or "the connecting user"
        failures.append({
            "registry": item.get("registry"), "account": account,
            "pending": bool(check_mode and item.get("managed") and _REFUSED.search(message)),
            "message": "Logging in to %s as '%s' (for %s) failed: %s" % (
                item.get("registry"), item.get("username"), account, message)})
    return failures
