# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Section model, lsf.shared Resource editor and lsf.cluster Host editor."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import LsfSyntaxError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    CLUSTER_SHAPES,
    SHARED_SHAPES,
    HostPattern,
    check_resource_name,
    edit_hosts,
    edit_resource,
    parse_document,
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


# -- lsf.shared Resource ---------------------------------------------------

SEED_ROW = "docker        Boolean ()       ()         ()         (Docker container)"


def test_seed_docker_resource_on_every_shared_sample():
    for path in [p for p in SECTION_FILES if ".shared" in p.name]:
        text = read(path)
        new, row, warnings = edit_resource(text, "docker", type="Boolean", description="Docker container")
        assert warnings == []
        assert row["resourcename"] == "docker" and row["type"] == "Boolean" and row["description"] == "Docker container"
        doc = parse_document(new, shapes=SHARED_SHAPES)
        names = [r.value("resourcename") for r in doc.section("resource").rows]
        assert names.count("docker") == 1
        # exactly one line added, all others kept
        assert len(new.splitlines()) == len(text.splitlines()) + 1
        assert edit_resource(new, "docker", type="Boolean", description="Docker container")[0] == new


def test_seed_resource_exact_text_nero():
    text = read(SAMPLES / "Nero09__LSF-on-aws-cloud__lsf.shared")
    new = edit_resource(text, "docker", description="Docker container")[0]
    assert new == text.replace(
        "instance_type        String     ()       ()       (EC2 instance type)\n",
        "instance_type        String     ()       ()       (EC2 instance type)\n"
        "docker               Boolean    ()       ()       (Docker container)\n")


def test_resource_against_seven_column_header():
    text = ("Begin Resource\nRESOURCENAME  TYPE    INTERVAL INCREASING CONSUMABLE DESCRIPTION  # Keywords\n"
            "gpu           Numeric ()       Y          Y          (GPUs)\nEnd Resource\n")
    new, row, _w = edit_resource(text, "docker", type="Boolean", description="Docker container")
    assert new.splitlines()[3] == SEED_ROW
    assert row["consumable"] == "" and row["release"] is None


def test_resource_reordered_header_and_update_in_place():
    text = "Begin Resource\nDESCRIPTION\tRESOURCENAME\tTYPE\n(old text)\tdocker\tBoolean\t# keep\nEnd Resource\n"
    new, row, _w = edit_resource(text, "docker", description="Docker container")
    assert new.splitlines()[2] == "(Docker container)\tdocker\tBoolean\t# keep"
    assert row["description"] == "Docker container"
    new2, _row, _w = edit_resource(text, "fs", description="File server", type="String")
    assert new2.splitlines()[3].split() == ["(File", "server)", "fs", "String"]


def test_resource_absent_and_duplicates():
    text = "Begin Resource\nRESOURCENAME TYPE DESCRIPTION\ndocker Boolean (a)\nfs Boolean (b)\ndocker Boolean (c)\nEnd Resource\n"
    new, row, warnings = edit_resource(text, "docker", state="absent")
    assert new == "Begin Resource\nRESOURCENAME TYPE DESCRIPTION\nfs Boolean (b)\nEnd Resource\n"
    assert row is None and "defined 2 times" in warnings[0]
    assert edit_resource(new, "docker", state="absent")[0] == new


def test_resource_numeric_rules():
    text = "Begin Resource\nRESOURCENAME TYPE INTERVAL INCREASING RELEASE DESCRIPTION\nEnd Resource\n"
    with pytest.raises(ValueError, match="needs increasing"):
        edit_resource(text, "ngpu", type="Numeric", description="x")
    with pytest.raises(ValueError, match="only apply to Numeric"):
        edit_resource(text, "ngpu", type="Boolean", increasing=True, description="x")
    with pytest.raises(ValueError, match="description is required"):
        edit_resource(text, "ngpu", type="Boolean")
    new, row, _w = edit_resource(text, "ngpu", type="numeric", interval=30, increasing=False, release=True, description="GPUs")
    assert new.splitlines()[2].split() == ["ngpu", "Numeric", "30", "N", "Y", "(GPUs)"]
    assert row["interval"] == "30"
    # y/Y compare alike: no change
    assert edit_resource(new.replace(" N ", " n "), "ngpu", increasing=False)[0] == new.replace(" N ", " n ")


def test_resource_section_created_when_missing():
    text = "Begin Cluster\nClusterName\nc1\nEnd Cluster"
    new = edit_resource(text, "docker", description="Docker container")[0]
    assert new == ("Begin Cluster\nClusterName\nc1\nEnd Cluster\n\nBegin Resource\n"
                   "RESOURCENAME  TYPE     INTERVAL  INCREASING  DESCRIPTION\n"
                   "docker        Boolean  ()        ()          (Docker container)\nEnd Resource\n")


@pytest.mark.parametrize("name,why", [
    ("", "empty"), ("a" * 40, "longer than 39"), ("1gpu", "starts with a digit"), ("gpu.count", "forbids"),
    ("gpu-x", "forbids"), ("a b", "forbids"), ("info", "inf or nan"), ("NaNo", "inf or nan"),
    ("mem", "reserved"), ("swp", "reserved"), ("type", "reserved"), ("define_ncpus_cores", "reserved"),
])
def test_resource_name_rules(name, why):
    with pytest.raises(ValueError, match=why):
        check_resource_name(name)


def test_resource_name_ok():
    check_resource_name("docker")
    check_resource_name("a" * 39)
    check_resource_name("Mem")  # names are case-sensitive


# -- lsf.cluster Host ---------------------------------------------------------

def test_seed_docker_on_hosts_of_every_cluster_sample():
    for path in [p for p in SECTION_FILES if ".cluster" in p.name and not p.name.endswith(".erb")]:
        text = read(path)
        new, changed, created, warnings = edit_hosts(text, "all", ["docker"])
        assert warnings == [] and created == [] and changed
        doc = parse_document(new, shapes=CLUSTER_SHAPES)
        for row in doc.section("host").rows:
            assert "docker" in row.value("resources").split()
        assert len(new.splitlines()) == len(text.splitlines())
        assert edit_hosts(new, "all", ["docker"])[0] == new


def test_seed_host_exact_text():
    text = read(SAMPLES / "tmetsch__docker_compose_openlava__lsf.cluster.openlava")
    new, changed, _c, _w = edit_hosts(text, ["node1", "NODE3"], ["docker"])
    assert changed == ["node1", "node3"]
    assert new == text.replace(
        "node1               !              !     1       -       -\n",
        "node1               !              !     1       -       (docker)\n").replace(
        "node3               !              !     1       -       -\n",
        "node3               !              !     1       -       (docker)\n")
    nero = read(SAMPLES / "Nero09__LSF-on-aws-cloud__lsf.cluster.LSFCluster")
    new = edit_hosts(nero, ["ip-172-30-25-222"], ["docker"])[0]
    assert "\nip-172-30-25-222   !   !   1   (mg docker)   \nEnd     Host\n" in new


def test_seed_eight_column_header_row():
    text = "Begin Host\n    HOSTNAME  model  type  server  r1m  mem  swp  RESOURCES\n    host00    !      !     1       3.5  ()   ()   ()\nEnd Host\n"
    new, _ch, created, _w = edit_hosts(text, ["host01"], ["docker"], create_missing=True)
    assert created == ["host01"]
    assert new.splitlines()[3] == "    host01    !      !     1       ()   ()   ()   (docker)"


def test_host_create_missing_with_header_only_and_options():
    text = "Begin Host\nHOSTNAME  model    type        server  RESOURCES    #Keywords\nEnd Host\n"
    new, changed, created, _w = edit_hosts(text, ["gpu01", "gpu02"], ["docker", "!gpu"], create_missing=True,
                                           model="POWER9", host_type="LINUXPPC64LE", server=1)
    assert changed == created == ["gpu01", "gpu02"]
    # a value wider than its column pushes the next one by a single blank
    assert new.splitlines()[2:4] == ["gpu01     POWER9   LINUXPPC64LE 1      (docker !gpu)",
                                     "gpu02     POWER9   LINUXPPC64LE 1      (docker !gpu)"]


def test_host_range_row_is_edited_not_duplicated():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nhost[01-04] ! ! 1 (mg)\nEnd Host\n"
    new, changed, created, _w = edit_hosts(text, ["host02", "host03"], ["docker"], create_missing=True)
    assert created == [] and changed == ["host[01-04]"]
    assert new.splitlines()[2] == "host[01-04] ! ! 1 (mg docker)"
    new2, _ch, created2, _w = edit_hosts(text, ["host05"], ["docker"], create_missing=True)
    assert created2 == ["host05"]


def test_host_resource_forms_and_absent():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nn1 ! ! 1 (!docker gpu=2 fs)\nEnd Host\n"
    assert edit_hosts(text, ["n1"], ["docker"])[0].splitlines()[2] == "n1 ! ! 1 (docker gpu=2 fs)"
    assert edit_hosts(text, ["n1"], ["gpu=4"])[0].splitlines()[2] == "n1 ! ! 1 (!docker gpu=4 fs)"
    assert edit_hosts(text, ["n1"], ["!docker"])[0] == text
    assert edit_hosts(text, ["n1"], ["docker", "gpu"], state="absent")[0].splitlines()[2] == "n1 ! ! 1 (fs)"
    assert edit_hosts(text, ["n1"], ["docker", "gpu", "fs"], state="absent")[0].splitlines()[2] == "n1 ! ! 1 ()"


def test_host_missing_without_create_warns():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nn1 ! ! 1 ()\nEnd Host\n"
    new, changed, created, warnings = edit_hosts(text, ["n9"], ["docker"])
    assert new == text and changed == created == []
    assert warnings == ["host n9 has no row in the Host section; nothing done for it"]


def test_host_rejects_bad_requests():
    text = "Begin Host\nHOSTNAME model type server RESOURCES\nEnd Host\n"
    for bad in (["a b"], ["n1", "all"], ["x#y"], ["(n1)"]):
        with pytest.raises(ValueError):
            edit_hosts(text, bad, ["docker"])
    for bad in (["(docker)"], ["a b"], ["#x"], [""]):
        with pytest.raises(ValueError):
            edit_hosts(text, ["n1"], bad)
    with pytest.raises(LsfSyntaxError, match="no Host section"):
        edit_hosts("Begin Parameters\nA=1\nEnd Parameters\n", ["n1"], ["docker"])


@pytest.mark.parametrize("pattern,host,expected", [
    ("host[01-04]", "host01", True), ("host[01-04]", "host04", True), ("host[01-04]", "host1", False),
    ("host[01-04]", "host05", False), ("HOST[01-04]", "host02", True), ("host[1-100]", "host100", True),
    ("host[1-100]", "host007", False), ("host[5:20]", "host5", True), ("host[5:20]", "host21", False),
    ("hostA[1,3]B[1-3]", "hostA3B2", True), ("hostA[1,3]B[1-3]", "hostA2B2", False), ("node1", "NODE1", True),
    ("node1", "node10", False),
])
def test_host_patterns(pattern, host, expected):
    assert HostPattern(pattern).matches(host) is expected


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


@pytest.mark.parametrize("description", ["a\x00b", "a\x0bb", "a\x1fb", "a\x7fb"])
def test_resource_description_with_control_characters_is_refused_up_front(description):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import resource_request
    with pytest.raises(ValueError, match="control character"):
        resource_request({"description": description})


@pytest.mark.parametrize("name", ["End", "end", "BEGIN"])
def test_begin_end_are_refused_as_resource_and_host_names(name):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
        check_host_name,
        check_resource_name,
    )
    with pytest.raises(ValueError, match="would be read as"):
        check_resource_name(name)
    with pytest.raises(ValueError, match="would be read as"):
        check_host_name(name)
