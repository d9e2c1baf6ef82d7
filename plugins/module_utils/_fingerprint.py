# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The drift fingerprint of a node: one digest per thing the collection manages on it.

A converge records, on each node, the list of what it manages there (``items``) with the digest of each and a
digest of the inputs that produced them (the run's variables, the collection). The drift check recomputes the
digests of the recorded items and compares: a node whose items and inputs all match is clean, and nothing more
needs to run on it; any difference (or no record at all) sends it through the full check.

Items, by kind (each a list of names):

``paths``     files and directories (a directory: every entry below it, recursively): type, mode, owner, group
              and content (sha256) or link target; ``absent`` when missing.
``packages``  installed package versions (dpkg or rpm), ``absent`` when not installed.
``services``  systemd units: active state, sub-state and unit-file state (enabled, masked...).
``groups``    group id and members (``/etc/group`` through ``grp``).
``members``   (a mapping: group -> the members the inventory names) a member of the group that is not named is
              a difference in every check, with its name, also when the converge that recorded the node saw it
              already: the docker group is root on the node, and a member added by hand is drift until the
              inventory names it.
``images``    the local Docker image id of each reference.
``manifests`` the registry's digest of each image reference (``registry/repository:tag``), asked with the
              node's own registry login and trust (an image replaced in the registry behind the collection's back).
``json_keys`` (a mapping: JSON file -> the top-level keys a role sets in it) the value of each key; the file's own
              ``paths`` item then covers its type, mode and owner only, so that a key another role or the site owns
              is nobody's drift and a changed key names the role that sets it (daemon.json has three).
``node``      (true/false) the node facts the roles read: machine, host name, OS release.
``gpus``      (true/false) the GPU facts (NVML, through whatever driver the node has) and the CPU facts.

Nothing here imports Ansible: the command runner and the GPU fact reader are passed in.
"""

from __future__ import annotations

import grp
import hashlib
import json
import os
import platform
import stat
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _packages as _package_db

KINDS = ("paths", "packages", "services", "groups", "members", "json_keys", "images", "manifests", "node", "gpus")
# The kinds that map a name to a list (the others: lists of names, or switches).
MAPPINGS = ("members", "json_keys")
# Each named kind's key prefix: its items are the keys ``<prefix>:<name>`` of the state and of the differences
# (json_keys: ``json:<path>#<key>``); ``node`` and ``gpus`` are keys of their own.
KEY_PREFIX = {"paths": "path", "json_keys": "json", "packages": "package", "services": "service", "groups": "group",
              "images": "image", "manifests": "manifest", "members": "members"}
RECORD_VERSION = 1
# Registry requests in flight at once (one per recorded manifest, up to this many).
MANIFEST_REQUESTS = 8


class FingerprintError(Exception):
    """Bad items (a relative path, an unknown kind)."""


def _sha256(data):
    return hashlib.sha256(data).hexdigest()


def canonical_items(items):
    """``items`` checked and canonical: every list kind a sorted list of unique strings, ``node``/``gpus`` true or
    left out; unknown kinds refused. A list of such mappings (one per role) is merged: lists joined, switches or-ed."""
    if isinstance(items, (list, tuple)):
        merged = {}
        for part in items:
            for kind, value in canonical_items(part).items():
                if kind in MAPPINGS:
                    have = merged.setdefault(kind, {})
                    for name, names in value.items():
                        have[name] = sorted(set(have.get(name, [])) | set(names))
                else:
                    merged[kind] = True if value is True else sorted(set(merged.get(kind) or []) | set(value))
        return merged
    if not isinstance(items, dict):
        raise FingerprintError("items must be a mapping of kinds (%s)" % ", ".join(KINDS))
    unknown = sorted(str(kind) for kind in items if kind not in KINDS)
    if unknown:
        raise FingerprintError("unknown item kind(s) %s; the kinds are %s" % (", ".join(unknown), ", ".join(KINDS)))
    out = {}
    for kind in KINDS:
        if kind in ("node", "gpus"):  # switches: the node's own facts
            if items.get(kind):
                out[kind] = True
            continue
        if kind in MAPPINGS:
            value = _canonical_mapping(kind, items.get(kind))
            if value:
                out[kind] = value
            continue
        names = items.get(kind) or []
        if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple, set)):
            raise FingerprintError("items.%s must be a list of names, got %r" % (kind, names))
        names = sorted({str(name) for name in names if name is not None and str(name) != ""})
        if kind == "paths":
            relative = [name for name in names if not os.path.isabs(name)]
            if relative:
                raise FingerprintError("items.paths must be absolute: %s" % ", ".join(relative))
            names = sorted({os.path.normpath(name) for name in names})
        if names:
            out[kind] = names
    return out


def _canonical_mapping(kind, value):
    what = {"members": ("each group", "user names"), "json_keys": ("each JSON file", "top-level keys")}[kind]
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FingerprintError("items.%s must map %s to a list of %s, got %r" % (kind, what[0], what[1], value))
    out = {}
    for name, names in value.items():
        names = names or []
        if isinstance(names, (str, bytes)) or not isinstance(names, (list, tuple, set)):
            raise FingerprintError("items.%s.%s must be a list of %s, got %r" % (kind, name, what[1], names))
        name = str(name)
        if kind == "json_keys":
            if not os.path.isabs(name):
                raise FingerprintError("items.json_keys must name absolute paths: %s" % name)
            name = os.path.normpath(name)
        out[name] = sorted({str(entry) for entry in names if entry is not None and str(entry) != ""})
    return out


# ---------------------------------------------------------------- paths


def _entry_digest(path, st, content=True):
    head = "%o:%d:%d" % (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
    if stat.S_ISLNK(st.st_mode):
        return "link:%s:%s" % (head, os.readlink(path))
    if stat.S_ISREG(st.st_mode) and not content:
        return "file:%s" % head
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return "file:%s:%s" % (head, digest.hexdigest())
    if stat.S_ISDIR(st.st_mode):
        return "dir:%s" % head
    return "other:%s:%o" % (head, stat.S_IFMT(st.st_mode))


def path_digest(path, content=True):
    """One path's digest; a directory's covers every entry below it (names, metadata, contents). Without
    ``content``, a file's digest covers its type, mode and owner only (its keys are items of their own)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "absent"
    except OSError as err:
        return "unreadable:%s" % (err.strerror or err)
    if not stat.S_ISDIR(st.st_mode):
        return _sha256(_entry_digest(path, st, content).encode())
    lines = [".\t" + _entry_digest(path, st)]
    for top, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(dirs + files):
            full = os.path.join(top, name)
            try:
                lines.append("%s\t%s" % (os.path.relpath(full, path), _entry_digest(full, os.lstat(full))))
            except OSError as err:
                lines.append("%s\tunreadable:%s" % (os.path.relpath(full, path), err.strerror or err))
    return _sha256("\n".join(lines).encode("utf-8", "surrogateescape"))


# ---------------------------------------------------------------- packages, services, images


def _packages(names, run):
    """name -> version (or ``absent``) from the node's own package database; ``unknown`` when none is there."""
    try:
        dummy, installed = _package_db.query(names, run, _package_db.node_manager())
    except _package_db.PackageError:
        return {name: "unknown" for name in names}
    return {name: installed.get(name, "absent") for name in names}


def _services(names, run):
    """unit -> ``active-state/sub-state/unit-file-state`` from one ``systemctl show``."""
    out = {name: "unknown" for name in names}
    rc, stdout, dummy = run(["systemctl", "show", "--property=Id,ActiveState,SubState,UnitFileState", "--"] + list(names))
    if rc is None:
        return out
    blocks = stdout.strip().split("\n\n")
    for name, block in zip(names, blocks):  # systemctl show prints one block per unit, in order
        values = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        out[name] = "%s/%s/%s" % (values.get("ActiveState", ""), values.get("SubState", ""),
                                  values.get("UnitFileState", ""))
    return out


def _groups(names):
    out = {}
    for name in names:
        try:
            entry = grp.getgrnam(name)
        except KeyError:
            out[name] = "absent"
        else:
            out[name] = "%d:%s" % (entry.gr_gid, ",".join(sorted(entry.gr_mem)))
    return out


def _images(names, run):
    out = {}
    for name in names:
        rc, stdout, dummy = run(["docker", "image", "inspect", "--format", "{{.Id}}", name])
        out[name] = stdout.strip() if rc == 0 else ("absent" if rc is not None else "no docker")
    return out


def _json_keys(files):
    """``path#key`` -> the key's value (JSON text), ``absent``, or why the file has none (missing, not JSON)."""
    out = {}
    for path, keys in files.items():
        try:
            with open(path, "rb") as handle:
                document = json.loads(handle.read().decode("utf-8"))
        except FileNotFoundError:
            document = "file absent"
        except (OSError, ValueError) as err:
            document = "file unreadable: %s" % type(err).__name__
        if isinstance(document, str):
            values = dict.fromkeys(keys, document)
        elif not isinstance(document, dict):
            values = dict.fromkeys(keys, "file not a JSON object")
        else:
            values = {key: json.dumps(document[key], sort_keys=True) if key in document else "absent" for key in keys}
        out.update((_json_key(path, key), value) for key, value in values.items())
    return out


def _json_key(path, key):
    return "%s#%s" % (path, key)


def _key(kind, name):
    return "%s:%s" % (KEY_PREFIX[kind], name)


def _node():
    release = {}
    try:
        with open("/etc/os-release", encoding="utf-8") as handle:
            for line in handle:
                key, sep, value = line.strip().partition("=")
                if sep and key in ("ID", "VERSION_ID"):
                    release[key] = value.strip('"')
    except OSError:
        pass
    return json.dumps({"machine": platform.machine(), "node": platform.node(), "release": release}, sort_keys=True)


# ---------------------------------------------------------------- the fingerprint


def compute(items, run, gpu_facts=None, manifest_digest=None):
    """``key -> digest`` for canonical ``items``. ``run(argv)`` returns ``(rc, stdout, stderr)``, rc None when the
    command is not there; ``gpu_facts()`` returns the node's GPU facts (a dict); ``manifest_digest(reference)``
    the registry's digest of an image reference (or why there is none). The registry is asked for all the
    manifests at once, while the rest is read: each request waits on the network and the registry's password
    check, not on this node."""
    state = {}
    manifests = items.get("manifests", []) if manifest_digest else []
    with ThreadPoolExecutor(max_workers=max(1, min(MANIFEST_REQUESTS, len(manifests)))) as pool:
        asked = {name: pool.submit(manifest_digest, name) for name in manifests}
        keyed = items.get("json_keys", {})
        for name in items.get("paths", []):
            state[_key("paths", name)] = path_digest(name, content=name not in keyed)
        for kind, values in (("json_keys", _json_keys(keyed)),
                             ("packages", _packages(items.get("packages", []), run) if items.get("packages") else {}),
                             ("services", _services(items.get("services", []), run) if items.get("services") else {}),
                             ("groups", _groups(items.get("groups", []))),
                             ("images", _images(items.get("images", []), run) if items.get("images") else {}),
                             ("manifests", {name: asked[name].result() if name in asked else "unknown"
                                            for name in items.get("manifests", [])})):
            for name, value in values.items():
                state[_key(kind, name)] = _sha256(value.encode())
    if items.get("node"):
        state["node"] = _sha256(_node().encode())
    if items.get("gpus"):
        facts = gpu_facts() if gpu_facts else {}
        state["gpus"] = _sha256(json.dumps(facts, sort_keys=True, default=str).encode())
    return state


def record_text(items, inputs, state, owned=None):
    """The record file's text (JSON, sorted); ``owned`` (owner -> canonical items) when the items came with their
    owners."""
    record = {"version": RECORD_VERSION, "inputs": inputs, "items": items, "state": state}
    if owned:
        record["owned_items"] = owned
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def canonical_owned(owned):
    """``owner -> canonical items`` (:func:`canonical_items` of each owner's)."""
    if not isinstance(owned, dict):
        raise FingerprintError("owned_items must map each owner to its items, got %r" % (owned,))
    return {str(owner): canonical_items(items) for owner, items in sorted(owned.items())}


def item_keys(items):
    """The keys of :func:`compute` (and of :func:`differences`) that canonical ``items`` give."""
    keys = []
    for kind in KEY_PREFIX:
        value = items.get(kind) or {}
        names = ([_json_key(path, key) for path, keys_of in value.items() for key in keys_of]
                 if kind == "json_keys" else list(value))  # members: the group names
        keys += [_key(kind, name) for name in names]
    return keys + [kind for kind in ("node", "gpus") if items.get(kind)]


def owners(owned):
    """``key -> sorted owners`` from ``owner -> items`` (each owner's items, as :func:`canonical_items` takes
    them; a role that names an item another role names too shares it)."""
    out = {}
    for owner, items in sorted(owned.items()):
        for key in item_keys(canonical_items(items)):
            out.setdefault(key, set()).add(str(owner))
    return {key: sorted(names) for key, names in out.items()}


def owners_of(record, found):
    """The owners of what :func:`differences` ``found``, sorted (``[]`` when nothing differs); None when a
    difference has none: no record, the inputs, the node's or the GPUs' facts (what roles read, rather than
    manage), or a record written without owners."""
    if not found:
        return []
    owned = (record or {}).get("owned_items")
    try:
        recorded = owners(owned) if isinstance(owned, dict) else None
    except FingerprintError:
        recorded = None
    if not recorded:
        return None
    out = set()
    for key in found:
        key = key.split(" (", 1)[0]  # members:<group> (not named by the inventory: ...)
        if key in READ_KEYS or not recorded.get(key):
            return None
        out.update(recorded[key])
    return sorted(out)


def load_record(text):
    """The record from its text, or None when it is missing, unreadable or of another version."""
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("version") != RECORD_VERSION:
        return None
    if not isinstance(record.get("items"), dict) or not isinstance(record.get("state"), dict):
        return None
    return record


def unlisted_members(items):
    """``group -> sorted names`` of the members of each group of ``items["members"]`` that it does not name (groups
    without such a member, or absent, left out)."""
    out = {}
    for group, named in (items.get("members") or {}).items():
        try:
            have = grp.getgrnam(group).gr_mem
        except KeyError:
            continue
        extra = sorted(set(have) - set(named))
        if extra:
            out[group] = extra
    return out


# What the roles read about a node rather than what they manage on it: a difference in one of these can change
# what a role writes on another host (the LSF master's files describe every node's GPUs and platform, from its
# facts and its variables). Any other difference is in what the node's own roles manage there, which they put
# back from the same inputs.
READ_KEYS = ("no record", "inputs", "node", "gpus")


def inputs_match(found):
    """Whether :func:`differences` ``found`` leaves the record, the inputs and the node's facts as recorded (the
    node may still differ in what its roles manage on it)."""
    return not any(key in READ_KEYS for key in found)


def differences(record, inputs, state, unlisted=None):
    """What differs between ``record`` and the node now: a sorted list of keys (``inputs``, ``path:/etc/...``),
    ``["no record"]`` when there is none; then ``members:<group> (not named by the inventory: <names>)`` for each
    group of ``unlisted`` (:func:`unlisted_members`), record or not. Names only, never values (but the names of
    the members nobody named)."""
    extra = ["%s (not named by the inventory: %s)" % (_key("members", group), ", ".join(names))
             for group, names in sorted((unlisted or {}).items())]
    if record is None:
        return ["no record"] + extra
    out = [] if record.get("inputs") == inputs else ["inputs"]
    keys = set(record["state"]) | set(state)
    out += sorted(key for key in keys if record["state"].get(key) != state.get(key))
    return out + extra
