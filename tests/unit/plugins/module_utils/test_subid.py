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


def _big_file(users):
    return "".join("u%d:%d:65536\n" % (i, 131072 + i * 65536) for i in range(users))


def test_a_large_file_is_read_in_linear_time():
    """20,000 users who all have their range: quadratic code took about a minute here, linear well under a second."""
    import time

    text = _big_file(20000)
    started = time.process_time()
    out, assigned, warnings = ensure_ranges(text, ["u%d" % i for i in range(20000)])
    assert time.process_time() - started < 2.0
    assert out == text and len(assigned) == 20000 and warnings == []


def test_new_users_in_a_large_file_in_linear_time():
    """100 new users after 2,000 ranges: each new range must not rescan every range taken so far."""
    import time

    text = _big_file(2000)
    started = time.process_time()
    out, assigned = ensure_ranges(text, ["n%d" % i for i in range(100)])[:2]
    assert time.process_time() - started < 1.0
    assert [assigned["n%d" % i] for i in range(3)] == [(131072 + (2000 + i) * 65536, 65536) for i in range(3)]
    assert out.count("\n") == 2100


def _lowest_free(ranges, start, count):
    """Brute force: the lowest multiple of count at or above start that overlaps none of ranges."""
    candidate = -(-start // count) * count
    while any(candidate < s + c and s < candidate + count for s, c in ranges if c):
        candidate += count
    return candidate


@pytest.mark.parametrize("seed", range(30))
def test_new_ranges_are_the_lowest_free_ones(seed):
    import random

    rng = random.Random(seed)
    count = rng.choice([1, 7, 1000, 65536])
    start = rng.randrange(1, 300000)
    lines, taken = [], []
    for i in range(rng.randrange(0, 25)):
        s, c = rng.randrange(0, 600000), rng.randrange(0, 90000)
        lines.append("x%d:%d:%d\n" % (i, s, c))
        taken.append((s, c))
    text = "".join(lines)
    users = ["n%d" % i for i in range(rng.randrange(1, 6))]
    assigned = ensure_ranges(text, users, count=count, start=start)[1]
    for user in users:
        expected = _lowest_free(taken, start, count)
        assert assigned[user] == (expected, count)
        taken.append((expected, count))


def test_overlaps_of_different_users_are_all_found_in_a_sorted_sweep():
    text = "a:100:50\nb:500:10\na:120:10\nc:140:5\nd:505:1\n"
    warnings = ensure_ranges(text, [])[2]
    assert warnings == ["ranges of a (line 1) and c (line 4) overlap", "ranges of b (line 2) and d (line 5) overlap"]
