# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""image_variant through AnsibleModule: the test bed's gpu01/gpu02 facts, one or every logical
image, no fit (failing or reported), bad input, check mode, and documentation = argument_spec."""

import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.hpc.gpu_containers.plugins.doc_fragments.file_edit import ModuleDocFragment as FileEditFragment
from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_catalogue
from ansible_collections.hpc.gpu_containers.plugins.modules import image_variant
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "module_utils"))
import image_nodes as nodes  # noqa: E402

REGISTRY = "head.cluster:5000/hpc"
CATALOGUE = {
    "powerai": {"variants": [
        {"name": "cuda12-avx512", "image": REGISTRY + "/powerai:cuda12.2-x86-64-v4", "architecture": "x86_64",
         "cpu_level": "x86-64-v4", "cuda": "12.2", "compute_capabilities": ["8.0", "9.0"], "ptx": True},
        {"name": "cuda12", "image": REGISTRY + "/powerai:cuda12.2", "architecture": "x86_64",
         "cuda": "12.2", "compute_capabilities": ["8.0", "9.0"], "ptx": True},
        {"name": "cuda11-volta", "image": REGISTRY + "/powerai:cuda11.4", "architecture": "amd64",
         "cpu_level": "x86-64-v2", "cuda": "11.4", "compute_capabilities": ["7.0"]},
    ]},
    "hopper-only": {"variants": [
        {"name": "sm90", "image": REGISTRY + "/hopper:1.0", "architecture": "x86_64", "cuda": "12.2",
         "compute_capabilities": ["9.0"]},
    ]},
}


def run(capsys, **args):
    return run_module(image_variant, capsys, **args)


def facts(node, cpu=nodes.BROADWELL):
    return nodes.standin_facts(node, cpu)


@pytest.mark.parametrize("node, variant, image", [
    ("gpu01", "cuda11-volta", REGISTRY + "/powerai:cuda11.4"),
    ("gpu02", "cuda12", REGISTRY + "/powerai:cuda12.2"),
])
def test_each_test_bed_node_gets_its_variant(capsys, node, variant, image):
    res = run(capsys, catalogue=CATALOGUE, image="powerai", gpu_facts=facts(node), node=node)
    assert res["changed"] is False and "failed" not in res
    assert res["variants"] == {"powerai": image} and res["chosen"] == {"powerai": variant}
    assert res["unresolved"] == {}
    assert list(res["verdicts"]["powerai"]) == ["cuda12-avx512", "cuda12", "cuda11-volta"]
    assert res["verdicts"]["powerai"][variant] == "chosen"
    assert res["verdicts"]["powerai"]["cuda12-avx512"].startswith("needs x86-64-v4 (node: x86-64-v3)")


def test_the_platform_is_returned_and_check_mode_gives_the_same(capsys):
    res = run(capsys, catalogue=CATALOGUE, image="powerai", gpu_facts=facts("gpu02", nodes.AVX512), node="gpu02")
    assert res["platform"] == {"architecture": "x86_64", "cpu_level": "x86-64-v4", "driver": "535.129.03", "cuda": "12.2",
                               "compute_capabilities": ["8.0"]}
    assert res["chosen"] == {"powerai": "cuda12-avx512"}
    checked = run(capsys, catalogue=CATALOGUE, image="powerai", gpu_facts=facts("gpu02", nodes.AVX512), node="gpu02",
                  _ansible_check_mode=True)
    assert {k: checked[k] for k in ("changed", "platform", "variants", "chosen", "verdicts", "unresolved")} == {
        k: res[k] for k in ("changed", "platform", "variants", "chosen", "verdicts", "unresolved")}


def test_without_image_every_logical_image_is_resolved_and_no_fit_is_reported(capsys):
    res = run(capsys, catalogue=CATALOGUE, gpu_facts=facts("gpu01"), node="gpu01")
    assert "failed" not in res and res["changed"] is False
    assert res["variants"] == {"powerai": REGISTRY + "/powerai:cuda11.4"}
    assert res["unresolved"] == {"hopper-only": (
        "hopper-only: no variant fits gpu01 (x86_64, x86-64-v3, driver 470.182.03, CUDA 11.4, cc 7.0): "
        "sm90: needs CUDA 12.2 (driver supports 11.4), compiled for cc 9.0 (node: cc 7.0)")}
    assert res["verdicts"]["hopper-only"] == {"sm90": "needs CUDA 12.2 (driver supports 11.4), compiled for cc 9.0 (node: cc 7.0)"}


def test_a_named_image_without_a_fit_fails_with_every_reason(capsys):
    res = run(capsys, catalogue=CATALOGUE, image="hopper-only", gpu_facts=facts("gpu02"), node="gpu02")
    assert res["failed"] is True
    assert res["msg"] == ("hopper-only: no variant fits gpu02 (x86_64, x86-64-v3, driver 535.129.03, CUDA 12.2, cc 8.0): "
                          "sm90: compiled for cc 9.0 (node: cc 8.0)")
    assert res["unresolved"] == {"hopper-only": res["msg"]} and res["variants"] == {}


def test_fail_on_no_fit_false_reports_it_instead(capsys):
    res = run(capsys, catalogue=CATALOGUE, image="hopper-only", gpu_facts=facts("gpu02"), node="gpu02", fail_on_no_fit=False)
    assert "failed" not in res
    assert res["unresolved"]["hopper-only"].startswith("hopper-only: no variant fits gpu02 (")
    assert res["variants"] == {} and res["chosen"] == {}


def test_a_node_without_gpu_fails_the_gpu_image(capsys):
    res = run(capsys, catalogue=CATALOGUE, image="powerai", gpu_facts=nodes.no_gpu_facts(nodes.BROADWELL), node="login01")
    assert res["failed"] is True
    assert res["msg"].startswith("powerai: no variant fits login01 (x86_64, x86-64-v3, no GPU driver): ")
    for name in ("cuda12-avx512", "cuda12", "cuda11-volta"):
        assert "%s: " % name in res["msg"]
    assert res["verdicts"]["powerai"]["cuda12"] == "needs a GPU (node: no GPU driver)"


def test_the_node_name_defaults_to_the_short_host_name(capsys, monkeypatch):
    monkeypatch.setattr(image_variant.socket, "gethostname", lambda: "gpu77.cluster.example")
    res = run(capsys, catalogue=CATALOGUE, image="hopper-only", gpu_facts=facts("gpu01"))
    assert res["msg"].startswith("hopper-only: no variant fits gpu77 (")


@pytest.mark.parametrize("args, message", [
    (dict(catalogue={"powerai": {"variants": [{"name": "v", "image": "r/p:1", "architecture": "x86_64", "cuda": 12.2}]}}),
     "catalogue: powerai: variant v (variants[0]): cuda: give the version as a string"),
    (dict(catalogue=CATALOGUE, image="tensorflow"), "image: no logical image 'tensorflow' in the catalogue (it has: hopper-only, powerai)"),
    (dict(catalogue=CATALOGUE, gpu_facts={"present": False}), "gpu_facts: no cpu.architecture"),
])
def test_bad_input_fails_with_a_clear_message(capsys, args, message):
    args.setdefault("gpu_facts", facts("gpu01"))
    res = run(capsys, node="gpu01", **args)
    assert res["failed"] is True and res["msg"].startswith(message)


def test_documentation_matches_the_argument_spec(monkeypatch):
    captured = {}

    class Recorder:
        def __init__(self, argument_spec, supports_check_mode=False, **kwargs):
            captured.update(spec=argument_spec, check_mode=supports_check_mode, extra=kwargs)
            raise SystemExit(0)

    monkeypatch.setattr(image_variant, "AnsibleModule", Recorder)
    with pytest.raises(SystemExit):
        image_variant.main()
    doc = yaml.safe_load(image_variant.DOCUMENTATION)
    assert doc["extends_documentation_fragment"] == ["hpc.gpu_containers.file_edit"]
    options = dict(yaml.safe_load(FileEditFragment.DOCUMENTATION)["options"], **doc["options"])
    assert set(options) == set(captured["spec"])
    for name, spec in captured["spec"].items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("required", False) == spec.get("required", False), name
        assert options[name].get("default") == spec.get("default"), name
    assert captured["check_mode"] is True and doc["attributes"]["check_mode"]["support"] == "full"
    assert doc["version_added"] == "0.2.0"
    returned = yaml.safe_load(image_variant.RETURN)
    assert set(returned) == {"platform", "variants", "chosen", "verdicts", "unresolved", "backup_file", "node_images",
                             "stale_node_images"}
    assert doc["options"]["node_repository"]["version_added"] == "0.3.0"
    yaml.safe_load(image_variant.EXAMPLES)


def test_the_files_the_node_command_reads_are_written_then_left_alone(capsys, tmp_path):
    platform_file, catalogue_file = tmp_path / "platform.json", tmp_path / "images.json"
    args = dict(catalogue=CATALOGUE, gpu_facts=facts("gpu02"), node="gpu02", platform_file=str(platform_file),
                catalogue_file=str(catalogue_file))
    checked = run(capsys, _ansible_check_mode=True, _ansible_diff=True, **args)
    assert checked["changed"] is True and not platform_file.exists() and not catalogue_file.exists()
    assert [d["after_header"] for d in checked["diff"]] == ["%s (content)" % platform_file, "%s (content)" % catalogue_file]
    first = run(capsys, **args)
    assert first["changed"] is True and "diff" not in first
    assert json.loads(platform_file.read_text()) == first["platform"]
    assert platform_file.stat().st_mode & 0o777 == 0o644 and catalogue_file.stat().st_mode & 0o777 == 0o644
    # the node's command reads them back and picks what the module picked
    out, err = io.StringIO(), io.StringIO()
    assert _image_catalogue.main(["--catalogue", str(catalogue_file), "--platform", str(platform_file), "--node",
                                  "gpu02", "powerai"], out, err) == 0
    assert out.getvalue() == first["variants"]["powerai"] + "\n"
    again = run(capsys, **args)
    assert again["changed"] is False


def test_a_changed_node_or_catalogue_rewrites_its_file_with_a_diff_and_backup(capsys, tmp_path):
    platform_file, catalogue_file = tmp_path / "platform.json", tmp_path / "images.json"
    args = dict(catalogue=CATALOGUE, gpu_facts=facts("gpu02"), node="gpu02", platform_file=str(platform_file),
                catalogue_file=str(catalogue_file))
    run(capsys, **args)
    catalogue_before = catalogue_file.read_text()
    args["gpu_facts"] = facts("gpu02", nodes.AVX512)
    res = run(capsys, _ansible_diff=True, backup=True, **args)
    assert res["changed"] is True and list(res["backup_file"]) == [str(platform_file)]
    (diff,) = [d for d in res["diff"] if d["before"] != d["after"]]
    assert '"x86-64-v3"' in diff["before"] and '"x86-64-v4"' in diff["after"]
    assert catalogue_file.read_text() == catalogue_before


def test_the_platform_file_is_written_even_when_no_variant_fits(capsys, tmp_path):
    platform_file = tmp_path / "platform.json"
    res = run(capsys, catalogue=CATALOGUE, image="hopper-only", gpu_facts=facts("gpu01"), node="gpu01",
              platform_file=str(platform_file))
    assert res["failed"] is True and "no variant fits gpu01" in res["msg"]
    assert json.loads(platform_file.read_text()) == res["platform"]


def test_the_node_command_is_installed_with_its_directory_and_is_the_rule_the_module_ran(capsys, tmp_path):
    command_file = tmp_path / "lib" / "hpc" / "_image_catalogue.py"
    platform_file = tmp_path / "etc" / "platform.json"
    args = dict(catalogue=CATALOGUE, gpu_facts=facts("gpu01"), node="gpu01", platform_file=str(platform_file),
                catalogue_file=str(tmp_path / "etc" / "images.json"), command_file=str(command_file))
    checked = run(capsys, _ansible_check_mode=True, **args)
    assert checked["changed"] is True and not (tmp_path / "lib").exists() and not (tmp_path / "etc").exists()
    first = run(capsys, **args)
    assert first["changed"] is True
    assert command_file.read_bytes() == Path(_image_catalogue.__file__).read_bytes()
    assert command_file.stat().st_mode & 0o777 == 0o644
    assert command_file.parent.stat().st_mode & 0o777 == 0o755
    # the installed command, run as a node runs it, picks the module's variant
    import subprocess
    proc = subprocess.run([sys.executable, str(command_file), "--catalogue", str(tmp_path / "etc" / "images.json"),
                           "--platform", str(platform_file), "--node", "gpu01", "powerai"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout == first["variants"]["powerai"] + "\n"
    command_file.write_text("# an older command\n")
    fixed = run(capsys, _ansible_diff=True, **args)
    assert fixed["changed"] is True and command_file.read_bytes() == Path(_image_catalogue.__file__).read_bytes()
    assert run(capsys, **args)["changed"] is False


def test_node_images_name_each_runnable_logical_image_and_the_stale_ones(capsys, tmp_path):
    """A node keeps its variant under one local name; a logical image no variant fits is named for removal. The
    node's command prints the same name (--node-image), and still fails with the reasons where none fits."""
    res = run(capsys, catalogue=CATALOGUE, gpu_facts=facts("gpu01"), node="gpu01", node_repository="localhost/hpc-node",
              platform_file=str(tmp_path / "platform.json"), catalogue_file=str(tmp_path / "images.json"))
    assert res["node_images"] == {"powerai": "localhost/hpc-node/powerai:node"}
    assert res["stale_node_images"] == ["localhost/hpc-node/hopper-only:node"]
    files = ["--catalogue", str(tmp_path / "images.json"), "--platform", str(tmp_path / "platform.json"), "--node", "gpu01"]
    out, err = io.StringIO(), io.StringIO()
    assert _image_catalogue.main(files + ["--node-image", "localhost/hpc-node", "powerai"], out, err) == 0
    assert out.getvalue() == "localhost/hpc-node/powerai:node\n"
    out, err = io.StringIO(), io.StringIO()
    assert _image_catalogue.main(files + ["--node-image", "localhost/hpc-node", "--and-variant", "powerai"], out, err) == 0
    assert out.getvalue() == "localhost/hpc-node/powerai:node\n%s\n" % res["variants"]["powerai"]
    with pytest.raises(SystemExit):  # --and-variant alone is a usage error
        _image_catalogue.main(files + ["--and-variant", "powerai"], io.StringIO(), io.StringIO())
    out, err = io.StringIO(), io.StringIO()
    assert _image_catalogue.main(files + ["--node-image", "localhost/hpc-node", "hopper-only"], out, err) == 3
    assert out.getvalue() == "" and "hopper-only: no variant fits gpu01" in err.getvalue()
    # without node_repository the result is as before
    assert "node_images" not in run(capsys, catalogue=CATALOGUE, gpu_facts=facts("gpu01"), node="gpu01")


@pytest.mark.parametrize("repository", ["hpc-node", "docker.io", "localhost/HPC", "localhost/a//b", "localhost/-x",
                                        "localhost/hpc-node/", "localhost/x y", "localhost/x\n"])
def test_a_node_repository_that_could_reach_docker_hub_or_is_no_repository_is_refused(capsys, repository):
    res = run(capsys, catalogue=CATALOGUE, gpu_facts=facts("gpu01"), node="gpu01", node_repository=repository)
    assert res["failed"] is True and res["msg"].startswith("node_repository: node image repository %r" % repository)


def test_logical_names_that_share_a_node_image_or_cannot_be_one_are_refused(capsys):
    variant = CATALOGUE["powerai"]
    res = run(capsys, catalogue={"powerai": variant, "PowerAI": variant}, gpu_facts=facts("gpu01"), node="gpu01",
              node_repository="localhost/hpc-node")
    assert res["failed"] is True
    assert res["msg"] == ("node_repository: PowerAI and powerai: both would be kept on the nodes as "
                          "localhost/hpc-node/powerai:node (logical image names that differ only in case)")
    res = run(capsys, catalogue={"a..b": variant}, gpu_facts=facts("gpu01"), node="gpu01",
              node_repository="registry.example.com:5000/hpc")
    assert res["failed"] is True and res["msg"].startswith("node_repository: a..b: a logical image whose node image")
    # a host with a dot or a port is a registry host
    assert run(capsys, catalogue={"Deep_Learning": variant}, gpu_facts=facts("gpu02"), node="gpu02",
               node_repository="registry.example.com:5000/hpc")["node_images"] == {
        "Deep_Learning": "registry.example.com:5000/hpc/deep_learning:node"}
