# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Platform-matched images: the node's platform from recorded facts, the selection rule
(fits, specificity order, ties, no fit), catalogue validation, the platform file, the LSF
resources (``_image_platforms``) and the node command."""

import copy
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_catalogue as ic
from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_platforms as ip

sys.path.insert(0, str(Path(__file__).resolve().parent))
import image_nodes as nodes  # noqa: E402

REGISTRY = "head.cluster:5000/hpc/powerai"

# One logical image, four variants that differ in CUDA minimum, compute capabilities and CPU level.
POWERAI = {
    "powerai": {"variants": [
        {"name": "cuda12-avx512", "image": REGISTRY + ":cuda12.2-x86-64-v4", "architecture": "x86_64",
         "cpu_level": "x86-64-v4", "cuda": "12.2", "compute_capabilities": ["8.0", "9.0"], "ptx": True},
        {"name": "cuda12", "image": REGISTRY + ":cuda12.2", "architecture": "x86_64",
         "cuda": "12.2", "compute_capabilities": ["8.0", "9.0"], "ptx": True},
        {"name": "cuda11-volta", "image": REGISTRY + ":cuda11.4-volta", "architecture": "amd64",
         "cpu_level": "x86-64-v2", "cuda": "11.4", "compute_capabilities": ["7.0"]},
        {"name": "power9", "image": REGISTRY + ":cuda10.1-power9", "architecture": "ppc64el",
         "cpu_level": "POWER9", "cuda": "10.1", "compute_capabilities": ["7.0"]},
    ]},
}


def gpu01():
    return ic.platform(nodes.standin_facts("gpu01", nodes.BROADWELL))


def gpu02():
    return ic.platform(nodes.standin_facts("gpu02", nodes.BROADWELL))


def variant(name, **fields):
    fields.setdefault("architecture", "x86_64")
    return dict(name=name, image="reg:5000/app:%s" % name, **fields)


def pick(variants, node_platform):
    chosen, others = ic.select({"app": {"variants": variants}}, "app", node_platform)
    return chosen["name"], {v["name"]: verdict for v, verdict in others}


# ---------------------------------------------------------------- platform from recorded facts


def test_platform_of_the_test_bed_gpu_nodes():
    assert gpu01() == {"architecture": "x86_64", "cpu_level": "x86-64-v3", "driver": "470.182.03", "cuda": "11.4",
                       "compute_capabilities": ["7.0"]}
    assert gpu02() == {"architecture": "x86_64", "cpu_level": "x86-64-v3", "driver": "535.129.03", "cuda": "12.2",
                       "compute_capabilities": ["8.0"]}


@pytest.mark.parametrize("recording, level", [
    (nodes.BROADWELL, "x86-64-v3"),
    (nodes.AVX512, "x86-64-v4"),
    (nodes.POWER8, "POWER8"),
    (nodes.POWER9, "POWER9"),
    (nodes.POWER10, "POWER10"),
    (nodes.CORTEX_A53, None),
])
def test_cpu_level_of_recorded_cpus_without_gpu(recording, level):
    found = ic.platform(nodes.no_gpu_facts(recording))
    assert found == {"architecture": nodes.cpu(recording)["architecture"], "cpu_level": level, "driver": None, "cuda": None,
                     "compute_capabilities": []}


def test_platform_from_a_recorded_nvml_power9_node(monkeypatch):
    facts = nodes.nvml_facts(monkeypatch, "v100-sxm2-16gb-x2-power9-418.87.00.json", nodes.POWER9)
    assert ic.platform(facts) == {"architecture": "ppc64le", "cpu_level": "POWER9", "driver": "418.87.00", "cuda": "10.1",
                                  "compute_capabilities": ["7.0"]}


def test_an_old_driver_without_a_cuda_version_reports_none(monkeypatch):
    facts = nodes.nvml_facts(monkeypatch, "p100-pcie-12gb-x2-375.66.json", nodes.BROADWELL)
    found = ic.platform(facts)
    assert found["driver"] == "375.66" and found["cuda"] is None and found["compute_capabilities"] == ["6.0"]


def test_driver_loaded_without_gpus_keeps_the_driver():
    facts = nodes.standin_facts("gpu02", nodes.BROADWELL)
    facts.update(present=False, reason="NVIDIA driver loaded but no GPU found", count=0, gpus=[])
    found = ic.platform(facts)
    assert found["driver"] == "535.129.03" and found["cuda"] == "12.2" and found["compute_capabilities"] == []


def test_capabilities_are_unique_sorted_numerically_and_skip_unreadable_gpus():
    facts = nodes.standin_facts("gpu02", nodes.AVX512)
    facts["gpus"] = [{"compute_capability": "8.6"}, {"compute_capability": "10.0"}, {"index": 2, "error": "GPU is lost"},
                     {"compute_capability": None}, {"compute_capability": "7.0"}, {"compute_capability": "8.6"}]
    assert ic.platform(facts)["compute_capabilities"] == ["7.0", "8.6", "10.0"]


@pytest.mark.parametrize("facts, message", [
    ({"present": False}, "no cpu.architecture"),
    ("not a dict", "expected the gpu_facts module's result"),
    ({"cpu": {"architecture": "x86_64"}, "gpus": "0"}, "gpus: expected a list"),
    ({"cpu": {"architecture": "x86_64", "x86_64_level": "v9"}}, "cpu_level"),
])
def test_unusable_facts_are_refused(facts, message):
    with pytest.raises(ic.PlatformError, match=re.escape(message)):
        ic.platform(facts)


# ---------------------------------------------------------------- the rule on the test bed


def test_gpu01_and_gpu02_get_different_variants_of_one_logical_image():
    on_gpu01, others01 = ic.select(POWERAI, "powerai", gpu01(), "gpu01")
    on_gpu02, others02 = ic.select(POWERAI, "powerai", gpu02(), "gpu02")
    assert on_gpu01["name"] == "cuda11-volta" and on_gpu01["image"] == REGISTRY + ":cuda11.4-volta"
    assert on_gpu02["name"] == "cuda12" and on_gpu02["image"] == REGISTRY + ":cuda12.2"
    assert [v["name"] for v, _verdict in others01] == ["cuda12-avx512", "cuda12", "power9"]
    assert dict((v["name"], verdict) for v, verdict in others02) == {
        "cuda12-avx512": "needs x86-64-v4 (node: x86-64-v3)",
        "cuda11-volta": "compiled for cc 7.0 (node: cc 8.0)",
        "power9": "built for ppc64le (node: x86_64)",
    }


def test_an_avx512_node_gets_the_avx512_variant_and_broadwell_never_does():
    avx512 = ic.platform(nodes.standin_facts("gpu02", nodes.AVX512))
    assert ic.select(POWERAI, "powerai", avx512)[0]["name"] == "cuda12-avx512"
    for node in (gpu01(), gpu02()):
        chosen, others = ic.select(POWERAI, "powerai", node)
        assert chosen["cpu_level"] != "x86-64-v4"
        assert "needs x86-64-v4 (node: x86-64-v3)" in dict((v["name"], r) for v, r in others)["cuda12-avx512"]


def test_the_recorded_power9_node_gets_the_power9_variant(monkeypatch):
    node = ic.platform(nodes.nvml_facts(monkeypatch, "v100-sxm2-16gb-x2-power9-418.87.00.json", nodes.POWER9))
    assert ic.select(POWERAI, "powerai", node)[0]["name"] == "power9"
    power8 = dict(node, cpu_level="POWER8")
    with pytest.raises(ic.NoFitError, match=r"power9: needs POWER9 \(node: POWER8\)"):
        ic.select(POWERAI, "powerai", power8)


# ---------------------------------------------------------------- no fit


def test_no_fit_names_the_node_and_every_variant_with_all_its_reasons():
    catalogue = copy.deepcopy(POWERAI)
    del catalogue["powerai"]["variants"][2]  # no Volta build left
    with pytest.raises(ic.NoFitError) as caught:
        ic.select(catalogue, "powerai", gpu01(), "gpu01")
    assert str(caught.value) == (
        "powerai: no variant fits gpu01 (x86_64, x86-64-v3, driver 470.182.03, CUDA 11.4, cc 7.0): "
        "cuda12-avx512: needs x86-64-v4 (node: x86-64-v3), needs CUDA 12.2 (driver supports 11.4), "
        "compiled for cc 8.0/9.0 with PTX (node: cc 7.0); "
        "cuda12: needs CUDA 12.2 (driver supports 11.4), compiled for cc 8.0/9.0 with PTX (node: cc 7.0); "
        "power9: built for ppc64le (node: x86_64)")
    assert caught.value.logical_name == "powerai"
    assert [v["name"] for v, _verdict in caught.value.verdicts] == ["cuda12-avx512", "cuda12", "power9"]


def test_an_unknown_logical_image_is_a_catalogue_error():
    with pytest.raises(ic.CatalogueError, match=r"no logical image 'tensorflow' in the catalogue \(it has: powerai\)"):
        ic.select(POWERAI, "tensorflow", gpu01())


# ---------------------------------------------------------------- missing facts


def test_a_node_without_driver_fits_only_variants_that_need_no_gpu():
    node = ic.platform(nodes.no_gpu_facts(nodes.BROADWELL))
    chosen, others = pick([variant("cuda", cuda="11.0"), variant("gpu-any", gpu=True), variant("cpu-v4", cpu_level="x86-64-v4"),
                           variant("cpu")], node)
    assert chosen == "cpu"
    assert others == {"cuda": "needs a GPU (node: no GPU driver)", "gpu-any": "needs a GPU (node: no GPU driver)",
                      "cpu-v4": "needs x86-64-v4 (node: x86-64-v3)"}
    with pytest.raises(ic.NoFitError, match=r"no variant fits this node \(x86_64, x86-64-v3, no GPU driver\)"):
        pick([variant("cuda", cuda="11.0")], node)


def test_a_driver_without_gpus_fits_no_gpu_variant():
    facts = nodes.standin_facts("gpu02", nodes.BROADWELL)
    facts.update(count=0, gpus=[], present=False)
    node = ic.platform(facts)
    with pytest.raises(ic.NoFitError, match=r"\(x86_64, x86-64-v3, driver 535.129.03, CUDA 12.2, no GPU\): "
                                            r"cuda: needs a GPU \(node: none\)"):
        pick([variant("cuda", cuda="11.0")], node)


def test_an_unknown_cpu_level_fits_only_variants_without_a_minimum():
    node = dict(gpu02(), cpu_level=None)
    chosen, others = pick([variant("v2", cpu_level="x86-64-v2", cuda="12.0"), variant("any", cuda="11.0")], node)
    assert chosen == "any" and others == {"v2": "needs x86-64-v2 (node: CPU level unknown)"}


def test_an_unknown_cuda_version_fits_no_cuda_minimum(monkeypatch):
    node = ic.platform(nodes.nvml_facts(monkeypatch, "p100-pcie-12gb-x2-375.66.json", nodes.BROADWELL))
    chosen, others = pick([variant("cuda8", cuda="8.0"), variant("driver375", driver="375.20", compute_capabilities=["6.0"])], node)
    assert chosen == "driver375" and others == {"cuda8": "needs CUDA 8.0 (driver's CUDA version unknown)"}


def test_driver_minimum_compares_numerically():
    node = gpu02()  # 535.129.03
    chosen, others = pick([variant("new", driver="535.154.05"), variant("old", driver="535.54.03")], node)
    assert chosen == "old" and others == {"new": "needs driver 535.154.05 (node: 535.129.03)"}


def test_cuda_minimum_compares_numerically_not_as_text():
    node = dict(gpu02(), cuda="12.10")
    assert pick([variant("c122", cuda="12.2"), variant("c1210", cuda="12.10")], node)[0] == "c1210"
    node = dict(gpu02(), cuda="12.2.0")
    assert pick([variant("c1210", cuda="12.10"), variant("c122", cuda="12.2")], node) == (
        "c122", {"c1210": "needs CUDA 12.10 (driver supports 12.2.0)"})
    # trailing zeros do not count: 12.2.0 is 12.2, both as a minimum and as a tie
    assert pick([variant("c1220", cuda="12.2.0"), variant("c122", cuda="12.2")], gpu02()) == (
        "c1220", {"c122": "fits; c1220 preferred (listed first)"})


# ---------------------------------------------------------------- compute capabilities and PTX


@pytest.mark.parametrize("listed, ptx, node_cc, fits", [
    (["7.0"], False, ["8.0"], False),   # Volta code does not run on Ampere
    (["7.0"], True, ["8.0"], True),     # ... but its PTX is JIT-compiled there
    (["7.0"], True, ["9.0"], True),
    (["8.0"], True, ["7.0"], False),    # PTX runs forward only
    (["8.0"], False, ["8.6"], True),    # same major, higher minor: binary compatible
    (["8.6"], False, ["8.0"], False),
    (["8.0"], False, ["7.0", "8.0"], False),  # every GPU of the node must be covered
    (["7.0", "8.0"], False, ["7.0", "8.0"], True),
    (["7.0", "8.0"], True, ["9.0"], True),
    (["7.0", "8.0"], False, ["9.0"], False),
])
def test_compute_capability_coverage(listed, ptx, node_cc, fits):
    node = dict(gpu02(), compute_capabilities=node_cc)
    catalogue = {"app": {"variants": [variant("v", compute_capabilities=listed, ptx=ptx)]}}
    chosen, verdicts = ic.evaluate(catalogue, "app", node)
    assert (chosen is not None) is fits
    assert verdicts[0][1] == "chosen" if fits else verdicts[0][1].startswith("compiled for cc ")


def test_the_no_fit_reason_lists_only_the_uncovered_gpus():
    node = dict(gpu02(), compute_capabilities=["7.0", "8.0", "8.6"])
    with pytest.raises(ic.NoFitError, match=re.escape("v: compiled for cc 8.0 (node: cc 7.0)")):
        pick([variant("v", compute_capabilities=["8.0"])], node)


# ---------------------------------------------------------------- specificity and ties


@pytest.mark.parametrize("winner, loser, node, why", [
    # 1. a GPU build before a CPU-only build, even one for a higher CPU level
    (variant("gpu", gpu=True), variant("cpu-v3", cpu_level="x86-64-v3"), "gpu02", "it uses the GPU"),
    # 2. native code before PTX JIT, even for a higher CPU level and CUDA minimum
    (variant("native", compute_capabilities=["8.0"]),
     variant("jit", cpu_level="x86-64-v3", cuda="12.2", compute_capabilities=["7.0"], ptx=True), "gpu02",
     "it runs the GPUs without PTX JIT"),
    # 3. CPU level before CUDA minimum
    (variant("v3", cpu_level="x86-64-v3", cuda="11.0"), variant("c122", cpu_level="x86-64-v2", cuda="12.2"), "gpu02",
     "higher CPU level"),
    # 4. CUDA minimum before driver minimum
    (variant("c122", cuda="12.2", driver="450.80.02"), variant("c120", cuda="12.0", driver="535.54.03"), "gpu02",
     "higher CUDA minimum"),
    # 5. driver minimum before the capability floor
    (variant("d535", driver="535.54.03", compute_capabilities=["7.0", "8.0"]),
     variant("d525", driver="525.60.13", compute_capabilities=["8.0"]), "gpu02", "higher driver minimum"),
    # 6. the higher lowest capability: a build aimed at these GPUs
    (variant("ampere", compute_capabilities=["8.0"]), variant("wide", compute_capabilities=["7.0", "8.0", "9.0"]), "gpu02",
     "built for newer GPUs"),
    # POWER levels are ordered too
    (variant("p9", architecture="ppc64le", cpu_level="POWER9"), variant("p8", architecture="ppc64le", cpu_level="POWER8"),
     "power10", "higher CPU level"),
])
def test_the_most_specific_fit_wins_in_either_catalogue_order(winner, loser, node, why):
    node_platform = ic.platform(nodes.no_gpu_facts(nodes.POWER10)) if node == "power10" else gpu02()
    for variants in ([winner, loser], [loser, winner]):
        assert pick(variants, node_platform) == (winner["name"], {loser["name"]: "fits; %s preferred (%s)" % (winner["name"], why)})


def test_a_tie_goes_to_the_variant_listed_first():
    first = variant("first", cuda="12.0", compute_capabilities=["8.0"])
    second = variant("second", cuda="12.0", compute_capabilities=["8.0"])
    assert pick([first, second], gpu02()) == ("first", {"second": "fits; first preferred (listed first)"})
    assert pick([second, first], gpu02()) == ("second", {"first": "fits; second preferred (listed first)"})


def test_others_come_back_in_catalogue_order():
    chosen, others = ic.select(POWERAI, "powerai", gpu02())
    assert chosen["name"] == "cuda12"
    assert [v["name"] for v, _verdict in others] == ["cuda12-avx512", "cuda11-volta", "power9"]


# ---------------------------------------------------------------- architecture spelling


@pytest.mark.parametrize("spelling, canonical", [
    ("x86_64", "x86_64"), ("amd64", "x86_64"), ("AMD64", "x86_64"),
    ("aarch64", "aarch64"), ("arm64", "aarch64"),
    ("ppc64le", "ppc64le"), ("ppc64el", "ppc64le"), ("powerpc64le", "ppc64le"),
])
def test_architecture_spellings(spelling, canonical):
    catalogue = ic.validate({"app": {"variants": [variant("v", architecture=spelling)]}})
    assert catalogue["app"]["variants"][0]["architecture"] == canonical


def test_an_arm64_variant_fits_the_recorded_aarch64_node():
    node = ic.platform(nodes.no_gpu_facts(nodes.CORTEX_A53))
    assert node["architecture"] == "aarch64"
    assert pick([variant("x86", cpu_level="x86-64-v1"), variant("arm", architecture="arm64")], node) == (
        "arm", {"x86": "built for x86_64 (node: aarch64)"})


# ---------------------------------------------------------------- catalogue validation


def _one(**fields):
    return {"powerai": {"variants": [variant("base"), dict({"name": "cuda12", "image": "reg:5000/p:1", "architecture": "x86_64"}, **fields)]}}


@pytest.mark.parametrize("catalogue, message", [
    ([], "the catalogue must be a mapping"),
    ({"bad name": {"variants": [variant("v")]}}, "'bad name': a logical image name is"),
    ({"powerai": []}, "powerai: expected a mapping with 'variants'"),
    ({"powerai": {"variants": []}}, "powerai: variants: required, a non-empty list"),
    ({"powerai": {"variants": [variant("v")], "tags": []}}, "powerai: tags: unknown field"),
    ({"powerai": {"variants": ["img:1"]}}, "powerai: variants[0]: expected a mapping of fields"),
    ({"powerai": {"variants": [{"image": "reg/p:1", "architecture": "x86_64"}]}}, "powerai: variants[0]: name: required"),
    ({"powerai": {"variants": [variant("a b")]}}, "powerai: variants[0]: name: 'a b': use letters"),
    ({"powerai": {"variants": [variant("v"), variant("v")]}}, "powerai: variant v (variants[1]): name: 'v' is also the name of variants[0]"),
    (_one(image="reg:5000/p"), "powerai: variant cuda12 (variants[1]): image: 'reg:5000/p' has no tag or digest"),
    (_one(image="reg:5000/P:1"), "powerai: variant cuda12 (variants[1]): image: 'reg:5000/P:1' is not an image reference"),
    (_one(image="reg/p:1; rm -rf /"), "powerai: variant cuda12 (variants[1]): image: "),
    (_one(architecture="s390x"), "powerai: variant cuda12 (variants[1]): architecture: 's390x' is none of"),
    (_one(architecture=None), "powerai: variant cuda12 (variants[1]): architecture: required"),
    (_one(cpu_level="POWER9"), "powerai: variant cuda12 (variants[1]): cpu_level: 'POWER9' is not an x86_64 level"),
    (_one(cpu_level="x86-64-v5"), "powerai: variant cuda12 (variants[1]): cpu_level: 'x86-64-v5' is not an x86_64 level"),
    (_one(architecture="ppc64le", cpu_level="POWER7"), "cpu_level: 'POWER7' is not a ppc64le level"),
    (_one(architecture="aarch64", cpu_level="armv8.2"), "cpu_level: aarch64 has no CPU levels"),
    (_one(cuda=12.2), "powerai: variant cuda12 (variants[1]): cuda: give the version as a string"),
    (_one(cuda="12.x"), "powerai: variant cuda12 (variants[1]): cuda: '12.x' is not a dotted version"),
    (_one(driver=True), "powerai: variant cuda12 (variants[1]): driver: expected a version string"),
    (_one(cuda_min="12.2"), "powerai: variant cuda12 (variants[1]): cuda_min: unknown field"),
    (_one(compute_capabilities=[]), "powerai: variant cuda12 (variants[1]): compute_capabilities: expected a non-empty list"),
    (_one(compute_capabilities="8.0"), "compute_capabilities: expected a non-empty list"),
    (_one(compute_capabilities=["sm_80"]), "powerai: variant cuda12 (variants[1]): compute_capabilities: 'sm_80' is not a compute capability"),
    (_one(ptx=True), "powerai: variant cuda12 (variants[1]): ptx: PTX is for the highest of compute_capabilities"),
    (_one(compute_capabilities=["8.0"], ptx="yes"), "powerai: variant cuda12 (variants[1]): ptx: expected true or false"),
    (_one(cuda="12.2", gpu=False), "powerai: variant cuda12 (variants[1]): gpu: false, but the variant requires cuda"),
    (_one(gpu="no"), "powerai: variant cuda12 (variants[1]): gpu: expected true or false"),
])
def test_bad_catalogues_name_image_variant_and_field(catalogue, message):
    with pytest.raises(ic.CatalogueError) as caught:
        ic.validate(catalogue)
    assert message in str(caught.value)


def test_validation_fills_defaults_and_is_idempotent():
    catalogue = ic.validate(POWERAI)
    first = catalogue["powerai"]["variants"][0]
    assert first == {"name": "cuda12-avx512", "image": REGISTRY + ":cuda12.2-x86-64-v4", "architecture": "x86_64",
                     "cpu_level": "x86-64-v4", "cuda": "12.2", "driver": None, "compute_capabilities": ["8.0", "9.0"],
                     "ptx": True, "gpu": True}
    cpu_only = ic.validate({"a": {"variants": [variant("c", cpu_level="X86_64-V2", compute_capabilities=None)]}})
    assert cpu_only["a"]["variants"][0]["gpu"] is False and cpu_only["a"]["variants"][0]["cpu_level"] == "x86-64-v2"
    assert ic.validate(catalogue) == catalogue
    assert ic.render_catalogue(catalogue) == ic.render_catalogue(POWERAI)


@pytest.mark.parametrize("given, canonical", [
    (["8.6", 7.0, "8.6", 9], ["7.0", "8.6", "9.0"]),
    (["10.0", "8.0"], ["8.0", "10.0"]),
])
def test_capabilities_are_normalized(given, canonical):
    catalogue = ic.validate({"a": {"variants": [variant("v", compute_capabilities=given)]}})
    assert catalogue["a"]["variants"][0]["compute_capabilities"] == canonical


def test_an_image_with_a_digest_and_no_tag_is_accepted():
    image = "head.cluster:5000/hpc/powerai@sha256:" + "ab" * 32
    assert ic.validate({"a": {"variants": [dict(variant("v"), image=image)]}})["a"]["variants"][0]["image"] == image


# ---------------------------------------------------------------- the platform file


def test_the_platform_file_is_canonical_json_with_a_trailing_newline():
    text = ic.render_platform(gpu01())
    assert text == (
        '{\n  "architecture": "x86_64",\n  "compute_capabilities": [\n    "7.0"\n  ],\n  "cpu_level": "x86-64-v3",\n'
        '  "cuda": "11.4",\n  "driver": "470.182.03"\n}\n')
    assert ic.check_platform(json.loads(text)) == gpu01()


def test_the_same_platform_renders_the_same_bytes():
    spelled_differently = {"compute_capabilities": ["8.0", "7.0", "8.0"], "cuda": "12.2", "driver": "535.129.03",
                           "cpu_level": "X86-64-V3", "architecture": "amd64"}
    same = {"architecture": "x86_64", "cpu_level": "x86-64-v3", "driver": "535.129.03", "cuda": "12.2",
            "compute_capabilities": ["7.0", "8.0"]}
    assert ic.render_platform(spelled_differently) == ic.render_platform(same)
    assert ic.render_platform(same) != ic.render_platform(dict(same, cuda="12.4"))


@pytest.mark.parametrize("data, message", [
    ({"cpu_level": None}, "architecture: required"),
    ({"architecture": "x86_64", "cuda": "twelve"}, "cuda: expected a version string"),
    ({"architecture": "x86_64", "driver": 535}, "driver: expected a version string"),
    ({"architecture": "x86_64", "cpu_level": "POWER9"}, "cpu_level: 'POWER9' is not an x86_64 level"),
    ({"architecture": "x86_64", "compute_capabilities": "8.0"}, "compute_capabilities: expected a list"),
    ({"architecture": "x86_64", "compute_capabilities": ["sm80"]}, "compute_capabilities: 'sm80' is not"),
])
def test_bad_platform_data_is_refused(data, message):
    with pytest.raises(ic.PlatformError, match=re.escape(message)):
        ic.check_platform(data)


# ---------------------------------------------------------------- LSF resources


# IBM's rules for lsf.shared resource names (research/lsf_grammar.md section 2)
_LSF_RESERVED = set("cpu cpuf io logins ls idle maxmem maxswp maxtmp type model status it mem ncpus nprocs ncores nthreads "
                    "define_ncpus_cores define_ncpus_procs define_ncpus_threads ndisks pg r15m r15s r1m swap swp tmp ut local "
                    "dchost jobvm int".split())


def test_lsf_resource_definitions_follow_the_name_rules():
    names = [definition["name"] for definition in ip.LSF_RESOURCES]
    assert len(set(names)) == len(names)
    for definition in ip.LSF_RESOURCES:
        name = definition["name"]
        assert re.match(r"^[A-Za-z_][A-Za-z0-9_]{0,38}$", name), name
        assert name not in _LSF_RESERVED and not name.lower().startswith(("inf", "nan"))
        assert not name.startswith(("gpu_", "ngpus")), "LSF's own GPU resources use these prefixes"
        assert definition["type"] == "Numeric" and definition["increasing"] is False
        assert not set("()#") & set(definition["description"])


@pytest.mark.parametrize("node, expected", [
    ("gpu01", {"x86_64_level": 3, "nvidia_driver": 470, "cuda_version": 11040, "compute_cap_min": 70, "compute_cap_max": 70}),
    ("gpu02", {"x86_64_level": 3, "nvidia_driver": 535, "cuda_version": 12020, "compute_cap_min": 80, "compute_cap_max": 80}),
])
def test_lsf_resources_of_the_test_bed_nodes(node, expected):
    found = ip.lsf_resources(ic.platform(nodes.standin_facts(node, nodes.BROADWELL)))
    assert found == expected
    # cuda_version is NVML's own integer, as the stand-in's values file records it
    assert found["cuda_version"] == int(nodes.standin_values(node)["cuda_driver_version"])
    assert set(found) <= {definition["name"] for definition in ip.LSF_RESOURCES}


@pytest.mark.parametrize("platform_data, expected", [
    ({"architecture": "ppc64le", "cpu_level": "POWER9"}, {"power_generation": 9}),
    ({"architecture": "ppc64le", "cpu_level": None}, {}),
    ({"architecture": "aarch64"}, {}),
    ({"architecture": "x86_64", "cpu_level": "x86-64-v4", "driver": "550.54.15", "cuda": "12.4",
      "compute_capabilities": ["8.6", "7.0", "12.0"]},
     {"x86_64_level": 4, "nvidia_driver": 550, "cuda_version": 12040, "compute_cap_min": 70, "compute_cap_max": 120}),
    ({"architecture": "x86_64", "cuda": "13"}, {"cuda_version": 13000}),
])
def test_lsf_resources_leave_out_what_the_node_lacks(platform_data, expected):
    assert ip.lsf_resources(platform_data) == expected


# ---------------------------------------------------------------- the node command


@pytest.fixture
def files(tmp_path):
    catalogue = tmp_path / "images.json"
    catalogue.write_text(ic.render_catalogue(POWERAI))

    def write(node_platform):
        path = tmp_path / "platform.json"
        path.write_text(ic.render_platform(node_platform))
        return ["--catalogue", str(catalogue), "--platform", str(path), "--node", "gpu01"]
    return write


def command(args):
    out, err = io.StringIO(), io.StringIO()
    status = ic.main(args, stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_the_command_prints_only_the_image(files):
    assert command(files(gpu02()) + ["powerai"]) == (0, REGISTRY + ":cuda12.2\n", "")


def test_explain_shows_every_verdict_on_stderr_and_keeps_stdout_one_line(files):
    status, out, err = command(files(gpu01()) + ["--explain", "powerai"])
    assert status == 0 and out == REGISTRY + ":cuda11.4-volta\n"
    lines = err.splitlines()
    assert lines[0] == "powerai on gpu01 (x86_64, x86-64-v3, driver 470.182.03, CUDA 11.4, cc 7.0):"
    assert [line.split()[0] for line in lines[1:]] == ["cuda12-avx512", "cuda12", "*", "power9"]
    assert lines[3].startswith("* cuda11-volta") and lines[3].endswith("  chosen")
    assert lines[4].endswith("built for ppc64le (node: x86_64)")


def test_no_fit_exits_3_with_the_message_on_stderr(files):
    status, out, err = command(files(dict(gpu01(), cuda="10.0")) + ["powerai"])
    assert status == 3 and out == ""
    assert err.startswith("image-variant: powerai: no variant fits gpu01 (x86_64, x86-64-v3, driver 470.182.03, CUDA 10.0, cc 7.0): ")
    assert "cuda11-volta: needs CUDA 11.4 (driver supports 10.0)" in err


@pytest.mark.parametrize("break_it, message", [
    (lambda c, p: c.unlink(), "images.json: cannot read the image catalogue"),
    (lambda c, p: c.write_text("{not json"), "images.json: the image catalogue is not JSON"),
    (lambda c, p: c.write_text("[]"), "images.json: the image catalogue must be a JSON object"),
    (lambda c, p: c.write_text('{"powerai": {"variants": [{"name": "x"}]}}'), "images.json: powerai: variant x (variants[0]): image: required"),
    (lambda c, p: p.write_text('{"architecture": "x86_64", "cuda": 12.2}'), "platform.json: cuda: expected a version string"),
    (lambda c, p: p.unlink(), "platform.json: cannot read the platform file"),
])
def test_bad_files_exit_2_naming_the_file(files, tmp_path, break_it, message):
    args = files(gpu01())
    break_it(tmp_path / "images.json", tmp_path / "platform.json")
    status, out, err = command(args + ["powerai"])
    assert status == 2 and out == ""
    assert message in err and str(tmp_path) in err


def test_an_unknown_logical_image_exits_2(files):
    status, _out, err = command(files(gpu01()) + ["tensorflow"])
    assert status == 2 and "no logical image 'tensorflow'" in err


def test_the_file_runs_alone_as_a_command(files, tmp_path):
    """Copied to a node: plain python3, isolated mode, no Ansible and no collection on the path."""
    script = tmp_path / "image-variant"
    script.write_bytes(Path(ic.__file__).read_bytes())
    run = subprocess.run([sys.executable, "-I", str(script)] + files(gpu02()) + ["powerai"],
                         capture_output=True, text=True, check=False, cwd=str(tmp_path))
    assert (run.returncode, run.stdout, run.stderr) == (0, REGISTRY + ":cuda12.2\n", "")
    run = subprocess.run([sys.executable, "-I", str(script)] + files(dict(gpu02(), cuda="11.0")) + ["powerai"],
                         capture_output=True, text=True, check=False, cwd=str(tmp_path))
    assert run.returncode == 3 and "powerai: no variant fits gpu01" in run.stderr


def test_the_node_copy_needs_only_the_standard_library(tmp_path):
    """The file alone in an empty directory, run with -I -S (no site-packages: no Ansible, no collection)."""
    script = tmp_path / "alone" / "_image_catalogue.py"
    script.parent.mkdir()
    script.write_bytes(Path(ic.__file__).read_bytes())
    run = subprocess.run([sys.executable, "-I", "-S", str(script), "--help"],
                         capture_output=True, text=True, check=False, cwd=str(script.parent))
    assert (run.returncode, run.stderr) == (0, "") and run.stdout.startswith("usage: image-variant")
