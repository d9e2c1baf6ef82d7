# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support matrix is written once, in docs/support-matrix.md, and every other place agrees with it.

The tables between ``<!-- support-matrix -->`` and ``<!-- /support-matrix -->`` are the data: the
operating systems by architecture, and the components with their lines. Checked against them: each
role's ``meta/main.yml`` (``platforms``, ``min_ansible_version``), the platforms that the roles' argument
specs, role descriptions and ``galaxy.yml`` name, ``meta/runtime.yml``'s ``requires_ansible``,
``tests/config.yml``'s node Python, and the copy of the block in the README.
"""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MATRIX = ROOT / "docs" / "support-matrix.md"
README = ROOT / "README.md"
BEGIN = "<!-- support-matrix -->"
END = "<!-- /support-matrix -->"
STATUSES = ("tested (CI converges it)", "code present, not converged here", "not supported",
            "tested (molecule converges it, not in CI)")
ARCHITECTURES = ("x86_64", "ppc64le", "aarch64")
ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/main.yml"))


def _rel(path):
    return path.relative_to(ROOT) if ROOT in path.parents else path.name


def matrix_block(path):
    """The lines between the markers, as (line number, text); fails naming the file when they are missing."""
    lines = path.read_text(encoding="utf-8").splitlines()
    begins = [n for n, line in enumerate(lines, 1) if line.strip() == BEGIN]
    ends = [n for n, line in enumerate(lines, 1) if line.strip() == END]
    assert len(begins) == 1 and len(ends) == 1 and begins[0] < ends[0], (
        "%s: wants one line %r and, after it, one line %r around the support matrix (found %s at lines %s, %s at "
        "lines %s)" % (_rel(path), BEGIN, END, BEGIN, begins or "none", END, ends or "none"))
    return [(n, lines[n - 1]) for n in range(begins[0] + 1, ends[0])]


def _cells(path, number, line):
    text = line.strip()
    assert text.startswith("|") and text.endswith("|"), "%s:%d: a table row starts and ends with '|': %r" % (
        _rel(path), number, line)
    return [cell.strip() for cell in text[1:-1].split("|")]


def tables(path):
    """Each table of the block: its header and its rows, each row a dict with its line number under '_line'."""
    found, current = [], None
    for number, line in matrix_block(path):
        if not line.strip():
            current = None
            continue
        cells = _cells(path, number, line)
        if current is None:
            current = {"header": cells, "rows": [], "line": number}
            found.append(current)
        elif not current["rows"] and all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
            continue
        else:
            assert len(cells) == len(current["header"]), "%s:%d: %d cells, the table's header (line %d) has %d" % (
                _rel(path), number, len(cells), current["line"], len(current["header"]))
            row = dict(zip(current["header"], cells))
            row["_line"] = number
            current["rows"].append(row)
    return found


def _table(first_column):
    for table in tables(MATRIX):
        if table["header"][0] == first_column:
            return table
    raise AssertionError("%s: no table whose first column is %r between the markers" % (_rel(MATRIX), first_column))


def platform_rows():
    return _table("Operating system")["rows"]


def component_rows():
    return _table("Component")["rows"]


def _component(name):
    rows = [row for row in component_rows() if row["Component"] == name]
    assert len(rows) == 1, "%s: wants one row for %r in the component table, found %d" % (_rel(MATRIX), name, len(rows))
    return rows[0]


def galaxy_platforms(status_filter):
    """(name, version) of the Galaxy platform column, for the rows with an architecture whose status passes."""
    found = set()
    for row in platform_rows():
        name, dummy, version = row["Galaxy platform"].partition(" ")
        assert name and version, "%s:%d: Galaxy platform %r is not '<name> <version>'" % (
            _rel(MATRIX), row["_line"], row["Galaxy platform"])
        if any(status_filter(row[arch]) for arch in ARCHITECTURES):
            found.add((name, version))
    return found


def supported_platforms():
    return galaxy_platforms(lambda status: status != "not supported")


def _backticked(row):
    values = re.findall(r"`([^`]+)`", row["Line"])
    assert len(values) == 1, "%s:%d: wants the line as one `quoted` value, found %r" % (
        _rel(MATRIX), row["_line"], row["Line"])
    return values[0]


def _min_version(spec):
    """'>=2.19.0' or '>=2.16.0,<2.20' -> '2.19' / '2.16'."""
    lower = [part.strip()[2:] for part in spec.split(",") if part.strip().startswith(">=")]
    assert len(lower) == 1, "version range %r has no single '>=' bound" % spec
    return ".".join(lower[0].split(".")[:2])


def test_every_status_is_one_of_the_four():
    table = _table("Operating system")
    assert table["header"][2:] == list(ARCHITECTURES)
    for row in platform_rows():
        for arch in ARCHITECTURES:
            assert row[arch] in STATUSES, "%s:%d: %s: status %r is none of %s" % (
                _rel(MATRIX), row["_line"], arch, row[arch], STATUSES)
    for row in component_rows():
        assert row["Status"].startswith(STATUSES), "%s:%d: status %r starts with none of %s" % (
            _rel(MATRIX), row["_line"], row["Status"], STATUSES)


def test_the_converged_platforms_are_the_ones_ci_runs():
    # Debian 12 on x86_64 (the node image) is what CI's molecule scenarios run; ppc64le (the POWER9 node under
    # qemu) is what `make ppc64le` runs, outside CI's run.
    tested = {(row["Galaxy platform"], arch) for row in platform_rows() for arch in ARCHITECTURES
              if row[arch] == STATUSES[0]}
    assert tested == {("Debian bookworm", "x86_64")}
    on_demand = {(row["Galaxy platform"], arch) for row in platform_rows() for arch in ARCHITECTURES
                 if row[arch] == STATUSES[3]}
    assert on_demand == {("Debian bookworm", "ppc64le")}
    scenarios = {p.parent.name: p.read_text() for p in (ROOT / "molecule").glob("*/molecule.yml")}
    # The one exception, el, runs the EL package path on a Debian userland and says so (the matrix keeps EL at
    # "code present, not converged here").
    others = sorted(name for name, text in scenarios.items() if "debian12" not in text)
    assert others == ["el"], "a scenario runs something other than Debian 12: %s" % others
    assert "stand-in userland" in scenarios["el"] and "NOT a RHEL node" in scenarios["el"]
    assert "ppc64le" in scenarios


@pytest.mark.parametrize("role", ROLES)
def test_role_platforms_are_the_matrix(role):
    path = ROOT / "roles" / role / "meta" / "main.yml"
    info = yaml.safe_load(path.read_text())["galaxy_info"]
    claimed = {(p["name"], str(v)) for p in info["platforms"] for v in p["versions"]}
    wanted = supported_platforms()
    assert claimed == wanted, "%s: platforms claim %s, the matrix (%s) does not; lack %s" % (
        _rel(path), sorted(claimed - wanted) or "nothing more", _rel(MATRIX), sorted(wanted - claimed) or "nothing")


@pytest.mark.parametrize("role", ROLES)
def test_role_min_ansible_version_is_requires_ansible(role):
    path = ROOT / "roles" / role / "meta" / "main.yml"
    info = yaml.safe_load(path.read_text())["galaxy_info"]
    requires = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert str(info["min_ansible_version"]) == _min_version(requires), (
        "%s: min_ansible_version %s, meta/runtime.yml requires_ansible %r" % (
            _rel(path), info["min_ansible_version"], requires))


def test_requires_ansible_is_the_matrix():
    requires = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    row = _component("ansible-core (controller)")
    assert _backticked(row) == requires, "%s:%d: ansible-core %r, meta/runtime.yml requires_ansible %r" % (
        _rel(MATRIX), row["_line"], _backticked(row), requires)


def test_node_python_is_the_one_ansible_test_checks_modules_against():
    python_requires = yaml.safe_load((ROOT / "tests" / "config.yml").read_text())["modules"]["python_requires"]
    row = _component("Node Python")
    oldest = re.match(r"(\d+\.\d+) or later$", row["Line"])
    assert oldest, "%s:%d: node Python %r is not '<version> or later'" % (_rel(MATRIX), row["_line"], row["Line"])
    assert python_requires == ">=%s" % oldest.group(1), "%s:%d: node Python %s, tests/config.yml %r" % (
        _rel(MATRIX), row["_line"], row["Line"], python_requires)


# Operating system releases as descriptions name them, and the Galaxy platform each one is.
_OS_PATTERNS = (
    (re.compile(r"\b(?:EL|RHEL|CentOS|Rocky(?: Linux)?|AlmaLinux|Alma) ?(\d+)\b"), lambda m: ("EL", m.group(1))),
    (re.compile(r"\bDebian ?(\d+)\b"), lambda m: ("Debian", {"10": "buster", "11": "bullseye", "12": "bookworm",
                                                             "13": "trixie"}.get(m.group(1), m.group(1)))),
    (re.compile(r"\bUbuntu ?(\d\d\.\d\d)\b"), lambda m: ("Ubuntu", {"20.04": "focal", "22.04": "jammy",
                                                                    "24.04": "noble"}.get(m.group(1), m.group(1)))),
    (re.compile(r"\b(buster|bullseye|bookworm|trixie)\b"), lambda m: ("Debian", m.group(1))),
    (re.compile(r"\b(bionic|focal|jammy|noble)\b"), lambda m: ("Ubuntu", m.group(1))),
)


def _descriptions():
    """(path, text) of what the collection says about itself outside the matrix."""
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    yield ROOT / "galaxy.yml", galaxy["description"]
    for role in ROLES:
        meta = ROOT / "roles" / role / "meta"
        yield meta / "main.yml", yaml.safe_load((meta / "main.yml").read_text())["galaxy_info"]["description"]
        yield meta / "argument_specs.yml", (meta / "argument_specs.yml").read_text()


def test_descriptions_name_only_matrix_platforms():
    supported = supported_platforms()
    wrong = []
    for path, text in _descriptions():
        for pattern, platform in _OS_PATTERNS:
            for match in pattern.finditer(text):
                if platform(match) not in supported:
                    line = text.count("\n", 0, match.start()) + 1
                    wrong.append("%s:%d: %r" % (_rel(path), line, match.group(0)))
    assert not wrong, "platforms that %s does not support: %s" % (_rel(MATRIX), "; ".join(wrong))


def test_galaxy_yml_is_for_lsf_and_slurm_clusters_and_rootless_runtimes():
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    for word in ("LSF", "Slurm", "rootless"):
        assert word in galaxy["description"], "galaxy.yml: description does not name %s" % word
    assert {"lsf", "slurm", "gpu", "rootless"} <= set(galaxy["tags"]), "galaxy.yml: tags %s" % galaxy["tags"]
    components = {row["Component"] for row in component_rows()}
    assert "IBM Spectrum LSF" in components and "Slurm" in components


def test_readme_carries_the_matrix():
    readme = [line for dummy, line in matrix_block(README)]
    matrix = [line for dummy, line in matrix_block(MATRIX)]
    assert readme == matrix, "README.md: the block between %s and %s differs from %s's" % (BEGIN, END, _rel(MATRIX))


def test_a_broken_row_is_named_with_its_line(tmp_path):
    text = MATRIX.read_text(encoding="utf-8").replace("| not supported |\n", "| not supported\n", 1)
    broken = tmp_path / "matrix.md"
    broken.write_text(text, encoding="utf-8")
    with pytest.raises(AssertionError, match=r"^matrix\.md:\d+: a table row starts and ends with '\|'"):
        tables(broken)


def test_missing_markers_are_named(tmp_path):
    plain = tmp_path / "README.md"
    plain.write_text("# no matrix here\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r"^README\.md: wants one line '<!-- support-matrix -->'"):
        matrix_block(plain)
