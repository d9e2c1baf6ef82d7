# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_containers_conf: lossless key edits in storage.conf / containers.conf / registries.conf (TOML subset)."""

import tomllib

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _containers_conf

from ansible_collections.hpc.gpu_containers.plugins.module_utils._containers_conf import (
    ContainersConfError,
    defaults_to_set,
    get_value,
    render_value,
    set_array_entries,
    set_keys,
    set_registries,
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


def test_unreadable_value_named_by_line(monkeypatch):
    """Without tomllib or tomli (Python 3.9 / 3.10 nodes) a value outside the subset reader is refused."""
    text = '[engine]\nx = 1979-05-27\n'
    assert tomllib.loads(set_keys(text, {"engine": {"x": 1}})[0]) == {"engine": {"x": 1}}
    monkeypatch.setattr(_containers_conf, "_toml", None)
    with pytest.raises(ContainersConfError) as err:
        set_keys(text, {"engine": {"x": 1}})
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


# --- TOML escaping (values and keys the next run must read back) ---

@pytest.mark.parametrize("bad", ["del\x7f", "ls\u2028x", "ps\u2029x", "nel\x85x", "esc\x1b[0m", "surrogate\ud800"])
def test_characters_that_break_a_line_or_a_reader_are_refused(bad):
    with pytest.raises(ContainersConfError) as err:
        set_keys("[engine]\n", {"engine": {"x": bad}})
    assert "\\u" in str(err.value) or "\\x" in str(err.value)


def test_a_raw_line_separator_in_a_site_value_is_not_a_line_break():
    text = '[engine]\nx = "a\u2028[injected]"\ny = 1\n'
    out, changed = set_keys(text, {"engine": {"y": 2}})
    assert tomllib.loads(out) == {"engine": {"x": "a\u2028[injected]", "y": 2}}
    assert changed == ["engine.y"]


@pytest.mark.parametrize("key", ['a"b', "a'b", "a.b", "a b", "é", 'x\\"'])
def test_quoted_keys_are_read_back_on_the_next_run(key):
    out, changed = set_keys("[engine]\n", {"engine": {key: "v"}})
    assert tomllib.loads(out) == {"engine": {key: "v"}}
    assert set_keys(out, {"engine": {key: "v"}}) == (out, [])
    again, changed = set_keys(out, {"engine": {key: "w"}})
    assert tomllib.loads(again) == {"engine": {key: "w"}} and changed == ["engine." + key]


@pytest.mark.parametrize("key", ["a\nb", "a\x7fb", "a\u2028b", ""])
def test_keys_with_line_breaks_or_controls_refused(key):
    with pytest.raises(ContainersConfError):
        set_keys("[engine]\n", {"engine": {key: "v"}})


@pytest.mark.parametrize("raw, value", [
    (r'"\U0001F600"', "\U0001F600"), (r'"tab\there"', "tab\there"), ("'C:\\dir'", "C:\\dir"),
    ('"""\\\n   joined"""', "joined"), ("'''a'b'''", "a'b"), ("0x1F", 31), ("1_000", 1000),
    ("[ 1, [2, 3] ]", [1, [2, 3]]),
])
def test_site_values_compare_as_toml_reads_them(raw, value):
    text = "[engine]\nx = %s\n" % raw
    assert set_keys(text, {"engine": {"x": value}}) == (text, [])


def test_json_only_escape_is_not_toml():
    with pytest.raises(ContainersConfError) as err:
        set_keys('[engine]\nx = "a\\/b"\n', {"engine": {"x": "a/b"}})
    assert err.value.line == 2


def test_a_header_inside_a_multiline_string_is_no_table():
    text = '[engine]\nx = """\n[storage]\ndriver = "vfs"\n"""\n'
    out = set_keys(text, {"storage": {"driver": "overlay"}})[0]
    assert tomllib.loads(out) == {"engine": {"x": '[storage]\ndriver = "vfs"\n'}, "storage": {"driver": "overlay"}}


# --- files TOML cannot read are refused, with line and column, before any edit ---

@pytest.mark.parametrize("text, line", [
    ('[storage]\ndriver = "overlay"\nadditionalimagestores = [\n  "/a",\n', 4),            # cut short in an array
    ('[storage]\ndriver = "overlay"\n[storage]\ndriver = "overlay"\n', 3),               # pasted twice
    ('[storage]\ndriver = "overlay"\ndriver = "vfs"\n', 3),                               # a key twice
    ('[storage\ndriver = "overlay"\n', 1),
    ('[engine]\nx = "unterminated\n', 2),
    ('[engine]\ngarbage line\n', 2),
])
def test_malformed_files_refused_with_line_and_column(text, line):
    with pytest.raises(ContainersConfError) as err:
        set_keys(text, {"engine": {"events_logger": "file"}})
    assert err.value.line == line and err.value.column >= 1


def test_malformed_file_refused_also_for_registries():
    with pytest.raises(ContainersConfError):
        set_array_entries('[[registry]]\nlocation = "a"\n[[registry]\n', "registry", "location", [{"location": "b"}])


# --- registries.conf: v1 stays v1, v2 stays v2, a conversion only when asked ---

V1 = """# v1, as distributions shipped it
[registries.search]
registries = ['docker.io', 'quay.io']

# Registries that do not use TLS
[registries.insecure]
registries = []

[registries.block]
registries = ["evil.example:5000"]
"""


def _v1_lists(text):
    doc = tomllib.loads(text)
    assert "registry" not in doc and "unqualified-search-registries" not in doc, "v1 file got v2 content"
    return {k: v["registries"] for k, v in doc["registries"].items()}


def test_v1_file_is_edited_in_v1_terms():
    out, changed, syntax = set_registries(V1, [{"location": "head:5000", "insecure": True}])
    assert syntax == "v1"
    assert _v1_lists(out) == {"search": ["docker.io", "quay.io"], "insecure": ["head:5000"],
                              "block": ["evil.example:5000"]}
    assert changed == ["registries.insecure.registries"]
    assert [line for line in V1.splitlines() if line not in out.splitlines()] == ["registries = []"]
    assert set_registries(out, [{"location": "head:5000", "insecure": True}]) == (out, [], "v1")


def test_v1_unblock_and_secure_remove_only_that_location():
    out, changed, syntax = set_registries(V1, [{"location": "evil.example:5000", "blocked": False, "insecure": False}])
    assert _v1_lists(out)["block"] == [] and _v1_lists(out)["search"] == ["docker.io", "quay.io"]
    assert changed == ["registries.block.registries"] and syntax == "v1"


def test_v1_missing_table_is_added_in_v1():
    text = "[registries.search]\nregistries = ['docker.io']\n"
    out, changed, syntax = set_registries(text, [{"location": "head:5000", "insecure": True}])
    assert _v1_lists(out) == {"search": ["docker.io"], "insecure": ["head:5000"]} and syntax == "v1"


def test_v1_converted_whole_only_when_asked():
    out, changed, syntax = set_registries(V1, [{"location": "head:5000", "insecure": True}], syntax="v2")
    doc = tomllib.loads(out)
    assert syntax == "v2" and "registries" not in doc
    assert doc["unqualified-search-registries"] == ["docker.io", "quay.io"]
    assert doc["registry"] == [{"location": "evil.example:5000", "blocked": True},
                               {"location": "head:5000", "insecure": True}]
    assert "# Registries that do not use TLS" in out and "# v1, as distributions shipped it" in out
    assert set_registries(out, [{"location": "head:5000", "insecure": True}], syntax="v2") == (out, [], "v2")


def test_v2_file_stays_v2_and_new_file_is_v2():
    text = 'unqualified-search-registries = ["docker.io"]\n'
    out, changed, syntax = set_registries(text, [{"location": "head:5000", "insecure": True}])
    assert syntax == "v2" and tomllib.loads(out)["registry"] == [{"location": "head:5000", "insecure": True}]
    assert set_registries("", [{"location": "head:5000", "insecure": True}])[2] == "v2"


def test_mixed_file_refused():
    text = V1 + '\n[[registry]]\nlocation = "x:5000"\n'
    with pytest.raises(ContainersConfError) as err:
        set_registries(text, [{"location": "head:5000", "insecure": True}])
    assert "v1" in str(err.value) and "v2" in str(err.value)


def test_v1_drop_in_refused_unless_converted():
    with pytest.raises(ContainersConfError) as err:
        set_registries(V1, [{"location": "head:5000", "insecure": True}], drop_in=True)
    assert "registries.conf.d" in str(err.value) and "registries_syntax" in str(err.value)
    assert set_registries(V1, [{"location": "head:5000", "insecure": True}], syntax="v2", drop_in=True)[2] == "v2"


@pytest.mark.parametrize("location", ["http://head:5000", "", "a b", "head:5000\n[x]"])
def test_bad_locations_refused(location):
    with pytest.raises(ContainersConfError):
        set_registries(V1, [{"location": location, "insecure": True}])


# --- defaults: a site's own value is kept unless it is one never kept ---

@pytest.mark.parametrize("site, expected, kept", [
    ("btrfs", "btrfs", ["storage.driver"]), ("zfs", "zfs", ["storage.driver"]), ("overlay", "overlay", []),
    ("vfs", "overlay", []), ("", "overlay", []), (None, "overlay", []),
])
def test_defaults_keep_a_site_driver_but_never_vfs(site, expected, kept):
    text = "[storage]\n" + ('driver = "%s"\n' % site if site is not None else "") + 'runroot = "/run/x"\n'
    settings, kept_keys = defaults_to_set(text, {"storage": {"driver": "overlay"}}, {"storage": {"driver": ["vfs", ""]}})
    out = set_keys(text, settings)[0]
    assert tomllib.loads(out)["storage"]["driver"] == expected and kept_keys == kept


@pytest.mark.parametrize("monkey", [False, True])
@pytest.mark.parametrize("text, line", [
    ('[storage]\ndriver = "overlay"\n[storage]\ndriver = "overlay"\n', 3),
    ('[storage]\ndriver = "overlay"\ndriver = "vfs"\n', 3),
    ('[engine]\ngarbage line\n', 2),
    ('[engine]\nx = [1,\n', 2),
])
def test_malformed_refused_also_without_tomllib(monkeypatch, monkey, text, line):
    if monkey:
        monkeypatch.setattr(_containers_conf, "_toml", None)
    with pytest.raises(ContainersConfError) as err:
        set_keys(text, {"engine": {"events_logger": "file"}})
    assert err.value.line == line and err.value.column >= 1


def test_subset_reader_without_tomllib_edits_and_round_trips(monkeypatch):
    monkeypatch.setattr(_containers_conf, "_toml", None)
    out, changed = set_keys(STORAGE, WANT)
    assert tomllib.loads(out)["storage"]["driver"] == "overlay" and set_keys(out, WANT) == (out, [])
    out, changed, syntax = set_registries(V1, [{"location": "head:5000", "insecure": True}])
    assert syntax == "v1" and _v1_lists(out)["insecure"] == ["head:5000"]


@pytest.mark.parametrize("make", [lambda: 2 ** 63, lambda: -2 ** 63 - 1, lambda: 10 ** 5000], ids=["2^63", "-2^63-1", "5001 digits"])
def test_integers_outside_toml_range_refused(make):
    """TOML integers are 64-bit: podman's reader refuses more, and a 5,001-digit one is no traceback."""
    with pytest.raises(ContainersConfError):
        set_keys("[engine]\n", {"engine": {"x": make()}})


@pytest.mark.parametrize("raw, expected", [
    ('[\n  "/a", # first\n  "/b",\n]', '[\n  "/a", # first\n  "/b", "/c",\n]'),
    ('[\n  "/a", # first\n  "/b" # last\n]', '[\n  "/a", # first\n  "/b", "/c" # last\n]'),
    ("[]", '["/c"]'),
    ("[ # none yet\n]", '["/c" # none yet\n]'),
    ("['/a']  # trailing", "['/a', \"/c\"]  # trailing"),
])
def test_a_list_that_grows_keeps_its_lines_and_comments(raw, expected):
    text = "[storage.options]\nadditionalimagestores = %s\nsize = \"\"\n" % raw
    current = tomllib.loads(text)["storage"]["options"]["additionalimagestores"]
    out, changed = set_keys(text, {"storage.options": {"additionalimagestores": current + ["/c"]}})
    assert out == "[storage.options]\nadditionalimagestores = %s\nsize = \"\"\n" % expected
    assert changed == ["storage.options.additionalimagestores"]


@pytest.mark.parametrize("text, end", [
    ('"abc" rest', 4),
    ('"a\\"b" rest', 5),
    ('"a\\\\" rest', 4),
    ('"open\nnext"', 5),
    ('"open', 5),
])
def test_a_basic_strings_end_is_its_closing_quote_or_the_line_break(text, end):
    """The one scan of a basic string that both the open-value and the array-end readers use."""
    assert _containers_conf._basic_end(text, 0) == end
