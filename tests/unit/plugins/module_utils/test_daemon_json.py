# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The daemon.json model: parse errors, deep merge, semantic no-op."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings as hyp_settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _daemon_json as dj
from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "daemon_json"

NVIDIA = {"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "runtimeArgs": []}}}


def fixture(name):
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_absent_file_becomes_the_settings_rendered_with_four_spaces_and_newline():
    text, merged, changed, warnings = dj.compute(None, NVIDIA)
    assert text == ('{\n    "runtimes": {\n        "nvidia": {\n            "path": "nvidia-container-runtime",\n'
                    '            "runtimeArgs": []\n        }\n    }\n}\n')
    assert merged == NVIDIA
    assert changed == ["runtimes"]
    assert warnings == []


def test_blank_file_is_an_empty_object():
    assert dj.parse("  \n") == {}
    text, _m, changed, _w = dj.compute("\n", {"live-restore": True})
    assert json.loads(text) == {"live-restore": True}
    assert changed == ["live-restore"]


def test_nvidia_ctk_output_is_not_rewritten_when_equal_as_json():
    original = fixture("nvidia-ctk-set-as-default-cdi.json")
    assert not original.endswith("\n")
    wanted = {"default-runtime": "nvidia", "features": {"cdi": True},
              "runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}}
    text, merged, changed, _w = dj.compute(original, wanted)
    assert text is original
    assert changed == []
    assert merged == json.loads(original)


def test_compact_site_file_untouched_on_rerun_but_merged_when_needed():
    original = fixture("site-compact.json")
    same = {"live-restore": True, "log-opts": {"max-file": "3"}, "insecure-registries": ["10.0.0.0/8"]}
    assert dj.compute(original, same)[0] is original
    text, merged, changed, _w = dj.compute(original, {"insecure-registries": ["head01:5000"], **NVIDIA})
    assert merged["insecure-registries"] == ["10.0.0.0/8", "head01:5000"]
    assert changed == ["insecure-registries", "runtimes"]
    # every key nobody asked about survives, in its original order
    assert list(merged)[:5] == ["data-root", "insecure-registries", "log-driver", "log-opts", "live-restore"]
    assert merged["log-opts"] == {"max-size": "100m", "max-file": "3"}
    assert text.endswith("}\n") and '\n    "data-root"' in text


def test_merge_into_nvidia_ctk_file_keeps_other_runtimes_and_features():
    original = json.loads(fixture("nvidia-ctk-set-as-default-cdi.json"))
    original["runtimes"]["crun"] = {"path": "/usr/bin/crun"}
    merged, changed = dj.merge(original, {"runtimes": {"nvidia": {"runtimeArgs": [], "args": None}}})
    assert merged["runtimes"]["nvidia"] == {"path": "nvidia-container-runtime", "runtimeArgs": []}
    assert merged["runtimes"]["crun"] == {"path": "/usr/bin/crun"}
    assert merged["features"] == {"cdi": True}
    assert changed == ["runtimes.nvidia.runtimeArgs", "runtimes.nvidia.args"]


def test_null_deletes_at_any_depth_and_absent_null_is_no_change():
    current = {"a": {"b": {"c": 1, "d": 2}}, "e": 3}
    merged, changed = dj.merge(current, {"a": {"b": {"c": None}}, "e": None, "zz": None})
    assert merged == {"a": {"b": {"d": 2}}}
    assert changed == ["a.b.c", "e"]
    assert current == {"a": {"b": {"c": 1, "d": 2}}, "e": 3}  # input not mutated


def test_new_object_drops_its_null_leaves():
    merged, changed = dj.merge({}, {"log-opts": {"max-size": "10m", "labels": None}})
    assert merged == {"log-opts": {"max-size": "10m"}}
    assert changed == ["log-opts"]


def test_list_union_keeps_order_and_dedups_and_replace_replaces():
    current = {"insecure-registries": ["a:5000", "b:5000"]}
    merged, changed = dj.merge(current, {"insecure-registries": ["b:5000", "c:5000", "c:5000"]})
    assert merged["insecure-registries"] == ["a:5000", "b:5000", "c:5000"]
    assert changed == ["insecure-registries"]
    merged, changed = dj.merge(current, {"insecure-registries": ["b:5000"]})
    assert merged == current and changed == []
    merged, changed = dj.merge(current, {"insecure-registries": ["c:5000"]}, list_merge="replace")
    assert merged["insecure-registries"] == ["c:5000"]
    assert changed == ["insecure-registries"]


def test_scalar_replaced_by_object_and_object_by_scalar():
    merged, changed = dj.merge({"features": True}, {"features": {"cdi": True}})
    assert merged == {"features": {"cdi": True}} and changed == ["features"]
    merged, changed = dj.merge({"features": {"cdi": True}}, {"features": False})
    assert merged == {"features": False} and changed == ["features"]


def test_true_is_not_one_and_one_is_one_point_zero():
    assert not dj.json_equal(True, 1)
    assert not dj.json_equal({"a": [1]}, {"a": [True]})
    assert dj.json_equal(1, 1.0)
    assert not dj.json_equal("1", 1)
    merged, changed = dj.merge({"debug": 1}, {"debug": True})
    assert changed == ["debug"] and merged["debug"] is True


def test_malformed_file_reports_path_line_column():
    with pytest.raises(FileEditError) as err:
        dj.compute(fixture("malformed-trailing-comma.json"), NVIDIA, path="/etc/docker/daemon.json")
    assert str(err.value).startswith("/etc/docker/daemon.json:5:5: malformed JSON: Expecting value")


def test_top_level_must_be_an_object():
    with pytest.raises(FileEditError, match="top level must be a JSON object, found list"):
        dj.parse(fixture("top-level-list.json"), "x.json")


def test_duplicate_keys_warn_and_last_wins():
    warnings = []
    doc = dj.parse('{"debug": false, "debug": true}', "d.json", warnings)
    assert doc == {"debug": True}
    assert warnings == ["d.json: key 'debug' appears more than once; the last one wins"]


def test_bad_list_merge_mode():
    with pytest.raises(ValueError):
        dj.merge({}, {}, list_merge="union")


_json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.text("ab", max_size=2)
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", min_size=1, max_size=2), inner, max_size=3),
    max_leaves=8)
_docs = st.dictionaries(st.text("abc", min_size=1, max_size=2), _json, max_size=4)


@hyp_settings(max_examples=300, deadline=None)
@given(current=_docs, wanted=_docs, mode=st.sampled_from(["append", "replace"]))
def test_merge_is_idempotent_and_reports_exactly_when_it_changes(current, wanted, mode):
    text = dj.render(current)
    new_text, merged, changed, _w = dj.compute(text, wanted, mode)
    assert json.loads(new_text) == merged or dj.json_equal(json.loads(new_text), merged)
    assert (new_text is text) == (changed == [])
    # a second run with the same settings changes nothing
    again, merged2, changed2, _w = dj.compute(new_text, wanted, mode)
    assert again is new_text and changed2 == []
    assert dj.json_equal(merged2, merged)
