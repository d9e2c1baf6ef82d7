# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""Platform-matched images: pick, per node, the variant of a logical image built for it.

Standard library only and no collection imports: the same file is the model of the
``image_variant`` module and, copied to a node, the command the job starter runs
(``python3 _image_catalogue.py [--explain] LOGICAL_NAME``, see :func:`main`). It holds the node side
only: the catalogue's validation, the node's platform, the variant rule and the node image names.
What the controller derives from the catalogue and the nodes' platforms (LSF resources, Slurm
features, registry index features, the registry host's builds) is in ``_image_platforms.py``,
which imports this file (never the reverse), so the nodes do not carry it.

Catalogue (data, e.g. JSON or role variables)::

    {LOGICAL_NAME: {"variants": [VARIANT, ...]}, ...}

    LOGICAL_NAME    letters, digits, ``.``, ``_``, ``-`` (first a letter or digit)
    VARIANT fields  (any other field is an error, so a misspelt requirement never goes unnoticed)
      name          required; unique within the logical image; same characters as LOGICAL_NAME
                    plus ``+``
      image         required; ``[registry[:port]/]repository:tag`` and/or ``@sha256:...``; a tag
                    or a digest is required (a bare name means ``latest``, which moves)
      architecture  required; ``x86_64``, ``ppc64le`` or ``aarch64`` (``amd64``, ``arm64``,
                    ``ppc64el``, ``powerpc64le`` are read as those)
      cpu_level     minimum CPU level: ``x86-64-v1`` .. ``x86-64-v4`` (x86-64 psABI levels) on
                    x86_64, ``POWER8``, ``POWER9``, ``POWER10``... on ppc64le; none on aarch64
      cuda          minimum CUDA version the node's driver must support, a string (``"12.2"``);
                    a YAML float is refused because ``12.10`` would read as 12.1
      driver        minimum NVIDIA driver version, a string (``"535.54.03"``)
      compute_capabilities  GPU compute capabilities the variant carries machine code for
                    (``["7.0", "8.0"]``); not empty when given
      ptx           bool, default false: the variant also carries PTX for its highest listed
                    capability, so the driver can JIT-compile it for newer GPUs (needs
                    ``compute_capabilities``)
      gpu           bool; default true when ``cuda``, ``driver`` or ``compute_capabilities`` is
                    given, else false. ``gpu: false`` with any of them is an error.

Platform (what :func:`platform` derives from the ``gpu_facts`` module's output; also the
content of the node's platform file, :func:`render_platform`)::

    {"architecture": "x86_64", "cpu_level": "x86-64-v3" | "POWER9" | null,
     "driver": "535.129.03" | null, "cuda": "12.2" | null,
     "compute_capabilities": ["8.0"]}     # sorted, unique; [] = no GPU

A node without GPU or driver is a normal platform (nulls and ``[]``); so is an unknown CPU level.

Selection rule (:func:`select`). A variant FITS the node when all of these hold:

1. its architecture is the node's;
2. it names no ``cpu_level``, or the node's level is known and at least that level (levels are
   ordered within an architecture: x86-64-v1 < .. < v4, POWER8 < POWER9 < POWER10);
3. when it needs a GPU: the node has a driver and at least one GPU, and
4. the node's CUDA version (the newest the driver supports) is at least ``cuda``, and the
   node's driver version is at least ``driver``; versions compare as dotted numbers
   (``12.10`` > ``12.2``, ``535.129.03`` > ``535.54.03``); an unknown node value fits no minimum;
5. every GPU of the node is covered by ``compute_capabilities``: natively, when the list has
   the GPU's major version with a minor at most the GPU's (machine code for X.y runs on X.z,
   z >= y: CUDA binary compatibility), or through PTX, when ``ptx`` is true and the GPU's
   capability is higher than the highest listed.

Among the variants that fit, the most specific wins; keys compared in this order, the first
difference decides:

1. a variant that uses the GPU before one that needs none;
2. a variant whose machine code runs every GPU natively before one that needs PTX JIT (which
   is compiled at every container start; a variant without ``compute_capabilities`` counts as
   native);
3. the higher ``cpu_level`` minimum (none lowest);
4. the higher ``cuda`` minimum (none lowest);
5. the higher ``driver`` minimum (none lowest);
6. the higher lowest listed compute capability: the build aimed closest at newer GPUs (none
   lowest);
7. catalogue order: the first listed wins a tie.

When none fits, :class:`NoFitError` names the node and every variant with all its reasons::

    powerai: no variant fits gpu01 (x86_64, x86-64-v3, driver 470.182.03, CUDA 11.4, cc 7.0):
    cuda12-v4: needs x86-64-v4 (node: x86-64-v3), needs CUDA 12.2 (driver supports 11.4);
    cuda12: needs CUDA 12.2 (driver supports 11.4)

(one line in practice). Variants are separated by ``; ``, a variant's reasons by ``, ``.

Node images (:func:`node_image`): a node keeps its variant of each logical image under one local name,
``localhost/hpc-node/<logical name>:node`` by default, which an LSF profile's ``image()``, srun-docker and a
plain ``docker run`` name, so that no job start has to resolve anything. ``--node-image REPOSITORY`` makes the
command print that name (still exit 3, with the reasons, when no variant fits).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys

__all__ = [
    "ARCHITECTURES", "DEFAULT_NODE_REPOSITORY", "ImageCatalogueError", "CatalogueError", "PlatformError", "NoFitError",
    "normalize_architecture", "validate", "validate_image", "platform", "check_platform", "describe_platform",
    "evaluate", "select", "render_platform", "render_catalogue", "node_image", "node_images", "main",
]

ARCHITECTURES = ("x86_64", "ppc64le", "aarch64")
# A copy of _platform.MACHINE_ALIASES (this file imports nothing from the collection); a unit test holds them equal.
_ARCH_ALIASES = {"amd64": "x86_64", "arm64": "aarch64", "ppc64el": "ppc64le", "powerpc64le": "ppc64le"}

# Where the role installs the files the command reads by default.
DEFAULT_CATALOGUE = "/etc/hpc-gpu-containers/images.json"
DEFAULT_PLATFORM = "/etc/hpc-gpu-containers/platform.json"

# The name a node keeps its variant of a logical image under: NODE_REPOSITORY/<logical name>:NODE_TAG.
DEFAULT_NODE_REPOSITORY = "localhost/hpc-node"
NODE_TAG = "node"

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_NO_FIT = 3

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_VARIANT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
# At most 9 digits a component and 8 components: int() of each is exact and cheap (a 5,000-digit one is refused).
_VERSION_RE = re.compile(r"^[0-9]{1,9}(?:\.[0-9]{1,9}){0,7}\Z")
_CC_RE = re.compile(r"^([0-9]{1,3})\.([0-9])\Z")
_X86_LEVEL_RE = re.compile(r"^x86[-_]64-v([1-4])\Z", re.IGNORECASE)
_POWER_RE = re.compile(r"^power([0-9]{1,3})\Z", re.IGNORECASE)
_ARCH_RE = re.compile(r"^[a-z0-9_]+\Z")
# The distribution reference grammar, narrowed: a domain is the first component when it has a
# '.' or ':' or is localhost; repository components are lower case; then :tag and/or @digest.
# Every pattern here ends in \Z, not $: $ also matches before a final newline, which would let a name or a
# reference with a newline through to the line the node's command prints.
_IMAGE_RE = re.compile(
    r"^(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)?)/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?\Z"
)

# A node image repository: a registry host first (so that a name the node lacks is never looked up on Docker Hub),
# then lower-case path components.
_REPOSITORY_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NODE_REPOSITORY_RE = re.compile(
    r"^(?:localhost|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::[0-9]+)"
    r"|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+)"
    r"(?:/%s)+\Z" % _REPOSITORY_COMPONENT)
_REPOSITORY_COMPONENT_RE = re.compile(r"^%s\Z" % _REPOSITORY_COMPONENT)

_FIELDS = ("name", "image", "architecture", "cpu_level", "cuda", "driver", "compute_capabilities", "ptx", "gpu")
_PLATFORM_FIELDS = ("architecture", "cpu_level", "driver", "cuda", "compute_capabilities")


class ImageCatalogueError(Exception):
    """Base of this module's errors; ``str()`` is the message to show."""


class CatalogueError(ImageCatalogueError, ValueError):
    """The catalogue is malformed, or names no such logical image."""


class PlatformError(ImageCatalogueError, ValueError):
    """The node's facts or platform file cannot be read as a platform."""


class NoFitError(ImageCatalogueError, LookupError):
    """No variant of a logical image fits the node; ``verdicts`` says why for each."""

    def __init__(self, message, logical_name, verdicts):
        super().__init__(message)
        self.logical_name = logical_name
        self.verdicts = verdicts


# ---------------------------------------------------------------- values


def normalize_architecture(value):
    """``uname -m`` / Docker / Debian spellings -> the uname spelling (``amd64`` -> ``x86_64``)."""
    value = (value or "").strip().lower() if isinstance(value, str) else ""
    return _ARCH_ALIASES.get(value, value)


def _version(text):
    """``"535.129.03"`` -> (535, 129, 3); trailing zeros dropped so ``12.2`` equals ``12.2.0``."""
    parts = [int(p) for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _cc(text):
    match = _CC_RE.match(text)
    return int(match.group(1)), int(match.group(2))


def _cc_text(values):
    return "/".join(values)


def _cpu_rank(architecture, level):
    """The order of a canonical level within its architecture, or None."""
    if level is None:
        return None
    if architecture == "x86_64":
        match = _X86_LEVEL_RE.match(level)
    elif architecture == "ppc64le":
        match = _POWER_RE.match(level)
    else:
        match = None
    return int(match.group(1)) if match else None


def _canonical_cpu_level(architecture, value):
    """A level as written -> its canonical spelling; ValueError says what is allowed."""
    if architecture == "x86_64":
        match = _X86_LEVEL_RE.match(value)
        if match:
            return "x86-64-v%s" % match.group(1)
        raise ValueError("%r is not an x86_64 level (x86-64-v1, x86-64-v2, x86-64-v3, x86-64-v4)" % value)
    if architecture == "ppc64le":
        match = _POWER_RE.match(value)
        if match and int(match.group(1)) >= 8:
            return "POWER%d" % int(match.group(1))
        raise ValueError("%r is not a ppc64le level (POWER8, POWER9, POWER10...)" % value)
    raise ValueError("%s has no CPU levels; leave cpu_level out" % (architecture or "this architecture"))


def _version_field(value, what):
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        if isinstance(value, float):
            raise ValueError("give the version as a string (%r, quoted): a YAML/JSON number loses digits (12.10 reads as 12.1)" % value)
        raise ValueError("expected a version string such as %s, got %r" % (what, value))
    text = str(value).strip()
    if not _VERSION_RE.match(text):
        raise ValueError("%r is not a dotted version such as %s" % (value, what))
    return text


def _cc_field(value):
    if isinstance(value, bool) or not isinstance(value, (str, float, int)):
        raise ValueError("expected a compute capability such as \"8.0\", got %r" % (value,))
    text = ("%d.0" % value) if isinstance(value, int) else str(value).strip()
    if not _CC_RE.match(text):
        raise ValueError("%r is not a compute capability such as \"8.0\" or \"8.6\"" % (value,))
    major, minor = _cc(text)
    return "%d.%d" % (major, minor)


# ---------------------------------------------------------------- catalogue


def _variant(logical_name, index, raw, seen):
    label = "variants[%d]" % index
    if isinstance(raw, dict) and isinstance(raw.get("name"), str) and _VARIANT_NAME_RE.match(raw["name"]):
        label = "variant %s (variants[%d])" % (raw["name"], index)

    def fail(field, problem):
        raise CatalogueError("%s: %s: %s: %s" % (logical_name, label, field, problem))

    if not isinstance(raw, dict):
        raise CatalogueError("%s: %s: expected a mapping of fields, got %s" % (logical_name, label, type(raw).__name__))
    unknown = sorted(str(key) for key in raw if key not in _FIELDS)
    if unknown:
        fail(unknown[0], "unknown field (known: %s)" % ", ".join(_FIELDS))

    name = raw.get("name")
    if not isinstance(name, str) or not name:
        fail("name", "required, a non-empty string")
    if not _VARIANT_NAME_RE.match(name):
        fail("name", "%r: use letters, digits, '.', '_', '+', '-' (first a letter or digit)" % name)
    if name in seen:
        fail("name", "%r is also the name of variants[%d]; names must be unique" % (name, seen[name]))
    seen[name] = index

    image = raw.get("image")
    if not isinstance(image, str) or not image:
        fail("image", "required, an image reference such as registry:5000/repo:tag")
    match = _IMAGE_RE.match(image)
    if not match:
        fail("image", "%r is not an image reference such as registry:5000/repo:tag" % image)
    if not match.group("tag") and not match.group("digest"):
        fail("image", "%r has no tag or digest (it would mean :latest, which changes under the node)" % image)

    architecture = raw.get("architecture")
    if not isinstance(architecture, str) or not architecture:
        fail("architecture", "required, one of %s" % ", ".join(ARCHITECTURES))
    architecture = normalize_architecture(architecture)
    if architecture not in ARCHITECTURES:
        fail("architecture", "%r is none of %s (or amd64, arm64, ppc64el)" % (raw["architecture"], ", ".join(ARCHITECTURES)))

    variant = {"name": name, "image": image, "architecture": architecture}
    cpu_level = raw.get("cpu_level")
    if cpu_level is not None:
        if not isinstance(cpu_level, str):
            fail("cpu_level", "expected a string such as x86-64-v3 or POWER9, got %r" % (cpu_level,))
        try:
            cpu_level = _canonical_cpu_level(architecture, cpu_level)
        except ValueError as err:
            fail("cpu_level", str(err))
    variant["cpu_level"] = cpu_level

    for field, example in (("cuda", "\"12.2\""), ("driver", "\"535.54.03\"")):
        value = raw.get(field)
        if value is not None:
            try:
                value = _version_field(value, example)
            except ValueError as err:
                fail(field, str(err))
        variant[field] = value

    capabilities = raw.get("compute_capabilities")
    if capabilities is not None:
        if not isinstance(capabilities, list) or not capabilities:
            fail("compute_capabilities", "expected a non-empty list such as [\"7.0\", \"8.0\"]; leave it out for none")
        normalized = set()
        for item in capabilities:
            try:
                normalized.add(_cc_field(item))
            except ValueError as err:
                fail("compute_capabilities", str(err))
        capabilities = sorted(normalized, key=_cc)
    variant["compute_capabilities"] = capabilities

    ptx = raw.get("ptx", False)
    if ptx is None:
        ptx = False
    if not isinstance(ptx, bool):
        fail("ptx", "expected true or false, got %r" % (ptx,))
    if ptx and capabilities is None:
        fail("ptx", "PTX is for the highest of compute_capabilities, which the variant does not list")
    variant["ptx"] = ptx

    needs_gpu_data = [f for f in ("cuda", "driver", "compute_capabilities") if variant[f] is not None]
    gpu = raw.get("gpu")
    if gpu is None:
        gpu = bool(needs_gpu_data)
    if not isinstance(gpu, bool):
        fail("gpu", "expected true or false, got %r" % (gpu,))
    if not gpu and needs_gpu_data:
        fail("gpu", "false, but the variant requires %s, which only a GPU node has" % " and ".join(needs_gpu_data))
    variant["gpu"] = gpu
    return variant


def validate_image(logical_name, entry):
    """One logical image's entry -> ``{"variants": [...]}`` with every field present and canonical.

    The result validates again to itself, so validated data may be passed anywhere raw data is.
    """
    if not isinstance(logical_name, str) or not _NAME_RE.match(logical_name):
        raise CatalogueError("%r: a logical image name is letters, digits, '.', '_', '-' (first a letter or digit)" % (logical_name,))
    if not isinstance(entry, dict):
        raise CatalogueError("%s: expected a mapping with 'variants', got %s" % (logical_name, type(entry).__name__))
    unknown = sorted(str(key) for key in entry if key != "variants")
    if unknown:
        raise CatalogueError("%s: %s: unknown field (a logical image has only 'variants')" % (logical_name, unknown[0]))
    variants = entry.get("variants")
    if not isinstance(variants, list) or not variants:
        raise CatalogueError("%s: variants: required, a non-empty list" % logical_name)
    seen = {}
    return {"variants": [_variant(logical_name, index, raw, seen) for index, raw in enumerate(variants)]}


def validate(catalogue):
    """The whole catalogue, validated and canonical (see the module docstring for the fields)."""
    if not isinstance(catalogue, dict):
        raise CatalogueError("the catalogue must be a mapping of logical image names, got %s" % type(catalogue).__name__)
    return {name: validate_image(name, catalogue[name]) for name in sorted(catalogue, key=str)}


def _entry(catalogue, logical_name):
    if not isinstance(catalogue, dict):
        raise CatalogueError("the catalogue must be a mapping of logical image names, got %s" % type(catalogue).__name__)
    if logical_name not in catalogue:
        known = ", ".join(sorted(str(name) for name in catalogue)) or "none"
        raise CatalogueError("no logical image %r in the catalogue (it has: %s)" % (logical_name, known))
    return validate_image(logical_name, catalogue[logical_name])


# ---------------------------------------------------------------- platform


def platform(gpu_facts):
    """The node's platform from the ``gpu_facts`` module's result (``ansible_facts.gpu_facts``).

    GPUs whose compute capability NVML did not report are left out; a node without GPU or driver
    gives ``driver``/``cuda`` null and ``compute_capabilities`` empty.
    """
    if not isinstance(gpu_facts, dict):
        raise PlatformError("gpu_facts: expected the gpu_facts module's result (a mapping), got %s" % type(gpu_facts).__name__)
    cpu = gpu_facts.get("cpu")
    if not isinstance(cpu, dict) or not cpu.get("architecture"):
        raise PlatformError("gpu_facts: no cpu.architecture (gather the facts with hpc.gpu_containers.gpu_facts)")
    architecture = normalize_architecture(cpu["architecture"])
    level = None
    if architecture == "x86_64" and cpu.get("x86_64_level"):
        level = "x86-64-%s" % cpu["x86_64_level"]
    elif architecture == "ppc64le" and cpu.get("power_generation"):
        level = cpu["power_generation"]
    gpus = gpu_facts.get("gpus") or []
    if not isinstance(gpus, list):
        raise PlatformError("gpu_facts: gpus: expected a list, got %s" % type(gpus).__name__)
    capabilities = [gpu.get("compute_capability") for gpu in gpus if isinstance(gpu, dict) and gpu.get("compute_capability")]
    try:
        return check_platform({
            "architecture": architecture,
            "cpu_level": level,
            "driver": gpu_facts.get("driver_version") or None,
            "cuda": gpu_facts.get("cuda_driver_version") or None,
            "compute_capabilities": capabilities,
        })
    except PlatformError as err:
        raise PlatformError("gpu_facts: %s" % err)


def check_platform(data):
    """A platform (e.g. read back from the platform file) -> canonical; PlatformError names the field.

    Fields other than the five are ignored, so an older command reads a newer file.
    """
    if not isinstance(data, dict):
        raise PlatformError("expected a mapping with %s, got %s" % (", ".join(_PLATFORM_FIELDS), type(data).__name__))
    architecture = data.get("architecture")
    if not isinstance(architecture, str) or not _ARCH_RE.match(normalize_architecture(architecture)):
        raise PlatformError("architecture: required, such as x86_64 or ppc64le, got %r" % (architecture,))
    architecture = normalize_architecture(architecture)
    level = data.get("cpu_level")
    if level is not None:
        if not isinstance(level, str):
            raise PlatformError("cpu_level: expected a string or null, got %r" % (level,))
        try:
            level = _canonical_cpu_level(architecture, level)
        except ValueError as err:
            raise PlatformError("cpu_level: %s" % err)
    result = {"architecture": architecture, "cpu_level": level}
    for field, example in (("driver", "\"535.129.03\""), ("cuda", "\"12.2\"")):
        value = data.get(field)
        if value is not None:
            if not isinstance(value, str) or not _VERSION_RE.match(value.strip()):
                raise PlatformError("%s: expected a version string such as %s or null, got %r" % (field, example, value))
            value = value.strip()
        result[field] = value
    capabilities = data.get("compute_capabilities")
    if capabilities is None:
        capabilities = []
    if not isinstance(capabilities, list):
        raise PlatformError("compute_capabilities: expected a list, got %r" % (capabilities,))
    normalized = set()
    for item in capabilities:
        try:
            normalized.add(_cc_field(item))
        except ValueError as err:
            raise PlatformError("compute_capabilities: %s" % err)
    result["compute_capabilities"] = sorted(normalized, key=_cc)
    return result


def describe_platform(node_platform):
    """``x86_64, x86-64-v3, driver 470.182.03, CUDA 11.4, cc 7.0`` (or ``..., no GPU``)."""
    parts = [node_platform["architecture"], node_platform["cpu_level"] or "CPU level unknown"]
    if node_platform["driver"]:
        parts.append("driver %s" % node_platform["driver"])
    if node_platform["cuda"]:
        parts.append("CUDA %s" % node_platform["cuda"])
    if node_platform["compute_capabilities"]:
        parts.append("cc %s" % _cc_text(node_platform["compute_capabilities"]))
    else:
        parts.append("no GPU" if node_platform["driver"] else "no GPU driver")
    return ", ".join(parts)


def render_platform(node_platform):
    """The node's platform file: canonical JSON, sorted keys, a trailing newline (a drift check compares bytes)."""
    return _render(check_platform(node_platform))


def render_catalogue(catalogue):
    """The catalogue file the node's command reads: validated, canonical, sorted keys, a trailing newline."""
    return _render(validate(catalogue))


def _render(data):
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"


# ---------------------------------------------------------------- selection


def _check(variant, node):
    """(reasons it does not fit, whether it fits only through PTX JIT)."""
    if variant["architecture"] != node["architecture"]:
        return ["built for %s (node: %s)" % (variant["architecture"], node["architecture"])], False
    reasons = []
    if variant["cpu_level"] is not None:
        need = _cpu_rank(variant["architecture"], variant["cpu_level"])
        have = _cpu_rank(node["architecture"], node["cpu_level"])
        if have is None:
            reasons.append("needs %s (node: CPU level unknown)" % variant["cpu_level"])
        elif have < need:
            reasons.append("needs %s (node: %s)" % (variant["cpu_level"], node["cpu_level"]))
    if not variant["gpu"]:
        return reasons, False
    capabilities = node["compute_capabilities"]
    if not node["driver"] or not capabilities:
        reasons.append("needs a GPU (node: %s)" % ("none" if node["driver"] else "no GPU driver"))
        return reasons, False
    if variant["cuda"] is not None:
        if node["cuda"] is None:
            reasons.append("needs CUDA %s (driver's CUDA version unknown)" % variant["cuda"])
        elif _version(node["cuda"]) < _version(variant["cuda"]):
            reasons.append("needs CUDA %s (driver supports %s)" % (variant["cuda"], node["cuda"]))
    if variant["driver"] is not None and _version(node["driver"]) < _version(variant["driver"]):
        reasons.append("needs driver %s (node: %s)" % (variant["driver"], node["driver"]))
    jit = False
    listed = variant["compute_capabilities"]
    if listed is not None:
        built = [_cc(text) for text in listed]
        uncovered = []
        for text in capabilities:
            major, minor = _cc(text)
            if any(b_major == major and b_minor <= minor for b_major, b_minor in built):
                continue
            if variant["ptx"] and (major, minor) > max(built):
                jit = True
                continue
            uncovered.append(text)
        if uncovered:
            reasons.append("compiled for cc %s%s (node: cc %s)" % (_cc_text(listed), " with PTX" if variant["ptx"] else "", _cc_text(uncovered)))
    return reasons, jit


def _rank(variant, jit, index):
    """The specificity key: a higher tuple wins (the module docstring's order)."""
    none = (-1,)
    return (
        1 if variant["gpu"] else 0,
        0 if jit else 1,
        _cpu_rank(variant["architecture"], variant["cpu_level"]) or -1,
        _version(variant["cuda"]) if variant["cuda"] else none,
        _version(variant["driver"]) if variant["driver"] else none,
        _cc(variant["compute_capabilities"][0]) if variant["compute_capabilities"] else none,
        -index,
    )


_PREFERENCE = (
    "it uses the GPU",
    "it runs the GPUs without PTX JIT",
    "higher CPU level",
    "higher CUDA minimum",
    "higher driver minimum",
    "built for newer GPUs",
    "listed first",
)


def evaluate(catalogue, logical_name, node_platform):
    """Every variant of ``logical_name`` with its verdict, in catalogue order, and the chosen one.

    Returns ``(chosen, verdicts)``: ``chosen`` is the winning variant or None; ``verdicts`` is a list
    of ``(variant, verdict)`` where the verdict is ``"chosen"``, ``"fits; NAME preferred (why)"``
    or the reasons it does not fit joined by ``", "``.
    """
    entry = _entry(catalogue, logical_name)
    node = check_platform(node_platform)
    checked = []
    for index, variant in enumerate(entry["variants"]):
        reasons, jit = _check(variant, node)
        checked.append((variant, reasons, _rank(variant, jit, index) if not reasons else None))
    fitting = [item for item in checked if item[2] is not None]
    chosen = max(fitting, key=lambda item: item[2]) if fitting else None
    verdicts = []
    for variant, reasons, rank in checked:
        if reasons:
            verdict = ", ".join(reasons)
        elif variant is chosen[0]:
            verdict = "chosen"
        else:
            position = next(i for i, (mine, best) in enumerate(zip(rank, chosen[2])) if mine != best)
            verdict = "fits; %s preferred (%s)" % (chosen[0]["name"], _PREFERENCE[position])
        verdicts.append((variant, verdict))
    return (chosen[0] if chosen else None), verdicts


def select(catalogue, logical_name, node_platform, node=None):
    """The variant of ``logical_name`` for the node, by the rule in the module docstring.

    Returns ``(chosen_variant, others)``, ``others`` being ``(variant, verdict)`` for every other
    variant in catalogue order. Raises NoFitError (message: the node and each variant's reasons),
    CatalogueError or PlatformError.
    """
    chosen, verdicts = evaluate(catalogue, logical_name, node_platform)
    if chosen is None:
        raise NoFitError(_no_fit_message(logical_name, node, node_platform, verdicts), logical_name, verdicts)
    return chosen, [(variant, verdict) for variant, verdict in verdicts if variant is not chosen]


def _no_fit_message(logical_name, node, node_platform, verdicts):
    return "%s: no variant fits %s (%s): %s" % (
        logical_name, node or "this node", describe_platform(check_platform(node_platform)),
        "; ".join("%s: %s" % (variant["name"], verdict) for variant, verdict in verdicts))


# ---------------------------------------------------------------- node images


def node_image(logical_name, repository=DEFAULT_NODE_REPOSITORY):
    """The local name under which a node keeps its variant of ``logical_name``: ``REPOSITORY/<name>:node``.

    The logical name is lower-cased (Docker repository names are lower case). ``repository`` must start with a
    registry host (``localhost``, a name with a dot, or host:port), so that an image a node lacks is never
    looked up on Docker Hub, where anybody could publish one under that name.
    """
    if not isinstance(repository, str) or not _NODE_REPOSITORY_RE.match(repository):
        raise CatalogueError("node image repository %r: a registry host (localhost, a name with a dot, or host:port) "
                             "and lower-case path components, e.g. %s" % (repository, DEFAULT_NODE_REPOSITORY))
    component = str(logical_name).lower()
    if not _REPOSITORY_COMPONENT_RE.match(component):
        raise CatalogueError("%s: a logical image whose node image is kept under %s must be usable as a Docker "
                             "repository name (letters and digits, with single ., _, __ or - between them)"
                             % (logical_name, repository))
    return "%s/%s:%s" % (repository, component, NODE_TAG)


def node_images(catalogue, repository=DEFAULT_NODE_REPOSITORY):
    """Logical image name to :func:`node_image`, for every logical image of ``catalogue``; two names that would
    share one node image (they differ only in case) are an error."""
    out = {}
    seen = {}
    for name in sorted(catalogue, key=str):
        image = node_image(name, repository)
        if image in seen:
            raise CatalogueError("%s and %s: both would be kept on the nodes as %s (logical image names that differ "
                                 "only in case)" % (seen[image], name, image))
        seen[image] = name
        out[name] = image
    return out


# ---------------------------------------------------------------- command


def _load(path, what):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as err:
        raise ImageCatalogueError("%s: cannot read the %s: %s" % (path, what, err.strerror or err))
    except ValueError as err:  # json.JSONDecodeError, UnicodeDecodeError
        raise ImageCatalogueError("%s: the %s is not JSON: %s" % (path, what, err))
    except RecursionError:
        # json follows arrays and objects by recursion: a file nested past the interpreter's limit is bad input.
        raise ImageCatalogueError("%s: the %s is nested too deeply to be an image catalogue or a platform "
                                  "(arrays or objects inside one another past %d levels)"
                                  % (path, what, sys.getrecursionlimit()))


def main(argv=None, stdout=None, stderr=None):
    """The node command: print the image for LOGICAL_NAME (or its node image name, ``--node-image``, and with
    ``--and-variant`` the image on a second line).
    Exit 0; 2 bad input; 3 no variant fits."""
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = argparse.ArgumentParser(
        prog="image-variant",
        description="Print the image reference of the variant of LOGICAL_NAME built for this node.",
        epilog="Exit status: 0 printed, 2 bad input (files, name, usage), 3 no variant fits this node.")
    parser.add_argument("--catalogue", default=DEFAULT_CATALOGUE, help="the image catalogue, JSON (default: %(default)s)")
    parser.add_argument("--platform", default=DEFAULT_PLATFORM, help="this node's platform, JSON (default: %(default)s)")
    parser.add_argument("--node", default=None, help="the node name in messages (default: the short host name)")
    parser.add_argument("--explain", action="store_true", help="also print every variant's verdict, on stderr")
    parser.add_argument("--node-image", metavar="REPOSITORY", default=None,
                        help="print the name the node keeps its variant under (REPOSITORY/<name>:%s), not the "
                             "variant's image" % NODE_TAG)
    parser.add_argument("--and-variant", action="store_true",
                        help="with --node-image: print the variant's image too, on a second line")
    parser.add_argument("logical_name", metavar="LOGICAL_NAME")
    args = parser.parse_args(argv)
    if args.and_variant and args.node_image is None:
        parser.error("--and-variant needs --node-image")
    node = args.node or socket.gethostname().split(".")[0]
    try:
        catalogue = _load(args.catalogue, "image catalogue")
        if not isinstance(catalogue, dict):
            raise ImageCatalogueError("%s: the image catalogue must be a JSON object of logical image names" % args.catalogue)
        try:
            node_platform = check_platform(_load(args.platform, "platform file"))
        except PlatformError as err:
            raise ImageCatalogueError("%s: %s" % (args.platform, err))
        try:
            chosen, verdicts = evaluate(catalogue, args.logical_name, node_platform)
            shown = node_image(args.logical_name, args.node_image) if args.node_image is not None else None
        except CatalogueError as err:
            raise ImageCatalogueError("%s: %s" % (args.catalogue, err))
    except ImageCatalogueError as err:
        stderr.write("image-variant: %s\n" % err)
        return EXIT_BAD_INPUT
    if args.explain:
        stderr.write("%s on %s (%s):\n" % (args.logical_name, node, describe_platform(node_platform)))
        name_width = max(len(variant["name"]) for variant, _verdict in verdicts)
        image_width = max(len(variant["image"]) for variant, _verdict in verdicts)
        for variant, verdict in verdicts:
            stderr.write("%s %-*s  %-*s  %s\n" % (
                "*" if variant is chosen else " ", name_width, variant["name"], image_width, variant["image"], verdict))
    if chosen is None:
        stderr.write("image-variant: %s\n" % _no_fit_message(args.logical_name, node, node_platform, verdicts))
        return EXIT_NO_FIT
    stdout.write((shown or chosen["image"]) + "\n")
    if args.and_variant:
        stdout.write(chosen["image"] + "\n")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
