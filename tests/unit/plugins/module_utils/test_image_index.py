# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The multi-arch index model: entries per platform, merges that keep other architectures, stable bytes."""

import json

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_index as model

AMD64 = json.dumps({"schemaVersion": 2, "mediaType": model.DOCKER_MANIFEST,
                    "config": {"digest": "sha256:" + "a" * 64}}).encode()
PPC = json.dumps({"schemaVersion": 2, "mediaType": model.DOCKER_MANIFEST,
                  "config": {"digest": "sha256:" + "b" * 64}}).encode()


def entry(body, arch, media_type=model.DOCKER_MANIFEST):
    return model.descriptor(media_type, body, model.platform_of({"os": "linux", "architecture": arch}))


def test_platform_of_uses_the_image_spelling_and_keeps_a_variant():
    assert model.platform_of({"os": "linux", "architecture": "x86_64"}) == {"os": "linux", "architecture": "amd64"}
    assert model.platform_key(model.platform_of({"os": "linux", "architecture": "arm64", "variant": "v8"})) \
        == "linux/arm64/v8"
    with pytest.raises(model.ImageIndexError, match="no os/architecture"):
        model.platform_of({"os": "linux"})


def test_descriptor_digest_and_size_are_of_the_exact_bytes():
    found = entry(AMD64, "amd64")
    assert found["size"] == len(AMD64) and found["digest"] == model.digest_of(AMD64)
    assert found["digest"].startswith("sha256:") and len(found["digest"]) == 71
    with pytest.raises(model.ImageIndexError, match="must be an image manifest"):
        model.descriptor(model.DOCKER_LIST, AMD64, {"os": "linux", "architecture": "amd64"})


def test_a_new_index_then_a_second_architecture_keeps_the_first():
    first, changed = model.merge(None, [entry(AMD64, "amd64")])
    assert changed == ["linux/amd64"] and first["mediaType"] == model.DOCKER_LIST
    second, changed = model.merge(first, [entry(PPC, "ppc64le")])
    assert changed == ["linux/ppc64le"]
    assert model.platforms_of(second) == ["linux/amd64", "linux/ppc64le"]
    assert model.entry_for(second, "x86_64")["digest"] == model.digest_of(AMD64)
    assert model.entry_for(second, "ppc64le")["digest"] == model.digest_of(PPC)
    assert model.entry_for(second, "aarch64") is None


def test_the_same_entry_again_changes_nothing_and_renders_the_same_bytes():
    index, _changed = model.merge(None, [entry(PPC, "ppc64le"), entry(AMD64, "amd64")])
    again, changed = model.merge(json.loads(model.render(index)), [entry(AMD64, "amd64")])
    assert changed == []
    assert model.render(again) == model.render(index)


def test_a_rebuilt_image_replaces_its_platforms_entry_only():
    index, _changed = model.merge(None, [entry(AMD64, "amd64"), entry(PPC, "ppc64le")])
    rebuilt = AMD64.replace(b"a" * 64, b"c" * 64)
    new, changed = model.merge(index, [entry(rebuilt, "amd64")])
    assert changed == ["linux/amd64"]
    assert [e["digest"] for e in new["manifests"]] == [model.digest_of(rebuilt), model.digest_of(PPC)]


def test_a_single_image_under_the_tag_is_replaced_by_the_index():
    single = json.loads(AMD64)
    index, changed = model.merge(single, [entry(AMD64, "amd64")])
    assert changed == ["linux/amd64"] and model.is_index(index)
    # also when the same image: the tag changes from one image to an index
    index, changed = model.merge(single, [])
    assert changed == ["(a single image became an index)"]


def test_an_oci_entry_makes_an_oci_index():
    index, _changed = model.merge(None, [entry(AMD64, "amd64"), entry(PPC, "ppc64le", model.OCI_MANIFEST)])
    assert index["mediaType"] == model.OCI_INDEX


def test_the_missing_platform_message_names_what_the_index_has():
    msg = model.missing_platform_message("head:5000/hpc/verify:1", "ppc64le", ["linux/amd64"])
    assert msg.startswith("head:5000/hpc/verify:1 has no image for linux/ppc64le (it has: linux/amd64)")
    assert "build it on a ppc64le node" in msg


def test_a_broken_index_is_refused():
    with pytest.raises(model.ImageIndexError, match="no list of manifests"):
        model.platforms_of({"mediaType": model.OCI_INDEX, "manifests": "x"})


def test_build_indexes_one_per_logical_image():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._image_index import build_indexes
    builds = [
        {"logical": "dl", "tag": "cuda12-sm80", "registry": "head:5000", "repository": "hpc/dl",
         "features": ["sm_80"], "index": "head:5000/hpc/dl:variants"},
        {"logical": "app", "tag": "v1", "registry": "head:5000", "repository": "hpc/app", "features": [], "index": None},
        {"logical": "dl", "tag": "cuda11-sm70", "registry": "head:5000", "repository": "hpc/dl",
         "features": ["sm_70"], "index": "head:5000/hpc/dl:variants"},
    ]
    assert build_indexes(builds) == [
        {"logical": "dl", "registry": "head:5000", "repository": "hpc/dl", "index": "head:5000/hpc/dl:variants",
         "images": ["cuda12-sm80", "cuda11-sm70"], "features": {"cuda12-sm80": ["sm_80"], "cuda11-sm70": ["sm_70"]}},
        {"logical": "app", "registry": "head:5000", "repository": "hpc/app", "index": None, "images": ["v1"],
         "features": {"v1": []}},
    ]
