# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_containers_conf: lossless key edits in storage.conf / containers.conf / registries.conf (TOML subset)."""

import tomllib

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._containers_conf import (
    ContainersConfError,
    get_value,
    render_value,
    set_array_entries,
    set_keys,
)

STORAGE = """# storage.conf as a distribution ships it
[storage]
driver = "vfs"   # the distribution's default
runroot = "/run/containers/storage"

[storage.options]
additionalimagestores = [
  "/a", # a comment inside the array
  "/b",
]

[storage.options.overlay]
#mount_program = "/usr/bin/fuse-overlayfs"
mountopt = 'nodev'
"""

WANT = {"storage": {"driver": "overlay"}, "storage.options.overlay": {"mount_program": "/usr/bin/fuse-overlayfs"}}


def test_sets_keys_and_keeps_every_other_line():
    out, changed = set_keys(STORAGE, WANT)
    assert changed == ["storage.driver", "storage.options.overlay.mount_program"]
    parsed = tomllib.loads(out)
    assert parsed["storage"]["driver"] == "overlay"
    assert parsed["storage"]["options"]["overlay"]["mount_program"] == "/usr/bin/fuse-overlayfs"
    assert parsed["storage"]["options"]["additionalimagestores"] == ["/a", "/b"]
    # Only the driver line changed and one line was added.
    before, after = STORAGE.splitlines(), out.splitlines()
    assert len(after) == len(before) + 1
    assert [line for line in before if line not in after] == ['driver = "vfs"   # the distribution\'s default']


def test_second_run_is_no_change():
    out = set_keys(STORAGE, WANT)[0]
    again, changed = set_keys(out, WANT)
    assert again == out and changed == []


def test_values_compare_as_values_not_text():
    out, changed = set_keys(STORAGE, {"storage.options.overlay": {"mountopt": "nodev"}})
    assert out == STORAGE and changed == []


def test_missing_table_is_appended_and_file_created():
    out, changed = set_keys(None, {"containers": {"cgroups": "disabled"}, "engine": {"events_logger": "file"}})
    assert tomllib.loads(out) == {"containers": {"cgroups": "disabled"}, "engine": {"events_logger": "file"}}
    assert changed == ["containers.cgroups", "engine.events_logger"]


def test_none_removes_a_key_and_absent_key_is_no_change():
    out, changed = set_keys(STORAGE, {"storage": {"runroot": None, "graphroot": None}})
    assert "runroot" not in tomllib.loads(out)["storage"]
    assert changed == ["storage.runroot"]


def test_multiline_array_replaced_whole():
    out = set_keys(STORAGE, {"storage.options": {"additionalimagestores": ["/c"]}})[0]
    assert tomllib.loads(out)["storage"]["options"]["additionalimagestores"] == ["/c"]
    assert '"/a"' not in out


def test_root_keys_go_before_the_first_header():
    out = set_keys("[engine]\nx = 1\n", {"": {"unqualified-search-registries": ["docker.io"]}})[0]
    assert tomllib.loads(out) == {"unqualified-search-registries": ["docker.io"], "engine": {"x": 1}}


def test_registries_entry_found_by_location_or_appended():
    text = 'unqualified-search-registries = ["docker.io"]\n\n[[registry]]\nlocation = "other:5000"\nblocked = true\n'
    out, changed = set_array_entries(text, "registry", "location", [{"location": "head:5000", "insecure": True}])
    regs = tomllib.loads(out)["registry"]
    assert regs == [{"location": "other:5000", "blocked": True}, {"location": "head:5000", "insecure": True}]
    assert changed == ["registry[head:5000].location", "registry[head:5000].insecure"]
    out2, changed2 = set_array_entries(out, "registry", "location", [{"location": "other:5000", "insecure": False}])
    assert tomllib.loads(out2)["registry"][0] == {"location": "other:5000", "blocked": True, "insecure": False}
    assert changed2 == ["registry[other:5000].insecure"]
    assert set_array_entries(out2, "registry", "location", [{"location": "other:5000", "insecure": False}]) == (out2, [])


def test_hostile_strings_stay_strings():
    value = 'a"b\\c\u00e9\ttab ] # not a comment'
    out = set_keys(None, {"engine": {"x": value}})[0]
    assert tomllib.loads(out)["engine"]["x"] == value
    assert get_value(out, "engine", "x") == value


@pytest.mark.parametrize("bad", ["line\nbreak", "nul\x00"])
def test_control_characters_refused(bad):
    with pytest.raises(ContainersConfError):
        set_keys(None, {"engine": {"x": bad}})


def test_bad_table_name_refused():
    with pytest.raises(ContainersConfError):
        set_keys(None, {"a]\n[b": {"x": 1}})


def test_unreadable_value_named_by_line():
    with pytest.raises(ContainersConfError) as err:
        set_keys('[engine]\nx = 1979-05-27\n', {"engine": {"x": 1}})
    assert err.value.line == 2


def test_render_value_types():
    assert render_value(True) == "true"
    assert render_value(7) == "7"
    assert render_value(["a", 1]) == '["a", 1]'
    with pytest.raises(ContainersConfError):
        render_value(1.5)


def test_crlf_file_keeps_crlf():
    out = set_keys("[storage]\r\ndriver = \"vfs\"\r\n", {"storage": {"driver": "overlay", "x": 1}})[0]
    assert out == "[storage]\r\ndriver = \"overlay\"\r\nx = 1\r\n"
