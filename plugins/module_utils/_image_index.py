# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""A multi-architecture image index: one name, one image per platform.

A registry serves a tag either as one image manifest (one architecture) or as an
index (Docker's "manifest list", OCI's "image index") whose entries each name an
image manifest by digest and carry its ``platform``. ``docker pull`` of an index
takes the entry of the node's platform and fails when there is none.

This module is plain data: it reads manifests and image configurations as
parsed JSON, builds and merges indexes, and says what is missing. Fetching and
pushing is the caller's (``registry_image_index``).
"""

from __future__ import annotations

import hashlib
import json

from ansible_collections.hpc.gpu_containers.plugins.module_utils._platform import go_arch

__all__ = [
    "DOCKER_MANIFEST", "DOCKER_LIST", "OCI_MANIFEST", "OCI_INDEX", "MANIFEST_TYPES", "INDEX_TYPES",
    "ACCEPT_ANY", "ACCEPT_MANIFEST", "ImageIndexError", "platform_of", "with_features", "platform_key", "descriptor",
    "is_index", "merge", "render", "digest_of", "platforms_of", "entry_for", "missing_platform_message",
    "build_indexes",
]

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST_TYPES = (DOCKER_MANIFEST, OCI_MANIFEST)
INDEX_TYPES = (DOCKER_LIST, OCI_INDEX)
# Accept headers: without the index types a registry answers a tag that is an index with one of its
# entries (its default platform's), and the index itself is never seen.
ACCEPT_ANY = ", ".join(INDEX_TYPES + MANIFEST_TYPES)
ACCEPT_MANIFEST = ", ".join(MANIFEST_TYPES)


class ImageIndexError(Exception):
    """A manifest or index that cannot be used (wrong type, no platform, a missing entry)."""


def platform_of(config):
    """The platform of an image from its configuration blob: {os, architecture[, variant]}."""
    if not isinstance(config, dict) or not config.get("architecture") or not config.get("os"):
        raise ImageIndexError("the image configuration names no os/architecture")
    platform = {"architecture": go_arch(config["architecture"]), "os": str(config["os"])}
    if config.get("variant"):
        platform["variant"] = str(config["variant"])
    return platform


def with_features(platform, features):
    """``platform`` with ``features`` (the OCI platform's ``features`` list: what the image needs beyond its
    architecture, such as ``x86-64-v4`` or ``sm_80``), sorted; none given leaves it as it is."""
    features = sorted(set(features or ()))
    for feature in features:
        if not isinstance(feature, str) or not feature or any(c in feature for c in ", \t\n+"):
            raise ImageIndexError("feature %r: a feature is one word without ',' or '+'" % (feature,))
    return dict(platform, features=features) if features else dict(platform)


def platform_key(platform):
    """``linux/amd64``, ``linux/arm64/v8``, ``linux/amd64+sm_80,x86-64-v4`` (an entry with features)."""
    parts = [platform.get("os") or "?", platform.get("architecture") or "?"]
    if platform.get("variant"):
        parts.append(platform["variant"])
    key = "/".join(parts)
    if platform.get("features"):
        key += "+" + ",".join(sorted(platform["features"]))
    return key


def digest_of(body):
    """The registry's digest of a manifest's bytes."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def descriptor(media_type, body, platform):
    """An index entry for the manifest ``body`` (bytes, exactly as the registry serves it)."""
    if media_type not in MANIFEST_TYPES:
        raise ImageIndexError("an index entry must be an image manifest, not %s" % (media_type or "an unknown type"))
    return {"mediaType": media_type, "digest": digest_of(body), "size": len(body), "platform": dict(platform)}


def is_index(document, media_type=None):
    media_type = media_type or (document or {}).get("mediaType")
    return media_type in INDEX_TYPES or (media_type is None and "manifests" in (document or {}))


def _entries(index):
    if index is None:
        return []
    if not is_index(index):
        raise ImageIndexError("the tag is one image, not an index (it was pushed by docker push, not as an index)")
    entries = index.get("manifests")
    if not isinstance(entries, list):
        raise ImageIndexError("the index has no list of manifests")
    return entries


def merge(index, new_entries):
    """``index`` (None: there is none yet) with ``new_entries`` in it.

    An entry replaces the one of the same platform; entries of other platforms are kept (the
    architectures built elsewhere). Entries are ordered by platform, so the same set renders the
    same bytes. A single image under the tag (not an index) is replaced. The result is a Docker manifest list when every entry is a Docker manifest (every
    Docker engine pulls it), else an OCI image index. Returns (index, changed platforms).
    """
    replaced_single = index is not None and not is_index(index)
    if replaced_single:
        # A single image under the tag (an older release pushed one architecture): the index replaces it.
        index = None
    kept = {}
    for entry in _entries(index):
        platform = entry.get("platform") or {}
        kept[platform_key(platform)] = entry
    changed = []
    for entry in new_entries:
        key = platform_key(entry["platform"])
        old = kept.get(key)
        if old is None or old.get("digest") != entry["digest"] or old.get("mediaType") != entry["mediaType"]:
            changed.append(key)
        kept[key] = entry
    entries = [kept[key] for key in sorted(kept)]
    media_type = DOCKER_LIST if all(e.get("mediaType") == DOCKER_MANIFEST for e in entries) else OCI_INDEX
    if replaced_single:
        changed = changed or ["(a single image became an index)"]
    elif index is not None and index.get("mediaType", media_type) != media_type:
        changed = changed or ["(index type)"]
    return {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}, changed


def render(index):
    """The bytes pushed for ``index``: stable for the same content."""
    return (json.dumps(index, indent=3, sort_keys=False) + "\n").encode("utf-8")


def platforms_of(index):
    """``["linux/amd64", "linux/ppc64le"]`` of an index, in its order."""
    return [platform_key(entry.get("platform") or {}) for entry in _entries(index)]


def entry_for(index, architecture, os_name="linux"):
    """The index entry for a node of ``architecture`` (uname or Go spelling), or None."""
    want = go_arch(architecture)
    for entry in _entries(index):
        platform = entry.get("platform") or {}
        if go_arch(platform.get("architecture")) == want and (platform.get("os") or "linux") == os_name:
            return entry
    return None


def missing_platform_message(reference, architecture, platforms, os_name="linux"):
    """Why a node of ``architecture`` cannot use ``reference``: what it has, and what to do."""
    have = ", ".join(platforms) if platforms else "none"
    return ("%s has no image for %s/%s (it has: %s): build it on a %s node and add it to the index"
            % (reference, os_name, go_arch(architecture), have, architecture))


def build_indexes(builds):
    """The indexes a host publishes for the variants it builds (the image catalogue's ``builds``): one per logical
    image, in the order of its first variant - ``logical``, ``registry``, ``repository``, ``index`` (the index's
    reference, or None), ``images`` (the variants' tags) and ``features`` (tag -> platform features)."""
    out = {}
    for build in builds:
        entry = out.setdefault(build["logical"], {
            "logical": build["logical"], "registry": build["registry"], "repository": build["repository"],
            "index": build.get("index"), "images": [], "features": {}})
        entry["images"].append(build["tag"])
        entry["features"][build["tag"]] = build.get("features")
    return list(out.values())
