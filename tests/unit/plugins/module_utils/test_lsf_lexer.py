# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF lexer: physical/logical lines, comments, directives, continuation, tokens."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import (
    LsfSyntaxError,
    detect_eol,
    logical_lines,
    physical_lines,
    split_comment,
    split_eol,
    tokenize,
)


@given(st.text(alphabet=st.sampled_from("ab #\\\t\r\n()\"="), max_size=200))
def test_physical_lines_are_lossless(text):
    lines = physical_lines(text)
    assert "".join(lines) == text
    assert all(line.endswith("\n") for line in lines[:-1])


def test_split_eol_and_detect_eol():
    assert split_eol("a\r\n") == ("a", "\r\n")
    assert split_eol("a\n") == ("a", "\n")
    assert split_eol("a") == ("a", "")
    assert detect_eol(["x\r\n", "y\n"]) == "\r\n"
    assert detect_eol(["x"]) == "\n"


def test_comment_anywhere_and_quotes():
    assert split_comment("A=1 # note") == ("A=1 ", "# note")
    assert split_comment('A="x # y" # z') == ('A="x # y" ', "# z")
    assert split_comment('A="x # y"', quote_aware=False) == ('A="x ', '# y"')
    assert split_comment("no comment") == ("no comment", None)


def test_line_kinds_and_directives():
    text = '#INCLUDE "/shared/lsf.shared.site"\n# plain comment\n\n   \t\n#if time(8:00-18:00)\nKEY = v\n#endif\n<% x %>\n'
    kinds = [ln.kind for ln in logical_lines(physical_lines(text), templates=True)]
    assert kinds == ["directive", "comment", "blank", "blank", "directive", "code", "directive", "opaque"]
    kinds = [ln.kind for ln in logical_lines(physical_lines("<% x %>\n"))]
    assert kinds == ["code"]


def test_continuation_space_and_drop():
    lines = physical_lines("A = a \\\n  b\\\nc\nD = d\n")
    lim = logical_lines(lines, join="space")
    assert [(ln.start, ln.end) for ln in lim] == [(0, 3), (3, 4)]
    assert lim[0].code == "A = a    b c"
    lsb = logical_lines(lines, join="drop")
    assert lsb[0].code == "A = a   bc"
    assert lsb[0].continued and not lsb[1].continued


def test_continuation_tolerates_trailing_blank_and_comment_ends_it():
    lines = physical_lines("A = a \\ \nb # stop \\\nc\n")
    out = logical_lines(lines)
    assert out[0].code == "A = a  b " and out[0].comment == "# stop \\"
    assert (out[0].start, out[0].end) == (0, 2)
    assert out[1].code == "c"


def test_comment_on_first_line_blocks_continuation():
    out = logical_lines(physical_lines("A = a # x \\\nb\n"))
    assert [(ln.start, ln.end) for ln in out] == [(0, 1), (1, 2)]


def test_no_continuation_mode_for_lsf_conf():
    out = logical_lines(physical_lines("A=a\\\nB=b\n"), continuation=False)
    assert [ln.code for ln in out] == ["A=a\\", "B=b"]


def test_backslash_inside_is_literal():
    out = logical_lines(physical_lines("P = \\\\server\\share x\n"))
    assert len(out) == 1 and out[0].code == "P = \\\\server\\share x"


def test_tokens_parentheses_group_and_empty():
    toks = tokenize("  docker  Boolean () -  (Docker container) ([default]) a(b c)d")
    assert [t.raw for t in toks] == ["docker", "Boolean", "()", "-", "(Docker container)", "([default])", "a(b c)d"]
    assert [t.value for t in toks] == ["docker", "Boolean", "", "", "Docker container", "[default]", "a(b c)d"]
    assert toks[0].start == 2 and toks[0].end == 8
    assert [t.is_empty for t in toks[:4]] == [False, False, True, True]


def test_nested_parentheses_are_one_token():
    toks = tokenize("x (a (b c) d) y")
    assert [t.raw for t in toks] == ["x", "(a (b c) d)", "y"]
    assert toks[1].value == "a (b c) d"


def test_tabs_separate_tokens():
    assert [t.raw for t in tokenize("a\t\tb \t(c\td)")] == ["a", "b", "(c\td)"]


@pytest.mark.parametrize("code", ["a (b c", "a b)", "((a)", "a ) b"])
def test_unbalanced_parentheses_raise_with_line(code):
    with pytest.raises(LsfSyntaxError) as err:
        tokenize(code, 7)
    assert err.value.line == 7 and "unbalanced parenthesis" in err.value.msg


@given(st.text(alphabet=st.sampled_from("ab ()\t-[]"), max_size=40))
def test_split_tokens_agrees_with_tokenize(code):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import split_tokens
    try:
        toks = tokenize(code)
    except LsfSyntaxError:
        with pytest.raises(LsfSyntaxError):
            split_tokens(code)
        return
    assert split_tokens(code) == [t.raw for t in toks]
    assert all(code[t.start:t.end] == t.raw for t in toks)
    assert code.count("(") == code.count(")")
    assert "".join(t.raw for t in toks).replace(" ", "").replace("\t", "") == code.replace(" ", "").replace("\t", "")
