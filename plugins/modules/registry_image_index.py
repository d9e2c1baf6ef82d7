#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: registry_image_index
short_description: Publish per-architecture images under one name as a multi-arch index in a registry
version_added: 0.2.0
description:
  - Reads an image tag from a Docker distribution registry (the collection's private registry) through its HTTP API
    (C(/v2/)), and with O(images) publishes those per-architecture tags of the same repository as one multi-arch
    index under O(tag), so that every node pulls the same name and gets the image of its own architecture.
  - Each entry of O(images) replaces the index entry of the same platform (read from the image's configuration);
    entries of other platforms stay, so each architecture can be built and added on a node of its own, one after
    the other. A single image under O(tag) (pushed by C(docker push)) is replaced by the index.
  - The index is a Docker manifest list when every entry is a Docker image manifest, else an OCI image index.
  - With O(architecture), fails when the tag (index or single image) has no image for that architecture, naming
    the platforms it has, and returns that image's manifest and configuration digest (the image id a node gets by
    pulling it).
author:
  - hpc.gpu_containers contributors (@hpc-gpu-containers)
options:
  registry:
    description: The registry, C(host:port).
    type: str
    required: true
  repository:
    description: The repository in the registry, for example C(hpc/verify).
    type: str
    required: true
  tag:
    description: The tag to read and, with O(images), to publish the index under.
    type: str
    required: true
  images:
    description:
      - Tags of the same repository, each one image of one architecture (for example C(1-amd64)), to put into the
        index. Empty, the module only reads.
    type: list
    elements: str
    default: []
  features:
    description:
      - Per tag of O(images), what its image needs beyond its architecture, for the entry's C(platform.features)
        (for example C([x86-64-v4, cuda12.2, sm_80]) for one variant of a logical image). Several images of one
        architecture then stand side by side in the index, one entry per set of features, as a registry-side
        view of the variants; a node's Docker engine pulling the index takes the first entry of its
        architecture, so nodes run a variant by its own tag (the image catalogue's rule picks it).
      - A feature is one word without C(,) or C(+). A tag not in O(images) is an error.
      - An entry replaces the one with the same platform and features; after a variant's features change, the
        entry with the old ones stays in the index beside the new one.
    type: dict
    default: {}
    version_added: 0.2.0
  architecture:
    description:
      - The architecture of the node that will pull O(tag) (C(uname -m) or Go spelling, C(x86_64) or C(amd64)).
      - The module fails when O(tag) has no image for it.
    type: str
  username:
    description:
      - Registry account. Sent with HTTP basic authentication, as the collection's registry uses it.
      - A registry with token authentication (Harbor, GitLab, Quay; a 401 with a C(WWW-Authenticate) Bearer
        challenge) gets the account at the challenge's realm for a token of the requested scope, then the request
        again with the token (from version 0.3.0). Without O(username) the token is asked for anonymously.
    type: str
  password:
    description: Its password.
    type: str
  ca_path:
    description: CA certificate that signed the registry's certificate. Omitted, the system's trust store.
    type: path
  insecure:
    description: Plain HTTP (a registry in C(container_registry_insecure) mode).
    type: bool
    default: false
  timeout:
    description: Seconds for each request.
    type: int
    default: 30
attributes:
  check_mode:
    support: full
    description:
      - Reads, predicts whether the index would change, and pushes nothing. A per-architecture tag that is not in
        the registry yet (its push is only predicted) is reported as a change, not an error.
  diff_mode:
    support: full
    description: The platforms of the index before and after.
  platform:
    support: full
    platforms: posix
    description: Any host that reaches the registry; it needs Python and nothing else.
notes:
  - Only the registry's HTTP API is used, no Docker daemon and no C(docker manifest) command, so the node needs
    nothing but Python.
seealso:
  - name: OCI image index
    description: The index format and its platform fields.
    link: https://github.com/opencontainers/image-spec/blob/main/image-index.md
  - name: Docker manifest list
    description: The Docker flavour of the index, which every Docker engine pulls.
    link: https://distribution.github.io/distribution/spec/manifest-v2-2/
"""

EXAMPLES = r"""
# On the x86_64 build host, after pushing head:5000/hpc/verify:1-amd64 (and the same on a ppc64le node with 1-ppc64le):
- name: Publish the image under one name for every architecture
  hpc.gpu_containers.registry_image_index:
    registry: head:5000
    repository: hpc/verify
    tag: "1"
    images: ["1-{{ 'amd64' if ansible_facts['architecture'] == 'x86_64' else ansible_facts['architecture'] }}"]
    username: hpcadmin
    password: "{{ vault_registry_password }}"
    ca_path: /etc/docker/certs.d/head:5000/ca.crt
  throttle: 1

# On every node before a pull: fail with the reason when the index has no image for this node
- name: The registry has the image for this node's architecture
  hpc.gpu_containers.registry_image_index:
    registry: head:5000
    repository: hpc/verify
    tag: "1"
    architecture: "{{ ansible_facts['architecture'] }}"
    username: hpcadmin
    password: "{{ vault_registry_password }}"
    ca_path: /etc/docker/certs.d/head:5000/ca.crt
  register: verify_image
"""

RETURN = r"""
exists:
  description: Whether O(tag) is in the registry (after the change; in check mode, before).
  returned: always
  type: bool
  sample: true
digest:
  description: The digest of O(tag) (index or single image); after a push, the new one; in check mode the predicted one.
  returned: when the tag exists or was pushed
  type: str
  sample: sha256:2f0e4c79b6d3...
media_type:
  description: The media type of O(tag).
  returned: when the tag exists or was pushed
  type: str
  sample: application/vnd.docker.distribution.manifest.list.v2+json
platforms:
  description: The platforms O(tag) has images for.
  returned: always
  type: list
  elements: str
  sample: [linux/amd64, linux/ppc64le]
changed_platforms:
  description: Platforms whose entry was added or replaced (O(images)).
  returned: always
  type: list
  elements: str
  sample: [linux/ppc64le]
image:
  description:
    - The image a node of O(architecture) gets - its platform, manifest digest and configuration digest (what
      C(docker image inspect) shows as its C(Id) after the pull). Without O(architecture), the image of a tag that
      is a single image.
  returned: when O(architecture) is given and the tag has its image, or the tag is a single image
  type: dict
  sample: {"platform": "linux/amd64", "digest": "sha256:9a1c...", "config_digest": "sha256:77b0..."}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_index as model
from ansible_collections.hpc.gpu_containers.plugins.module_utils._registry_api import Registry, RegistryError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import go_arch


def _single_platform(registry, tag, document):
    return model.platform_key(model.platform_of(registry.config(document, tag)))


def _image_for(registry, tag, document, body, media_type, architecture, platforms):
    """The image of ``architecture`` under ``tag``, or the reason it has none."""
    reference = "%s:%s" % (registry.reference, tag)
    if model.is_index(document, media_type):
        entry = model.entry_for(document, architecture)
        if entry is None:
            return None, model.missing_platform_message(reference, architecture, platforms)
        manifest, _body, _type = registry.manifest(entry["digest"], accept=model.ACCEPT_MANIFEST)
        if manifest is None:
            return None, "%s: its %s entry %s is not in the registry" % (reference, go_arch(architecture),
                                                                         entry["digest"])
        return {"platform": model.platform_key(entry.get("platform") or {}), "digest": entry["digest"],
                "config_digest": manifest["config"]["digest"]}, None
    if not platforms or platforms[0].split("/")[1] != go_arch(architecture):
        return None, model.missing_platform_message(reference, architecture, platforms)
    return {"platform": platforms[0], "digest": model.digest_of(body),
            "config_digest": document["config"]["digest"]}, None


def run(module, registry):
    params = module.params
    tag = params["tag"]
    document, body, media_type = registry.manifest(tag)
    result = {"changed": False, "exists": document is not None, "platforms": [], "changed_platforms": []}
    if document is not None:
        result.update(digest=model.digest_of(body), media_type=media_type)
        result["platforms"] = (model.platforms_of(document) if model.is_index(document, media_type)
                               else [_single_platform(registry, tag, document)])
    before = list(result["platforms"])

    unknown = sorted(set(params["features"]) - set(params["images"]))
    if unknown:
        raise RegistryError("features: %s not in images (%s)" % (", ".join(unknown), ", ".join(params["images"]) or "none"))
    for image_tag, features in params["features"].items():
        if not isinstance(features, list):
            raise RegistryError("features: %s: expected a list of features, got %s" % (image_tag, type(features).__name__))
    if params["images"]:
        entries, predicted = [], []
        for image_tag in params["images"]:
            manifest, manifest_body, manifest_type = registry.manifest(image_tag, accept=model.ACCEPT_MANIFEST)
            if manifest is None:
                if module.check_mode:
                    predicted.append(image_tag)
                    continue
                raise RegistryError("%s:%s is not in the registry: push it before adding it to the index"
                                    % (registry.reference, image_tag))
            if model.is_index(manifest, manifest_type):
                raise RegistryError("%s:%s is an index itself; list single-architecture images"
                                    % (registry.reference, image_tag))
            platform = model.with_features(model.platform_of(registry.config(manifest, image_tag)),
                                           params["features"].get(image_tag))
            entries.append(model.descriptor(manifest_type, manifest_body, platform))
        index, changed_platforms = model.merge(document, entries)
        changed_platforms += ["(%s, not pushed yet)" % image_tag for image_tag in predicted]
        if changed_platforms:
            new_body = model.render(index)
            result.update(changed=True, changed_platforms=changed_platforms, platforms=model.platforms_of(index),
                          digest=model.digest_of(new_body), media_type=index["mediaType"])
            if not module.check_mode:
                registry.put_manifest(tag, new_body, index["mediaType"])
                document, body, media_type = index, new_body, index["mediaType"]
                result["exists"] = True
    if module._diff:
        result["diff"] = {"before": "".join("%s\n" % p for p in before),
                          "after": "".join("%s\n" % p for p in result["platforms"]),
                          "before_header": "%s:%s" % (registry.reference, tag),
                          "after_header": "%s:%s" % (registry.reference, tag)}

    if document is None:
        if params["architecture"]:
            if module.check_mode:
                module.warn("%s:%s is not in the registry yet; a run would publish it" % (registry.reference, tag))
                return result
            raise RegistryError("%s:%s is not in the registry" % (registry.reference, tag))
        return result
    if result["changed"] and module.check_mode:
        return result  # the index is only predicted: nothing to look up in it yet
    if params["architecture"]:
        image, problem = _image_for(registry, tag, document, body, media_type, params["architecture"],
                                    result["platforms"])
        if problem:
            module.fail_json(msg=problem, **result)
        result["image"] = image
    elif not model.is_index(document, media_type):
        result["image"] = {"platform": result["platforms"][0], "digest": result["digest"],
                           "config_digest": document["config"]["digest"]}
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            registry=dict(type="str", required=True),
            repository=dict(type="str", required=True),
            tag=dict(type="str", required=True),
            images=dict(type="list", elements="str", default=[]),
            features=dict(type="dict", default={}),
            architecture=dict(type="str"),
            username=dict(type="str"),
            password=dict(type="str", no_log=True),
            ca_path=dict(type="path"),
            insecure=dict(type="bool", default=False),
            timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    registry = Registry(module.params)
    try:
        result = run(module, registry)
    except (RegistryError, model.ImageIndexError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
