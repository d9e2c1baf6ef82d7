# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_subid: subordinate id ranges that never overlap and never move."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._subid import SubidError, ensure_ranges, parse


def test_new_users_get_consecutive_aligned_ranges():
    out, assigned, warnings = ensure_ranges("", ["alice", "bob"])
    assert out == "alice:131072:65536\nbob:196608:65536\n"
    assert assigned == {"alice": (131072, 65536), "bob": (196608, 65536)}
    assert warnings == []


def test_existing_range_is_kept_and_others_untouched():
    text = "# site\nroot:100000:65536\nalice:300000:70000\n"
    out, assigned = ensure_ranges(text, ["alice"])[:2]
    assert out == text and assigned == {"alice": (300000, 70000)}


def test_too_small_range_gets_a_new_one_beside_it():
    text = "bob:131072:1000\n"
    out, assigned = ensure_ranges(text, ["bob"])[:2]
    assert out == text + "bob:196608:65536\n"
    assert assigned["bob"] == (196608, 65536)


def test_new_range_skips_every_taken_range():
    text = "a:131072:65536\nb:200000:10\nc:262144:65536\n"
    assigned = ensure_ranges(text, ["d"])[1]
    start, count = assigned["d"]
    assert all(start + count <= s or s + c <= start for _line, _name, s, c in parse(text))


def test_overlapping_ranges_of_different_users_warn():
    warnings = ensure_ranges("a:100000:65536\nb:150000:65536\n", [])[2]
    assert warnings == ["ranges of a (line 1) and b (line 2) overlap"]


def test_second_run_is_no_change_and_missing_newline_kept_valid():
    out = ensure_ranges("root:100000:65536", ["alice"])[0]
    assert out.splitlines() == ["root:100000:65536", "alice:196608:65536"]
    assert ensure_ranges(out, ["alice"])[0] == out


@pytest.mark.parametrize("bad", ["alice:1", "alice:x:1", ":1:1", "a:1:2:3"])
def test_malformed_line_named(bad):
    with pytest.raises(SubidError) as err:
        ensure_ranges("ok:1:1\n" + bad + "\n", ["z"])
    assert err.value.line == 2


@pytest.mark.parametrize("user", ["", "a:b", "a\nb", "-rf", "x y"])
def test_bad_user_names_refused(user):
    with pytest.raises(SubidError):
        ensure_ranges("", [user])


def test_id_space_exhausted():
    with pytest.raises(SubidError):
        ensure_ranges("a:100000:4294800000\n", ["b"], count=65536)
