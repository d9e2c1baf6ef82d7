# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf.conf model: parse, set, remove, quoting, duplicates, lossless output."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_conf import (
    LsfSyntaxError,
    check_value,
    get_keys,
    parse_conf,
    render_value,
    set_keys,
)

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "lsf_samples"
CONF_FILES = sorted(p for p in SAMPLES.iterdir() if "lsf.conf" in p.name)
SEED = {"LSB_RESOURCE_ENFORCE": "cpu memory", "LSF_LINUX_CGROUP_ACCT": "Y", "LSF_PROCESS_TRACKING": "Y"}


@pytest.mark.parametrize("path", CONF_FILES, ids=lambda p: p.name)
def test_samples_parse_and_noop_is_identity(path):
    text = path.read_bytes().decode()
    _lines, entries = parse_conf(text)
    assert entries
    new, changed, warnings = set_keys(text, {})
    assert new == text and changed == [] and warnings == []


def test_sample_values():
    keys = get_keys((SAMPLES / "Nero09__LSF-on-aws-cloud__lsf.conf").read_text())
    assert keys["LSF_LOCAL_RESOURCES"] == "[resource aws] [type LINUX64]"
    assert keys["LSB_MAILTO"] == "!U"
    assert "LSF_LIC_SCHED_HOST" not in keys  # commented out


def test_seed_settings_on_nero_sample_exact():
    text = (SAMPLES / "Nero09__LSF-on-aws-cloud__lsf.conf").read_text()
    new, changed, warnings = set_keys(text, SEED)
    # the two Y keys are already there; only the enforce key is appended
    assert changed == ["LSB_RESOURCE_ENFORCE"] and warnings == []
    assert new == text + 'LSB_RESOURCE_ENFORCE="cpu memory"\n'
    assert get_keys(new)["LSB_RESOURCE_ENFORCE"] == "cpu memory"
    assert set_keys(new, SEED)[1] == []


def test_seed_settings_on_volclava_template():
    text = (SAMPLES / "bytedance__volclava__lsf.conf.in").read_text()
    new, changed, _w = set_keys(text, SEED)
    assert changed == list(SEED)
    assert new.endswith('LSB_PACK_SKIP_ERROR=N\nLSB_RESOURCE_ENFORCE="cpu memory"\nLSF_LINUX_CGROUP_ACCT=Y\nLSF_PROCESS_TRACKING=Y\n')
    assert new.startswith(text)


def test_update_in_place_keeps_indent_quotes_and_comment():
    text = '# top\n  LSF_LOG_MASK=LOG_WARNING   # level\nLSF_MASTER_LIST="a"\r\nLAST=1'
    new, changed, _w = set_keys(text, {"LSF_LOG_MASK": "LOG_DEBUG", "LSF_MASTER_LIST": "a b", "LAST": "2"})
    assert changed == ["LSF_LOG_MASK", "LSF_MASTER_LIST", "LAST"]
    assert new == '# top\n  LSF_LOG_MASK=LOG_DEBUG   # level\nLSF_MASTER_LIST="a b"\r\nLAST=2'


def test_quoted_value_stays_quoted_even_when_simple():
    new = set_keys('LSF_MASTER_LIST="a b"\n', {"LSF_MASTER_LIST": "c"})[0]
    assert new == 'LSF_MASTER_LIST="c"\n'


def test_append_when_no_final_newline_and_crlf_file():
    assert set_keys("A=1", {"B": "2"})[0] == "A=1\nB=2\n"
    assert set_keys("A=1\r\n", {"B": "x y"})[0] == 'A=1\r\nB="x y"\r\n'
    assert set_keys("", {"B": "2"})[0] == "B=2\n"


def test_remove_all_definitions_and_duplicates_warn():
    text = "A=1\nB=2\nA=3\n"
    new, changed, warnings = set_keys(text, {"A": None})
    assert new == "B=2\n" and changed == ["A"]
    assert warnings == ["A is defined 2 times (lines 1, 3); the last one wins"]
    new, changed, _w = set_keys(text, {"A": "4"})
    assert new == "A=1\nB=2\nA=4\n"
    assert set_keys(text, {"A": "3"})[1] == []
    assert set_keys(text, {"C": None}) == (text, [], [])


def test_yes_no_compare_case_insensitively():
    assert set_keys("LSF_PROCESS_TRACKING=y\n", {"LSF_PROCESS_TRACKING": "Y"})[1] == []
    assert set_keys("LSF_PROCESS_TRACKING=y\n", {"LSF_PROCESS_TRACKING": "N"})[0] == "LSF_PROCESS_TRACKING=N\n"
    assert set_keys("X=yes\n", {"X": "YES"})[1] == ["X"]


def test_empty_value_is_legal():
    assert get_keys("LSF_X=\n") == {"LSF_X": ""}
    assert set_keys("LSF_X=1\n", {"LSF_X": ""})[0] == "LSF_X=\n"


@pytest.mark.parametrize("value,rendered", [
    ("Y", "Y"), ("/opt/lsf/conf", "/opt/lsf/conf"), ("cpu memory", '"cpu memory"'), ("a#b", '"a#b"'),
    ("it's", '"it\'s"'), ("a;b", '"a;b"'), ("*.*.*.*", "*.*.*.*"), ("!U", "!U"),
    ("[resource aws]", '"[resource aws]"'),
])
def test_render_value_quotes_what_needs_it(value, rendered):
    assert render_value(value) == rendered


@pytest.mark.parametrize("name,value,msg", [
    ("A", 'x"y', "double quote"), ("A", "x\ny", "line break"), ("1A", "x", "not a valid"), ("A B", "x", "not a valid"),
    ("A", "$HOME", "^A: value .* expands"), ("A", "`id`", "backquote"), ("A", "x\\", "backslash"),
    ("A", "a\x00b", "control character"), ("A", "a\x0bb", "control character"),
])
def test_check_value_rejects(name, value, msg):
    with pytest.raises(ValueError, match=msg):
        check_value(name, value)
    with pytest.raises(ValueError, match=msg):
        set_keys("", {name: value})


def test_syntax_error_carries_line():
    with pytest.raises(LsfSyntaxError) as err:
        set_keys("A=1\n\nB = 2\n", {"A": "2"})
    assert err.value.line == 3


safe_value = st.text(alphabet="abcXY01/._ -:", max_size=12).filter(lambda v: v == v.strip() or " " in v)
conf_line = st.one_of(
    st.builds(lambda k, v: "K%s=%s" % (k, render_value(v)), st.integers(0, 5), safe_value),
    st.builds(lambda k, v, c: "K%s=%s %s" % (k, render_value(v), c), st.integers(0, 5), safe_value,
              st.sampled_from(["# c", "\t#x y"])),
    st.sampled_from(["", "#", "# comment", "  ", "#K1=old"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(conf_line, st.sampled_from(["\n", "\r\n"]))), st.dictionaries(
    st.builds(lambda k: "K%d" % k, st.integers(0, 7)), st.one_of(st.none(), safe_value), max_size=4))
def test_set_then_reparse_finds_the_values(lines, settings_):
    text = "".join(a + b for a, b in lines)
    assert set_keys(text, {})[0] == text
    new, changed, _w = set_keys(text, settings_)
    keys = get_keys(new)
    for name, value in settings_.items():
        assert keys.get(name) == value
    assert set_keys(new, settings_)[1] == []
    before = get_keys(text)
    assert set(changed) == {k for k, v in settings_.items() if before.get(k) != v}
    # untouched keys keep their values and lines
    for name, value in before.items():
        if name not in settings_:
            assert keys[name] == value
    for line in text.splitlines(True):
        if line.lstrip().startswith("#") or not line.strip():
            assert line in new.splitlines(True) or not line.endswith("\n")


# -- shell safety: lsf.conf is sourced by Bourne shells (profile.lsf, admins) --

HOSTILE_VALUES = [
    ("command-substitution", "$(touch canary)"),
    ("command-substitution-in-words", "cpu $(touch canary) memory"),
    ("backticks", "`touch canary`"),
    ("variable-expansion", "${X:=$(touch canary)}"),
    ("plain-variable", "$HOME/lsf"),
    ("trailing-backslash", "memory\\"),
    ("backslash-before-quote", "a\\\"; touch canary; \\\""),
    ("backslash-dollar", "\\$(touch canary)"),
    ("newline", "x\ntouch canary"),
    ("carriage-return", "x\rtouch canary"),
    ("unbalanced-double-quote", "a\"; touch canary; \""),
    ("unbalanced-single-quote", "it's; touch canary"),
    ("semicolon", "; touch canary"),
    ("ampersand-pipe", "x & touch canary | cat"),
    ("redirection", "x > canary"),
    ("glob", "*"),
    ("tilde", "~/lsf"),
    ("nul", "x\x00y"),
    ("control-char", "x\x1by"),
]


@pytest.mark.parametrize("value", [v for _i, v in HOSTILE_VALUES], ids=[i for i, _v in HOSTILE_VALUES])
def test_sourcing_the_written_file_never_executes_anything(tmp_path, value):
    """Each hostile value is either refused (naming the key) or written so that
    ``sh -c '. ./lsf.conf'`` runs nothing and reads the value LSF reads."""
    import subprocess

    conf = tmp_path / "lsf.conf"
    original = "LSF_LOGDIR=/var/log/lsf\n"
    conf.write_text(original)
    try:
        new, changed, _w = set_keys(original, {"LSF_SITE_VALUE": value})
    except ValueError as err:
        assert "LSF_SITE_VALUE" in str(err)
        new = original
    else:
        assert changed == ["LSF_SITE_VALUE"]
        assert get_keys(new)["LSF_SITE_VALUE"] == value
    conf.write_bytes(new.encode())
    proc = subprocess.run(["sh", "-c", '. ./lsf.conf && printf "%s" "${LSF_SITE_VALUE-unset}"'],
                          cwd=str(tmp_path), capture_output=True, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
                          check=False)
    assert not (tmp_path / "canary").exists()
    assert proc.returncode == 0, proc.stderr
    expected = get_keys(new).get("LSF_SITE_VALUE", "unset")
    assert proc.stdout.decode() == expected


@pytest.mark.parametrize("value", ["cpu memory", "[resource aws] [type LINUX64]", "!U", "*.*.*.*",
                                   "ssh -o 'StrictHostKeyChecking no'", "a;b", "a#b", "x=y", "%", "é ü"])
def test_ordinary_values_are_still_written_and_read_alike_by_sh(tmp_path, value):
    import subprocess

    new = set_keys("", {"LSF_X": value})[0]
    (tmp_path / "lsf.conf").write_text(new)
    out = subprocess.run(["sh", "-c", '. ./lsf.conf && printf "%s" "$LSF_X"'], cwd=str(tmp_path),
                         capture_output=True, check=True).stdout.decode()
    assert out == value == get_keys(new)["LSF_X"]


def test_a_huge_malformed_line_gives_a_short_message():
    with pytest.raises(LsfSyntaxError) as err:
        parse_conf("A=1\n" + "B " * 500000 + "\n")
    assert err.value.line == 2 and len(str(err.value)) < 300


def test_a_nul_byte_in_the_file_is_a_syntax_error_with_its_line():
    with pytest.raises(LsfSyntaxError) as err:
        parse_conf("A=1\nB=x\x00y\n")
    assert err.value.line == 2 and "NUL" in err.value.msg


# -- list-valued parameters are sets: the site's words are kept ---------------

def test_resource_enforce_keeps_site_words_and_order():
    text = 'LSB_RESOURCE_ENFORCE="memory cpu gpu"\n'
    assert set_keys(text, {"LSB_RESOURCE_ENFORCE": "cpu memory"}) == (text, [], [])
    assert set_keys(text, {"LSB_RESOURCE_ENFORCE": "gpu memory cpu"}) == (text, [], [])
    new, changed, _w = set_keys('LSB_RESOURCE_ENFORCE="memory"  # site\n', {"LSB_RESOURCE_ENFORCE": "cpu memory"})
    assert new == 'LSB_RESOURCE_ENFORCE="memory cpu"  # site\n' and changed == ["LSB_RESOURCE_ENFORCE"]
    new = set_keys("LSB_RESOURCE_ENFORCE=gpu\n", {"LSB_RESOURCE_ENFORCE": "cpu memory"})[0]
    assert new == 'LSB_RESOURCE_ENFORCE="gpu cpu memory"\n'
    # duplicate words in the request are not written twice
    assert set_keys("", {"LSB_RESOURCE_ENFORCE": "cpu cpu memory"})[0] == 'LSB_RESOURCE_ENFORCE="cpu memory"\n'


def test_resource_enforce_replace_mode_is_exact_but_order_free():
    text = 'LSB_RESOURCE_ENFORCE="memory cpu gpu"\n'
    new, changed, _w = set_keys(text, {"LSB_RESOURCE_ENFORCE": "cpu memory"}, merge_lists=False)
    assert new == 'LSB_RESOURCE_ENFORCE="cpu memory"\n' and changed == ["LSB_RESOURCE_ENFORCE"]
    assert set_keys(text, {"LSB_RESOURCE_ENFORCE": "gpu cpu memory"}, merge_lists=False) == (text, [], [])


def test_list_keys_are_configurable_and_other_keys_are_plain_values():
    text = 'LSF_MASTER_LIST="hostb hosta"\n'
    # order matters for LSF_MASTER_LIST (master candidates): not a set by default
    assert set_keys(text, {"LSF_MASTER_LIST": "hosta hostb"})[0] == 'LSF_MASTER_LIST="hosta hostb"\n'
    assert set_keys(text, {"LSF_MASTER_LIST": "hosta"}, list_keys=["LSF_MASTER_LIST"]) == (text, [], [])
    # a key left out of list_keys is a plain value again
    assert set_keys('LSB_RESOURCE_ENFORCE="memory cpu gpu"\n', {"LSB_RESOURCE_ENFORCE": "cpu memory"},
                    list_keys=[])[0] == 'LSB_RESOURCE_ENFORCE="cpu memory"\n'


@pytest.mark.parametrize("name", ["IFS", "PATH", "ENV", "BASH_ENV", "LD_PRELOAD", "PS4"])
def test_names_that_change_the_sourcing_shell_are_refused(name):
    with pytest.raises(ValueError, match="%s: .*shell" % name):
        set_keys("A=1\n", {name: "x"})
    # removing one a site wrote by hand is allowed
    assert set_keys("%s=x\n" % name, {name: None})[0] == ""
