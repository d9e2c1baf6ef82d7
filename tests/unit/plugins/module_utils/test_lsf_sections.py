# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The section model (and the Begin/End name rule both editors share)."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    CLUSTER_SHAPES,
    SHARED_SHAPES,
    parse_document,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_shared_edit import (
    check_resource_name,
)

SAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "lsf_samples"
SECTION_FILES = sorted(p for p in SAMPLES.iterdir() if ".shared" in p.name or ".cluster" in p.name)
LSB_FILES = sorted(p for p in SAMPLES.iterdir() if "lsb." in p.name)


def read(p):
    return p.read_bytes().decode()


def test_sample_set_is_complete():
    assert len(SECTION_FILES) == 7 and len(LSB_FILES) == 3


@pytest.mark.parametrize("path", SECTION_FILES + LSB_FILES, ids=lambda p: p.name)
def test_samples_round_trip_byte_identical(path):
    text = read(path)
    lsb = "lsb." in path.name
    doc = parse_document(text, templates=path.name.endswith(".erb"),
                         quote_aware=not lsb, join="drop" if lsb else "space")
    assert doc.render() == text
    assert doc.sections


def test_sample_structure_is_read():
    doc = parse_document(read(SAMPLES / "Azure__cyclecloud-lsf__lsf.shared.erb"), shapes=SHARED_SHAPES)
    res = doc.section("resource")
    assert res.columns == ["RESOURCENAME", "TYPE", "INTERVAL", "INCREASING", "DESCRIPTION"]
    assert len(res.rows) == 42  # commented-out rows are not rows
    assert res.rows[0].value("RESOURCENAME") == "sparc"
    assert res.rows[0].value("description") == "SPARC"
    model = doc.section("HOSTMODEL")
    arm = [r for r in model.rows if r.value("MODELNAME") == "ARM8l"][0]
    assert arm.value("ARCHITECTURE") == "AArch64Processorrev0aarch64 CaviumThunderX"
    cluster = parse_document(read(SAMPLES / "tmetsch__docker_compose_openlava__lsf.cluster.openlava"), shapes=CLUSTER_SHAPES)
    host = cluster.section("host")
    assert [r.raw("hostname") for r in host.rows] == ["master", "node1", "node2", "node3"]
    assert host.rows[0].get("RESOURCES").is_empty
    admins = cluster.section("clusteradmins")
    assert admins.get("administrators").value == "openlava"


def test_end_name_mismatch_is_a_warning():
    doc = parse_document("Begin Host\nHOSTNAME model type RESOURCES\nEnd Hosts\n")
    assert doc.warnings == ["line 3: End Hosts closes section Host (line 1)"]


def test_horizontal_duplicate_key_last_wins_with_warning():
    doc = parse_document(read(SAMPLES / "regiscely__LSF_Docker_boinc__lsb.applications"), quote_aware=False, join="drop")
    app = doc.sections[0]
    assert app.shape == "horizontal"
    assert app.get("DESCRIPTION").value == "Docker User Service"
    assert len(app.entries_for("description")) == 2
    assert "DESCRIPTION is also set on line 3" in doc.warnings[0]


def test_continuation_entry_span_and_set_entry_keeps_style():
    text = read(SAMPLES / "IBMSpectrumComputing__lsf-integrations__lsb.applications.openfoam-excerpt")
    doc = parse_document(text, quote_aware=False, join="drop")
    app = doc.sections[0]
    container = app.get("CONTAINER")
    assert (container.line.start, container.line.end) == (3, 9)
    assert container.value.startswith("docker[image(openfoam/openfoam6-paraview54)")
    assert doc.set_entry(app, "NAME", "openfoam") is False
    assert doc.set_entry(app, "NAME", "foam2") is True
    assert doc.set_entry(app, "RUNLIMIT", "60") is True
    out = doc.render()
    assert "        NAME         = foam2\n" in out
    assert "        RUNLIMIT    = 60\n        End Application\n" in out
    assert out.replace("foam2", "openfoam").replace("        RUNLIMIT    = 60\n", "") == text


def test_replacing_a_multi_line_entry():
    text = "Begin Application\nNAME = a\nCONTAINER = docker[x \\\n   y]\nEnd Application\n"
    doc = parse_document(text, quote_aware=False, join="drop")
    entry = doc.sections[0].get("container")
    doc.replace_lines(entry.line.start, entry.line.end, ["CONTAINER = docker[z]\n"])
    assert doc.render() == "Begin Application\nNAME = a\nCONTAINER = docker[z]\nEnd Application\n"


def test_insertions_keep_order_and_missing_final_newline():
    doc = parse_document("Begin Host\nHOSTNAME RESOURCES\nEnd Host")
    doc.insert_lines(3, ["# a\n"])
    doc.insert_lines(3, ["# b\n"])
    assert doc.render() == "Begin Host\nHOSTNAME RESOURCES\nEnd Host\n# a\n# b\n"


# -- hypothesis: generated LSF-like files ---------------------------------

word = st.text(alphabet="abcXYZ019_!.", min_size=1, max_size=6)
blank = st.text(alphabet=" \t", min_size=1, max_size=3)
opt_blank = st.text(alphabet=" \t", max_size=3)
eol = st.sampled_from(["\n", "\r\n"])
comment = st.builds(lambda b, w: b + "# " + w, opt_blank, word)
value = st.one_of(word, st.just("()"), st.just("-"), st.builds(lambda a, b: "(%s %s)" % (a, b), word, word))


@st.composite
def table_section(draw):
    ncols = draw(st.integers(1, 5))
    cols = ["C%d" % i for i in range(ncols)]
    name = draw(st.sampled_from(["Host", "Resource", "ResourceMap"]))
    out = [draw(st.sampled_from(["Begin ", "Begin\t", "BEGIN  "])) + name + draw(opt_blank) + draw(eol)]
    out.append(draw(opt_blank) + draw(blank).join(cols) + draw(st.one_of(st.just(""), comment)) + draw(eol))
    for _row in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            out.append(draw(st.sampled_from(["", " ", "\t"])) + draw(eol))
        elif kind == 1:
            out.append(draw(opt_blank) + "#" + draw(word) + draw(eol))
        else:
            vals = [draw(value) for _col in cols]
            if len(vals) > 1 and kind == 2:
                # split the row with a continuation
                row = draw(opt_blank) + vals[0] + " \\" + draw(eol) + draw(blank) + draw(blank).join(vals[1:])
            else:
                row = draw(opt_blank) + draw(blank).join(vals)
            out.append(row + draw(st.one_of(st.just(""), comment, opt_blank)) + draw(eol))
    out.append(draw(st.sampled_from(["End ", "end\t", "End    "])) + name + draw(opt_blank) + draw(eol))
    return "".join(out)


@st.composite
def horizontal_section(draw):
    out = ["Begin Parameters" + draw(eol)]
    for i in range(draw(st.integers(0, 4))):
        sep = draw(st.sampled_from(["=", " = ", "\t=  "]))
        line = "K%d%s%s" % (i, sep, draw(word))
        if draw(st.booleans()):
            line += " \\" + draw(eol) + draw(blank) + draw(word)
        out.append(line + draw(st.one_of(st.just(""), comment)) + draw(eol))
    out.append("End Parameters" + draw(eol))
    return "".join(out)


lsf_file = st.lists(
    st.one_of(table_section(), horizontal_section(), comment.map(lambda c: c + "\n"),
              st.just("\n"), st.just('#INCLUDE "/x/y"\n'), st.just("#if time(1:00-2:00)\n")),
    max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(lsf_file)
def test_render_parse_is_identity(text):
    doc = parse_document(text, shapes={"parameters": "horizontal"}, default_shape="table")
    assert doc.render() == text


@settings(max_examples=200, deadline=None)
@given(lsf_file, st.text(alphabet="abc", min_size=1, max_size=4))
def test_edit_then_reparse_finds_the_edit(text, new):
    doc = parse_document(text, shapes={"parameters": "horizontal"}, default_shape="table")
    tables = [s for s in doc.sections if s.shape == "table" and s.rows]
    params = [s for s in doc.sections if s.shape == "horizontal"]
    if tables:
        section = tables[0]
        row = section.rows[-1]
        raws = row.raws()
        raws[-1] = "(%s x)" % new
        doc.set_row(section, row, raws)
        doc.add_row(section, ["N%s" % i for i in range(len(section.columns))])
    if params:
        doc.set_entry(params[0], "KNEW", new)
    out = doc.render()
    again = parse_document(out, shapes={"parameters": "horizontal"}, default_shape="table")
    if tables:
        idx = doc.sections.index(tables[0])
        sec2 = again.sections[idx]
        assert sec2.rows[-2].tokens[-1].value == "%s x" % new
        assert sec2.rows[-1].raws() == ["N%s" % i for i in range(len(section.columns))]
        assert len(sec2.rows) == len(tables[0].rows) + 1
    if params:
        assert again.sections[doc.sections.index(params[0])].get("KNEW").value == new
    # untouched lines survive byte-identical
    touched = set()
    if tables:
        touched.update(range(tables[0].rows[-1].line.start, tables[0].rows[-1].line.end))
    kept = [ln for i, ln in enumerate(doc.lines) if i not in touched]
    out_lines = out.splitlines(True)
    pos = 0
    for ln in kept:
        pos = out_lines.index(ln, pos) + 1


@pytest.mark.parametrize("cell", ["a b", "(a", "a)", "#x", "", " a", "x\\"])
def test_rows_that_would_not_read_back_are_refused(cell):
    doc = parse_document("Begin Host\nHOSTNAME RESOURCES\nn1 ()\nEnd Host\n")
    section = doc.section("host")
    with pytest.raises(ValueError, match="does not read back"):
        doc.add_row(section, ["n2", cell])
    with pytest.raises(ValueError, match="does not read back"):
        doc.set_row(section, section.rows[0], ["n1", cell])
    with pytest.raises(ValueError, match="starts with"):
        doc.add_row(section, ["End", "()"])
    assert not doc.edited


def test_split_tokens_matches_tokenize():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import split_tokens, tokenize
    for code in ["a () (b) -", "h\t!\t!\t1\t(mg cs)", "x (a (b c) d) y", "r ([default]) (v@[a b] w@[c])", "a(b c)d e"]:
        assert split_tokens(code) == [t.raw for t in tokenize(code)]


def _reference_rewrite(body, tokens, raw_tokens):
    """Plain version of Section.rewrite_row for rows without tabs: every gap
    after a cell re-aims at the next cell's original column."""
    out = body[:tokens[0].start]
    for i, raw in enumerate(raw_tokens):
        out += raw
        if i + 1 < len(tokens):
            gap = body[tokens[i].end:tokens[i + 1].start]
            if gap.strip(" ") == "":
                pad = tokens[i + 1].start - len(out)
                out += " " * pad if pad > 0 else " "
            else:
                out += gap
    return out + body[tokens[-1].end:]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(value, st.sampled_from([" ", "  ", "     ", "\t", " \t"])), min_size=1, max_size=6),
       st.data())
def test_rewrite_row_matches_reference(cells, data):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import tokenize
    body = "  " + "".join(v + gap for v, gap in cells) + "# c"
    header = " ".join("C%d" % i for i in range(len(cells)))
    doc = parse_document("Begin T\n%s\n%s\nEnd T\n" % (header, body))
    section = doc.sections[0]
    row = section.rows[0]
    new = [data.draw(st.one_of(st.just(c), value)) for c in row.cells]
    got = section.rewrite_row(row, new, doc.lines)
    if "\t" not in body:
        # (after a tab gap the rest of the row is kept as written instead)
        assert got == _reference_rewrite(body, tokenize(row.line.code), new)
    if new == row.cells:
        assert got == body
    assert got.endswith("# c") and got.startswith("  ")
    doc.set_row(section, row, new)
    again = parse_document(doc.render())
    assert again.sections[0].rows[0].cells == new


@pytest.mark.parametrize("name", ["End", "end", "BEGIN"])
def test_begin_end_are_refused_as_resource_and_host_names(name):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_cluster_edit import check_host_name
    with pytest.raises(ValueError, match="would be read as"):
        check_resource_name(name)
    with pytest.raises(ValueError, match="would be read as"):
        check_host_name(name)
