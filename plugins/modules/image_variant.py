#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: image_variant
short_description: Pick, per node, the variant of a logical image built for its CPU, GPU and driver
version_added: 0.2.0
description:
  - Validates an image catalogue (logical image name to variants, each with its requirements) and picks,
    for one node's platform, the variant of each logical image to run there.
  - The node's platform (architecture, CPU level, driver version, the CUDA version the driver supports,
    the GPUs' compute capabilities) comes from the output of M(hpc.gpu_containers.gpu_facts). A node without
    GPU or driver, or with an unknown CPU level, is a normal case; only variants that need none of them fit it.
  - "A variant fits when its architecture is the node's; the node's CPU level is at least its C(cpu_level)
    (x86-64-v1 to v4, POWER8 to POWER10); when it needs a GPU, the node has one; the node's CUDA version
    and driver version are at least its C(cuda) and C(driver); and every GPU is covered by its
    C(compute_capabilities): a listed capability of the same major version and a minor at most the GPU's,
    or C(ptx) and a GPU newer than the highest listed."
  - "Among the variants that fit, the first difference in this order decides: one that uses the GPU; one
    that runs every GPU without PTX JIT; the higher C(cpu_level); the higher C(cuda); the higher C(driver);
    the higher lowest listed compute capability; the one listed first."
  - Changes nothing on the node, unless O(platform_file), O(catalogue_file) or O(command_file) is set - then it
    writes the node's platform and the catalogue as the JSON files that the node's command (see the notes) reads
    at job start, and that command itself, each through the collection's file-edit transaction (check mode,
    diff, backup), creating a missing directory (mode C(0755)) on the way.
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
extends_documentation_fragment:
  - hpc.gpu_containers.file_edit
options:
  catalogue:
    description:
      - The image catalogue, logical image name to a mapping with one key, C(variants), a non-empty list.
      - A logical image name is letters, digits, C(.), C(_) and C(-). Every variant field other than those
        below is an error, so a misspelt requirement fails instead of being ignored.
      - "Variant fields: C(name) (required, unique within the logical image); C(image) (required,
        C(registry/repository:tag) or with C(@sha256:...), a tag or digest is required); C(architecture)
        (required, C(x86_64), C(ppc64le) or C(aarch64); C(amd64), C(arm64) and C(ppc64el) are read as
        those); C(cpu_level) (minimum, C(x86-64-v1) to C(x86-64-v4) or C(POWER8), C(POWER9), C(POWER10));
        C(cuda) (minimum CUDA version the driver must support, a quoted string such as C(\"12.2\"));
        C(driver) (minimum driver version, a string); C(compute_capabilities) (list such as
        C([\"7.0\", \"8.0\"])); C(ptx) (bool, default false: PTX for the highest listed capability is in
        the image); C(gpu) (bool, default true when C(cuda), C(driver) or C(compute_capabilities) is given)."
    type: dict
    required: true
  image:
    description:
      - The logical image to resolve. Omitted, every logical image of O(catalogue) is resolved and one that
        no variant fits is reported in RV(unresolved) without failing.
    type: str
  gpu_facts:
    description:
      - The node's facts as M(hpc.gpu_containers.gpu_facts) returns them, usually C(ansible_facts.gpu_facts).
    type: dict
    required: true
  node:
    description:
      - The node's name in messages. Defaults to the short host name of the host the module runs on; set it
        when the module runs elsewhere, for example on the controller with another host's facts.
    type: str
  fail_on_no_fit:
    description:
      - With O(image) set, fail when no variant fits, with a message that names every variant and why it
        does not fit. Set to false to get that message in RV(unresolved) instead.
      - Ignored without O(image).
    type: bool
    default: true
  platform_file:
    description:
      - Write the node's platform (RV(platform)) to this file as canonical JSON (sorted keys, one trailing
        newline), mode C(0644), creating it when missing. The node's command reads it from
        C(/etc/hpc-gpu-containers/platform.json) unless told otherwise.
      - Written even when no variant fits, so that the node's command can say why at job start.
    type: path
    version_added: 0.2.0
  catalogue_file:
    description:
      - Write the validated O(catalogue) to this file as canonical JSON, mode C(0644), creating it when
        missing. The node's command reads it from C(/etc/hpc-gpu-containers/images.json) unless told otherwise.
    type: path
    version_added: 0.2.0
  command_file:
    description:
      - Install the node's command (see the notes) as this file, mode C(0644), creating it when missing. It is
        the rule this module applies, from the same source, so the node picks at job start what the module
        picked.
    type: path
    version_added: 0.2.0
  node_repository:
    description:
      - Also return, in RV(node_images), the local name under which the node keeps its variant of each logical
        image it can run, C(<node_repository>/<logical name in lower case>:node), and in RV(stale_node_images) that
        name for each logical image no variant fits (a node image left from an earlier choice, to remove).
      - It must start with a registry host (C(localhost), a name with a dot, or C(host:port)), so that a node
        image a node lacks is never looked up on Docker Hub.
      - The module tags nothing; the C(image_variants) role's C(node) entry point does.
    type: str
    version_added: 0.3.0
attributes:
  check_mode:
    support: full
    description: Computes the same; with a file to write it predicts the exact change and writes nothing.
  diff_mode:
    support: full
    description: With O(platform_file), O(catalogue_file) or O(command_file), shows each file before and after.
  platform:
    support: full
    platforms: posix
    description: Any host; it reads only its arguments.
notes:
  - The same rule is available on a node as a command, C(python3 _image_catalogue.py [--explain] LOGICAL_NAME),
    which reads the catalogue and the node's platform from the JSON files O(catalogue_file) and
    O(platform_file) write; it exits 3 with the message naming each variant when none fits. O(command_file)
    installs it.
seealso:
  - module: hpc.gpu_containers.gpu_facts
"""

EXAMPLES = r"""
- name: Gather the node's GPU and CPU facts
  hpc.gpu_containers.gpu_facts:

- name: The PowerAI variant for this node
  hpc.gpu_containers.image_variant:
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    image: powerai
    catalogue:
      powerai:
        variants:
          - name: cuda12-avx512
            image: registry.example.com:5000/hpc/powerai:cuda12.2-x86-64-v4
            architecture: x86_64
            cpu_level: x86-64-v4
            cuda: "12.2"
            compute_capabilities: ["8.0", "9.0"]
            ptx: true
          - name: cuda12
            image: registry.example.com:5000/hpc/powerai:cuda12.2
            architecture: x86_64
            cuda: "12.2"
            compute_capabilities: ["8.0", "9.0"]
            ptx: true
          - name: cuda11-volta
            image: registry.example.com:5000/hpc/powerai:cuda11.4
            architecture: x86_64
            cpu_level: x86-64-v2
            cuda: "11.4"
            compute_capabilities: ["7.0"]
  register: powerai

- name: Every logical image, without failing for those no variant fits
  hpc.gpu_containers.image_variant:
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    catalogue: "{{ site_image_catalogue }}"
  register: images

- name: The node's command and the files it reads at job start
  hpc.gpu_containers.image_variant:
    gpu_facts: "{{ ansible_facts.gpu_facts }}"
    catalogue: "{{ site_image_catalogue }}"
    platform_file: /etc/hpc-gpu-containers/platform.json
    catalogue_file: /etc/hpc-gpu-containers/images.json
    command_file: /usr/local/lib/hpc-gpu-containers/_image_catalogue.py

- name: Say which images this node cannot run
  ansible.builtin.debug:
    msg: "{{ images.unresolved }}"
  when: images.unresolved | length > 0
"""

RETURN = r"""
platform:
  description: The node's platform the choice was made for.
  returned: always
  type: dict
  sample:
    architecture: x86_64
    cpu_level: x86-64-v3
    driver: 535.129.03
    cuda: "12.2"
    compute_capabilities: ["8.0"]
variants:
  description: Logical image name to the image reference of the variant chosen for the node.
  returned: always
  type: dict
  sample:
    powerai: registry.example.com:5000/hpc/powerai:cuda12.2
chosen:
  description: Logical image name to the name of the variant chosen for the node.
  returned: always
  type: dict
  sample:
    powerai: cuda12
verdicts:
  description:
    - Logical image name to variant name to verdict. C(chosen); C(fits; NAME preferred (why)) for a variant
      that fits but loses to NAME; else every reason it does not fit, joined by C(, ).
  returned: always
  type: dict
  sample:
    powerai:
      cuda12-avx512: "needs x86-64-v4 (node: x86-64-v3)"
      cuda12: chosen
      cuda11-volta: "fits; cuda12 preferred (higher CUDA minimum)"
backup_file:
  description: File name to the name of its backup, for each file written with O(backup=true).
  returned: changed and O(backup=true)
  type: dict
  sample: {/etc/hpc-gpu-containers/platform.json: /etc/hpc-gpu-containers/platform.json.2210.2026-01-01@10:00:00~}
node_images:
  description: Logical image name to its node image name, for each logical image a variant fits (O(node_repository)).
  returned: when O(node_repository) is set
  type: dict
  sample:
    powerai: localhost/hpc-node/powerai:node
  version_added: 0.3.0
stale_node_images:
  description: The node image names of the logical images no variant fits (O(node_repository)).
  returned: when O(node_repository) is set
  type: list
  elements: str
  sample: [localhost/hpc-node/hopper:node]
  version_added: 0.3.0
unresolved:
  description: Logical image name to the message saying why no variant fits, naming each variant and its reasons.
  returned: always
  type: dict
  sample:
    powerai: "powerai: no variant fits gpu01 (x86_64, x86-64-v3, driver 470.182.03, CUDA 11.4, cc 7.0):
      cuda12: needs CUDA 12.2 (driver supports 11.4), compiled for cc 8.0/9.0 with PTX (node: cc 7.0)"
"""

import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_catalogue
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import FILE_EDIT_ARGS, write_files


def command_source():
    """The text of the node's command: the source of the rule this module runs (a file here, or in the module's
    archive on a node)."""
    loader = _image_catalogue.__spec__.loader
    return loader.get_data(_image_catalogue.__file__).decode("utf-8")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            catalogue=dict(type="dict", required=True),
            image=dict(type="str"),
            gpu_facts=dict(type="dict", required=True),
            node=dict(type="str"),
            fail_on_no_fit=dict(type="bool", default=True),
            platform_file=dict(type="path"),
            catalogue_file=dict(type="path"),
            command_file=dict(type="path"),
            node_repository=dict(type="str"),
            **FILE_EDIT_ARGS,
        ),
        supports_check_mode=True,
    )
    params = module.params
    node = params["node"] or socket.gethostname().split(".")[0]
    try:
        catalogue = _image_catalogue.validate(params["catalogue"])
    except _image_catalogue.CatalogueError as err:
        module.fail_json(msg="catalogue: %s" % err)
    try:
        named = (_image_catalogue.node_images(catalogue, params["node_repository"])
                 if params["node_repository"] is not None else None)
    except _image_catalogue.CatalogueError as err:
        module.fail_json(msg="node_repository: %s" % err)
    try:
        node_platform = _image_catalogue.platform(params["gpu_facts"])
    except _image_catalogue.PlatformError as err:
        module.fail_json(msg=str(err))
    names = sorted(catalogue)
    if params["image"] is not None:
        if params["image"] not in catalogue:
            module.fail_json(msg="image: no logical image %r in the catalogue (it has: %s)" % (
                params["image"], ", ".join(names) or "none"), platform=node_platform)
        names = [params["image"]]

    result = {"changed": False, "platform": node_platform, "variants": {}, "chosen": {}, "verdicts": {}, "unresolved": {}}
    for name in names:
        try:
            chosen, others = _image_catalogue.select(catalogue, name, node_platform, node)
        except _image_catalogue.NoFitError as err:
            result["verdicts"][name] = {variant["name"]: verdict for variant, verdict in err.verdicts}
            result["unresolved"][name] = str(err)
            continue
        result["variants"][name] = chosen["image"]
        result["chosen"][name] = chosen["name"]
        verdicts = {variant["name"]: verdict for variant, verdict in others}
        verdicts[chosen["name"]] = "chosen"
        result["verdicts"][name] = {variant["name"]: verdicts[variant["name"]] for variant in catalogue[name]["variants"]}
    if named is not None:
        result["node_images"] = dict((name, named[name]) for name in result["variants"])
        result["stale_node_images"] = [named[name] for name in sorted(result["unresolved"])]
    files = [(params["platform_file"], _image_catalogue.render_platform(node_platform)),
             (params["catalogue_file"], _image_catalogue.render_catalogue(catalogue))]
    if params["command_file"]:
        files.append((params["command_file"], command_source()))
    written = write_files(module, [(path, text, None) for path, text in files if path])
    written.pop("changed_files")
    result.update(written)
    if params["image"] is not None and params["fail_on_no_fit"] and result["unresolved"]:
        module.fail_json(msg=result["unresolved"][params["image"]], **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
