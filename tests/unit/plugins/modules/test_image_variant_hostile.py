# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""image_variant and the node's resolver against hostile catalogues and platform files.

Names and references are whole values (a trailing newline is not "the end"), version numbers have a bounded
number of digits, and a catalogue or platform file nested past what a JSON reader can follow is bad input with
the file named, never a traceback at job start.
"""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_catalogue as ic
from ansible_collections.hpc.gpu_containers.plugins.modules import image_variant
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

RESOLVER = Path(ic.__file__)
VARIANT = {"name": "cuda12", "image": "head.cluster:5000/hpc/powerai:cuda12.2", "architecture": "x86_64",
           "cuda": "12.2", "driver": "535.54.03", "compute_capabilities": ["8.0"]}
PLATFORM = {"architecture": "x86_64", "cpu_level": "x86-64-v3", "driver": "535.129.03", "cuda": "12.2",
            "compute_capabilities": ["8.0"]}
HUGE = "1" * 5000


def catalogue(logical="powerai", **fields):
    return {logical: {"variants": [dict(VARIANT, **fields)]}}


@pytest.mark.parametrize("bad, field", [
    (catalogue(name="cuda12\n"), "name"),
    (catalogue(image="head.cluster:5000/hpc/powerai:cuda12.2\n"), "image"),
    (catalogue(image="head.cluster:5000/hpc/powerai:cuda12.2\nevil/image:1"), "image"),
    (catalogue(logical="powerai\n"), "a logical image name"),
], ids=["variant-name", "image", "image-two-lines", "logical-name"])
def test_a_trailing_newline_is_part_of_the_name_and_refused(bad, field):
    with pytest.raises(ic.CatalogueError) as err:
        ic.validate(bad)
    assert field in str(err.value)


@pytest.mark.parametrize("fields", [
    {"cuda": "12.2\n"}, {"driver": "535.54.03\n"}, {"compute_capabilities": ["8.0\n"]}, {"cpu_level": "x86-64-v3\n"},
])
def test_a_requirement_with_a_trailing_newline_is_never_written_with_it(fields):
    """Requirements are compared, not passed on: refused, or kept in their canonical form, never with the newline."""
    try:
        validated = ic.validate(catalogue(**fields))["powerai"]["variants"][0]
    except ic.CatalogueError as err:
        assert str(err).startswith("powerai: variant cuda12 (variants[0]): %s: " % next(iter(fields)))
    else:
        assert "\\n" not in json.dumps(validated)


@pytest.mark.parametrize("field", ["cuda", "driver"])
def test_a_5000_digit_minimum_is_refused_as_bad_input(field):
    with pytest.raises(ic.CatalogueError) as err:
        ic.validate(catalogue(**{field: HUGE}))
    assert "%s: " % field in str(err.value) and "dotted version" in str(err.value)


@pytest.mark.parametrize("field", ["cuda", "driver"])
def test_a_5000_digit_platform_version_is_refused_as_bad_input(field):
    with pytest.raises(ic.PlatformError) as err:
        ic.check_platform(dict(PLATFORM, **{field: HUGE}))
    assert str(err.value).startswith("%s: " % field)


def test_a_5000_digit_cuda_minimum_through_the_module_is_a_clear_failure(capsys):
    facts = {"present": True, "driver_version": "535.129.03", "cuda_driver_version": "12.2",
             "cpu": {"architecture": "x86_64", "level": "x86-64-v3"},
             "gpus": [{"compute_capability": "8.0"}]}
    res = run_module(image_variant, capsys, catalogue=catalogue(cuda=HUGE), image="powerai", gpu_facts=facts,
                     node="gpu01")
    assert res["failed"] is True and "exception" not in res
    assert res["msg"].startswith("catalogue: powerai: variant cuda12 (variants[0]): cuda: ")


def _resolve(tmp_path, catalogue_text, platform_text):
    (tmp_path / "images.json").write_text(catalogue_text)
    (tmp_path / "platform.json").write_text(platform_text)
    out, err = io.StringIO(), io.StringIO()
    code = ic.main(["--catalogue", str(tmp_path / "images.json"), "--platform", str(tmp_path / "platform.json"),
                    "--node", "gpu01", "powerai"], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


NESTED = "[" * 100000 + "]" * 100000


@pytest.mark.parametrize("which", ["catalogue", "platform"])
def test_a_deeply_nested_file_is_bad_input_not_a_recursion_error(tmp_path, which):
    cat = '{"powerai": %s}' % NESTED if which == "catalogue" else json.dumps(catalogue())
    plat = '{"architecture": %s}' % NESTED if which == "platform" else json.dumps(PLATFORM)
    code, out, err = _resolve(tmp_path, cat, plat)
    path = tmp_path / ("images.json" if which == "catalogue" else "platform.json")
    assert code == ic.EXIT_BAD_INPUT and out == ""
    assert err.startswith("image-variant: %s: " % path) and "nested" in err and err.count("\n") == 1


def test_the_resolver_command_refuses_a_trailing_newline_image(tmp_path):
    """The line the starter hands LSF's driver as LSB_CONTAINER_IMAGE is one reference, never two."""
    code, out, err = _resolve(tmp_path, json.dumps(catalogue(image="head.cluster:5000/hpc/powerai:1\n")),
                              json.dumps(PLATFORM))
    assert code == ic.EXIT_BAD_INPUT and out == "" and "image: " in err


def test_the_resolver_as_the_node_runs_it_gives_no_traceback(tmp_path):
    (tmp_path / "images.json").write_text('{"powerai": %s}' % NESTED)
    (tmp_path / "platform.json").write_text(json.dumps(PLATFORM))
    proc = subprocess.run([sys.executable, "-I", str(RESOLVER), "--catalogue", str(tmp_path / "images.json"),
                           "--platform", str(tmp_path / "platform.json"), "powerai"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
