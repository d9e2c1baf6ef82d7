# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""What the controller derives from the image catalogue and the nodes' platforms: LSF resources,
Slurm features, registry index features, the registry host's builds.

The node side (the catalogue's validation, the node's platform, the variant rule, the node's resolver
command) is ``_image_catalogue.py``, which is copied to every node as a standalone program; this file
imports it, never the reverse, so the nodes do not carry what only the controller uses.

LSF host resources (:func:`lsf_resources`, definitions in :data:`LSF_RESOURCES`): static
``Numeric`` resources with integer values only (LSF resource names allow letters, digits and
``_``; a ``-`` or ``.`` in a value would be read as an operator in a ``select[]`` string, and
``name=value`` in lsf.cluster wants an alphanumeric value). A resource the node lacks (no GPU,
unknown level) is left out, so the host does not have it at all::

    x86_64_level      1..4, the x86-64 psABI level        bsub -R "select[x86_64_level>=3]"
    power_generation  8, 9, 10 on ppc64le                 bsub -R "select[power_generation>=9]"
    nvidia_driver     driver branch (major), 535          bsub -R "select[nvidia_driver>=535]"
    cuda_version      newest CUDA the driver supports,    bsub -R "select[cuda_version>=12020]"
                      1000*major + 10*minor (NVML's and CUDA_VERSION's encoding: 12.2 -> 12020)
    compute_cap_min   lowest GPU compute capability,      bsub -R "select[compute_cap_min>=80]"
                      10*major + minor (8.0 -> 80, 8.6 -> 86)
    compute_cap_max   highest GPU compute capability      bsub -R "select[compute_cap_max<90]"

Combined: ``bsub -R "select[x86_64_level>=3 && cuda_version>=12020 && compute_cap_min>=80]"``.
LSF's own GPU resources (``ngpus``, ``gpu_driver``, ``gpu_model...``) start with ``gpu_`` or
``ngpus``; these names avoid both.

Slurm node features (:func:`slurm_features`, and :data:`SLURM_FEATURES_OWNED`, the pattern of the
words it writes): the node's architecture, CPU level, ``cudaX.Y``, ``nvidiaNNN`` and ``sm_XY``.

Registry index (:func:`index_features`, :func:`image_index`, :func:`builds`): a logical image's
variants as one registry index of one repository, each tag with OCI ``platform.features`` words, and
the variants a build host of one architecture makes.
"""

from __future__ import annotations

from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_catalogue import (
    _IMAGE_RE,
    CatalogueError,
    _cc,
    _cpu_rank,
    _entry,
    _version,
    check_platform,
    normalize_architecture,
    validate,
)

__all__ = [
    "LSF_RESOURCES", "SLURM_FEATURES_OWNED", "lsf_resources", "slurm_features", "index_features", "image_index",
    "builds",
]

# Static host resources for lsf.shared (Resource section) and lsf.cluster (ResourceMap / Host RESOURCES).
# Numeric needs INCREASING (OpenLava drops a Numeric row without it); a higher value is a more capable
# host, not a more loaded one, so N.
LSF_RESOURCES = (
    {"name": "x86_64_level", "type": "Numeric", "increasing": False, "description": "x86-64 psABI level 1 to 4"},
    {"name": "power_generation", "type": "Numeric", "increasing": False, "description": "IBM POWER generation 8 9 10"},
    {"name": "nvidia_driver", "type": "Numeric", "increasing": False, "description": "NVIDIA driver branch"},
    {"name": "cuda_version", "type": "Numeric", "increasing": False,
     "description": "newest CUDA the driver supports as 1000 x major + 10 x minor"},
    {"name": "compute_cap_min", "type": "Numeric", "increasing": False,
     "description": "lowest GPU compute capability as 10 x major + minor"},
    {"name": "compute_cap_max", "type": "Numeric", "increasing": False,
     "description": "highest GPU compute capability as 10 x major + minor"},
)


# ---------------------------------------------------------------- LSF


def lsf_resources(node_platform):
    """The node as static LSF Numeric resources (names and encodings in the module docstring).

    Returns ``{name: int}``; a resource the node does not have is left out.
    """
    node = check_platform(node_platform)
    resources = {}
    rank = _cpu_rank(node["architecture"], node["cpu_level"])
    if rank is not None:
        resources["x86_64_level" if node["architecture"] == "x86_64" else "power_generation"] = rank
    if node["driver"]:
        resources["nvidia_driver"] = _version(node["driver"])[0]
    if node["cuda"]:
        parts = _version(node["cuda"]) + (0,)
        resources["cuda_version"] = 1000 * parts[0] + 10 * parts[1]
    if node["compute_capabilities"]:
        values = [10 * major + minor for major, minor in (_cc(text) for text in node["compute_capabilities"])]
        resources["compute_cap_min"] = min(values)
        resources["compute_cap_max"] = max(values)
    return resources


# ---------------------------------------------------------------- Slurm

# The node features :func:`slurm_features` writes; a site's own features (kept) never look like these.
SLURM_FEATURES_OWNED = r"\A(?:x86_64|ppc64le|aarch64|x86-64-v[1-4]|POWER[0-9]+|cuda[0-9]+\.[0-9]+|nvidia[0-9]+|sm_[0-9]+)\Z"


def slurm_features(node_platform):
    """The node as Slurm node features (``Features`` in slurm.conf), in the words of :func:`index_features`: its
    architecture, CPU level (``x86-64-v3``, ``POWER9``), ``cuda12.2`` (the newest CUDA its driver supports),
    ``nvidia535`` (the driver branch) and ``sm_80`` for each compute capability of its GPUs."""
    node = check_platform(node_platform)
    features = [node["architecture"]]
    if node["cpu_level"]:
        features.append(node["cpu_level"])
    if node["cuda"]:
        features.append("cuda%d.%d" % (_version(node["cuda"]) + (0,))[:2])
    if node["driver"]:
        features.append("nvidia%d" % _version(node["driver"])[0])
    for capability in node["compute_capabilities"]:
        word = "sm_%d%d" % _cc(capability)
        if word not in features:
            features.append(word)
    return features


# ---------------------------------------------------------------- registry index


def index_features(variant):
    """What a (validated) variant needs beyond its architecture, as OCI ``platform.features`` words:
    its CPU level (``x86-64-v4``, ``POWER9``), ``cuda12.2``, ``driver535.54.03``, ``sm_80`` for each compute
    capability it has machine code for and ``compute_80`` for the PTX of the highest (CUDA's own names)."""
    features = []
    if variant.get("cpu_level"):
        features.append(variant["cpu_level"])
    if variant.get("cuda"):
        features.append("cuda" + variant["cuda"])
    if variant.get("driver"):
        features.append("driver" + variant["driver"])
    capabilities = [_cc(text) for text in variant.get("compute_capabilities") or []]
    features += ["sm_%d%d" % cc for cc in capabilities]
    if variant.get("ptx") and capabilities:
        features.append("compute_%d%d" % max(capabilities))
    return sorted(features)


def image_index(catalogue, logical_name):
    """The variants of ``logical_name`` as one registry index: ``{registry, repository, images, features}``
    (``images``: the variants' tags; ``features``: tag -> :func:`index_features`). CatalogueError when the variants
    are not tags of one repository (an index holds the manifests of one repository)."""
    entry = _entry(validate(catalogue), logical_name)
    places, tags, features = set(), [], {}
    for variant in entry["variants"]:
        match = _IMAGE_RE.match(variant["image"])
        if not match.group("tag") or match.group("digest"):
            raise CatalogueError("%s: variant %s: %s is not a tag (an index entry is published from a tag)"
                                 % (logical_name, variant["name"], variant["image"]))
        name = variant["image"][:match.start("tag") - 1]
        host, sep, repository = name.partition("/")
        if not sep or not ("." in host or ":" in host or host == "localhost"):
            raise CatalogueError("%s: variant %s: %s names no registry host" % (logical_name, variant["name"], variant["image"]))
        places.add((host, repository))
        if match.group("tag") in features:
            raise CatalogueError("%s: two variants are the same image %s" % (logical_name, variant["image"]))
        tags.append(match.group("tag"))
        features[match.group("tag")] = index_features(variant)
    if len(places) != 1:
        raise CatalogueError("%s: the variants are in %d repositories (%s); an index holds one repository's images"
                             % (logical_name, len(places), ", ".join(sorted("%s/%s" % p for p in places))))
    (host, repository), = places
    return {"registry": host, "repository": repository, "images": tags, "features": features}


def builds(catalogue, sources, architecture, index_tag=""):
    """The variants a host of ``architecture`` builds: those of its architecture that ``sources`` names, as
    ``logical/variant`` (``{"deeplearning/cuda12-sm80": {"context": dir} or {"archive": tar}}``), in catalogue
    order. Each: ``logical``, ``name``, ``image``, ``tag``, ``registry``, ``repository``, ``features`` (the index's
    platform features), ``source`` and ``index`` (``registry/repository:index_tag``, the logical image's index
    of variants; None without ``index_tag``). CatalogueError for a source that names no variant, or one with neither or
    both of ``context`` and ``archive``."""
    catalogue = validate(catalogue)
    if not isinstance(sources, dict):
        raise CatalogueError("the variant sources must be a mapping of logical/variant names, got %s"
                             % type(sources).__name__)
    known = ["%s/%s" % (logical, variant["name"]) for logical in catalogue for variant in catalogue[logical]["variants"]]
    unknown = sorted(str(key) for key in sources if key not in known)
    if unknown:
        raise CatalogueError("the variant sources name %s, which no variant of the catalogue is (its variants: %s)"
                             % (", ".join(unknown), ", ".join(known) or "none"))
    for key, source in sorted(sources.items()):
        if not isinstance(source, dict) or len({"context", "archive"} & set(source)) != 1:
            raise CatalogueError("variant source %s: give either context (a build directory) or archive (an image "
                                 "tar), got %r" % (key, source))
    architecture = normalize_architecture(architecture)
    out = []
    for logical in catalogue:
        mine = [variant for variant in catalogue[logical]["variants"]
                if "%s/%s" % (logical, variant["name"]) in sources and variant["architecture"] == architecture]
        if not mine:
            continue
        index = image_index(catalogue, logical)
        for variant in mine:
            tag = _IMAGE_RE.match(variant["image"]).group("tag")
            out.append({"logical": logical, "name": variant["name"], "image": variant["image"], "tag": tag,
                        "registry": index["registry"], "repository": index["repository"],
                        "features": index["features"][tag], "source": sources["%s/%s" % (logical, variant["name"])],
                        "index": "%s/%s:%s" % (index["registry"], index["repository"], index_tag) if index_tag else None})
    return out
