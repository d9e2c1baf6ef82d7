# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adversarial tests of the LSF modules on real files.

Every case copies a real configuration file (the LSF 10.1 install tree in
tests/fixtures/lsf10.1, the public samples in tests/fixtures/lsf_samples and
tests/fixtures/lsb_applications) into tmp_path, breaks it or feeds a hostile
value to the module that edits it, and checks what an LSF site relies on:

* a malformed file fails with ``path:line: message`` and keeps its exact bytes
  (check mode and real run, no backup, no temporary file left);
* a hostile value is refused (the message names the file and the key) or
  written so that LSF, and a shell sourcing lsf.conf, read exactly it;
* every real sample round-trips byte-identically;
* set-valued lsf.conf parameters keep the site's words;
* check mode predicts exactly what the real run does.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
TREE = FIXTURES / "lsf10.1" / "conf"
SAMPLES = FIXTURES / "lsf_samples"
LSB_SAMPLES = FIXTURES / "lsb_applications"

# tests/adversarial/conftest.py installs the collection loader.
from ansible.module_utils import _internal as module_utils_internal
from ansible.module_utils.common import warnings as module_warnings
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.module_utils.test_lsf_applications import lsb_read
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import (
    run_module,
    warning_texts,
)

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_applications import (
    ApplicationsFile,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_conf import get_keys, parse_conf
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    CLUSTER_SHAPES,
    SHARED_SHAPES,
    parse_document,
)
from ansible_collections.hpc.gpu_containers.plugins.modules import (
    lsf_application,
    lsf_conf,
    lsf_host,
    lsf_resource,
)


@pytest.fixture(autouse=True)
def _module_side(monkeypatch):
    """Modules run as on a managed node (see tests/unit/conftest.py)."""
    monkeypatch.setattr(module_utils_internal, "is_controller", False)
    monkeypatch.setattr(module_warnings, "_global_warnings", {})
    monkeypatch.setattr(module_warnings, "_global_deprecations", {})


CONF = (TREE / "lsf.conf").read_bytes().decode()
SHARED = (TREE / "lsf.shared").read_bytes().decode()
CLUSTER = (TREE / "lsf.cluster.gpucluster").read_bytes().decode()
APPS = (TREE / "lsbatch" / "gpucluster" / "configdir" / "lsb.applications").read_bytes().decode()

CONF_ARGS = {"settings": {"LSF_PROCESS_TRACKING": "Y"}}
RES_ARGS = {"name": "docker", "type": "Boolean", "description": "Docker container"}
HOST_ARGS = {"hosts": ["gpu01"], "resources": ["docker"]}
APP_ARGS = {"name": "powerai", "description": "PowerAI", "container": {"image": "registry:5000/powerai:1", "options": ["--rm"]}}


def nlines(text):
    """Number of physical lines (a last line without newline counts)."""
    return len(text.splitlines())


def line_of(text, needle):
    """1-based number of the first line that contains ``needle``."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError("%r not in the fixture" % needle)


def insert_after(text, needle, new):
    """``text`` with the line(s) ``new`` inserted after the first line holding ``needle``."""
    lines = text.splitlines(True)
    at = line_of(text, needle)
    return "".join(lines[:at]) + new + "".join(lines[at:])


def drop_line(text, needle):
    lines = text.splitlines(True)
    at = line_of(text, needle)
    return "".join(lines[:at - 1] + lines[at:])


# --------------------------------------------------------------------------
# 1. Malformed files: path:line: message, bytes unchanged
# --------------------------------------------------------------------------

_HUGE = 2000000

# (id, module, args, broken text, expected line, message fragment)
MALFORMED = [
    # lsf.conf (the 10.1 install's own file)
    ("conf-blanks-around-eq", lsf_conf, CONF_ARGS, CONF + "LSF_LOGDIR = /var/log\n", nlines(CONF) + 1, "blanks around '='"),
    ("conf-unterminated-quote", lsf_conf, CONF_ARGS,
     CONF.replace('LSF_MASTER_LIST="head"', 'LSF_MASTER_LIST="head'), line_of(CONF, "LSF_MASTER_LIST"), "unterminated double quote"),
    ("conf-unquoted-words", lsf_conf, CONF_ARGS,
     CONF.replace('LSF_MASTER_LIST="head"', "LSF_MASTER_LIST=head gpu01"), line_of(CONF, "LSF_MASTER_LIST"), "blanks but no double quotes"),
    ("conf-text-after-quote", lsf_conf, CONF_ARGS,
     CONF.replace('LSF_MASTER_LIST="head"', 'LSF_MASTER_LIST="head" gpu01'), line_of(CONF, "LSF_MASTER_LIST"), "after the closing quote"),
    ("conf-stray-quote", lsf_conf, CONF_ARGS, insert_after(CONF, "LSF_AUTH=eauth", 'LSF_X=a"b\n'),
     line_of(CONF, "LSF_AUTH=eauth") + 1, "stray double quote"),
    ("conf-no-equals", lsf_conf, CONF_ARGS, insert_after(CONF, "LSF_TOP=", "export LSF_TOP\n"),
     line_of(CONF, "LSF_TOP=") + 1, "expected NAME=value"),
    ("conf-nul-byte", lsf_conf, CONF_ARGS, CONF.replace("LSF_LOG_MASK=LOG_WARNING", "LSF_LOG_MASK=LOG_\x00WARNING"),
     line_of(CONF, "LSF_LOG_MASK"), "NUL byte"),
    ("conf-binary-junk", lsf_conf, CONF_ARGS, insert_after(CONF, "LSB_MODE=batch", "\x01\x02\x7f\x1b[0m\n"),
     line_of(CONF, "LSB_MODE=batch") + 1, "expected NAME=value"),
    ("conf-huge-line", lsf_conf, CONF_ARGS, insert_after(CONF, "LSB_MODE=batch", "X" * _HUGE + "\n"),
     line_of(CONF, "LSB_MODE=batch") + 1, "expected NAME=value"),
    ("conf-huge-unquoted-words", lsf_conf, CONF_ARGS, CONF + "LSF_X=" + "w " * (_HUGE // 2) + "\n",
     nlines(CONF) + 1, "blanks but no double quotes"),
    ("conf-crlf-bad-line", lsf_conf, CONF_ARGS, CONF.replace("\n", "\r\n") + "LSF_X Y\r\n", nlines(CONF) + 1,
     "expected NAME=value"),
    # lsf.shared
    ("shared-begin-without-end", lsf_resource, RES_ARGS, drop_line(SHARED, "End Resource"),
     line_of(SHARED, "Begin Resource"), "Begin Resource has no End"),
    ("shared-end-without-begin", lsf_resource, RES_ARGS, SHARED + "End Resource\n", nlines(SHARED) + 1,
     "End Resource without a matching Begin"),
    ("shared-row-too-few", lsf_resource, RES_ARGS, insert_after(SHARED, "(OPENMPI)", "   aws  Boolean () (AWS)\n"),
     line_of(SHARED, "(OPENMPI)") + 1, "row has 4 values but the Resource header"),
    ("shared-row-too-many", lsf_resource, RES_ARGS, insert_after(SHARED, "(OPENMPI)", "   aws  Boolean () () AWS hosts\n"),
     line_of(SHARED, "(OPENMPI)") + 1, "row has 6 values"),
    ("shared-unbalanced-paren", lsf_resource, RES_ARGS, insert_after(SHARED, "(OPENMPI)", "   aws  Boolean () () (AWS\n"),
     line_of(SHARED, "(OPENMPI)") + 1, "unbalanced parenthesis"),
    ("shared-nested-begin", lsf_resource, RES_ARGS, drop_line(SHARED, "End HostType"),
     line_of(SHARED, "Begin HostModel") - 1, "Begin HostModel inside section HostType"),
    ("shared-continuation-at-eof", lsf_resource, RES_ARGS,
     drop_line(SHARED, "End Resource") + "   aws  Boolean () () (AWS) \\\n", line_of(SHARED, "Begin Resource"),
     "Begin Resource has no End"),
    ("shared-continuation-swallows-end", lsf_resource, RES_ARGS,
     SHARED.replace("(OPENMPI)\n", "(OPENMPI) \\\n", 1).replace(
         "   define_ncpus_procs   Boolean () ()      (ncpus := procs)\n", ""),
     line_of(SHARED, "(OPENMPI)"), "row has 10 values"),
    ("shared-nul-byte", lsf_resource, RES_ARGS, SHARED.replace("(Compute server)", "(Compute\x00server)"),
     line_of(SHARED, "(Compute server)"), "NUL byte"),
    ("shared-binary-junk", lsf_resource, RES_ARGS, insert_after(SHARED, "(OPENMPI)", "\x01\x02\x03\n"),
     line_of(SHARED, "(OPENMPI)") + 1, "row has 1 values"),
    ("shared-huge-row", lsf_resource, RES_ARGS, insert_after(SHARED, "(OPENMPI)", "x " * (_HUGE // 2) + "\n"),
     line_of(SHARED, "(OPENMPI)") + 1, "row has 1000000 values"),
    ("shared-duplicate-column", lsf_resource, RES_ARGS,
     SHARED.replace("RESOURCENAME  TYPE    INTERVAL", "RESOURCENAME  TYPE    TYPE"), line_of(SHARED, "RESOURCENAME"),
     "column TYPE appears twice"),
    # lsf.cluster.<cluster>
    ("cluster-row-too-few", lsf_host, HOST_ARGS, CLUSTER.replace("gpu02   !   !   1   ()", "gpu02   !   1   ()"),
     line_of(CLUSTER, "gpu02"), "row has 4 values but the Host header"),
    ("cluster-host-without-end", lsf_host, HOST_ARGS, drop_line(CLUSTER, "End     Host"),
     line_of(CLUSTER, "Begin Parameters") - 1, "Begin Parameters inside section Host (line %d)" % line_of(CLUSTER, "Begin\tHost")),
    ("cluster-unbalanced-resources", lsf_host, HOST_ARGS, CLUSTER.replace("gpu01   !   !   1   ()", "gpu01   !   !   1   (mg"),
     line_of(CLUSTER, "gpu01"), "unbalanced parenthesis"),
    ("cluster-parameters-no-equals", lsf_host, HOST_ARGS, insert_after(CLUSTER, "LSF_HOST_ADDR_RANGE", "FLOAT_CLIENTS 10\n"),
     line_of(CLUSTER, "LSF_HOST_ADDR_RANGE") + 1, "expected KEY = value in section Parameters"),
    ("cluster-code-outside-section", lsf_host, HOST_ARGS, CLUSTER + "gpu03 ! ! 1 ()\n", nlines(CLUSTER) + 1,
     "outside any Begin/End section"),
    ("cluster-continuation-at-eof", lsf_host, HOST_ARGS, CLUSTER + "Begin Parameters\nEXINTERVAL=10 \\\n",
     nlines(CLUSTER) + 1, "Begin Parameters has no End"),
    ("cluster-nul-byte", lsf_host, HOST_ARGS, CLUSTER.replace("lsfadmin", "lsf\x00admin"), line_of(CLUSTER, "lsfadmin"),
     "NUL byte"),
    ("cluster-huge-resources", lsf_host, HOST_ARGS,
     CLUSTER.replace("gpu02   !   !   1   ()", "gpu02   !   !   1   (" + "r " * (_HUGE // 2)), line_of(CLUSTER, "gpu02"),
     "unbalanced parenthesis"),
    # lsb.applications
    ("apps-begin-without-end", lsf_application, APP_ARGS, APPS.replace("End Application", ""),
     line_of(APPS, "NAME         = default") - 1, "Begin Application has no End"),
    ("apps-end-without-begin", lsf_application, APP_ARGS, APPS + "End Application\n", nlines(APPS) + 1,
     "End Application without a matching Begin"),
    ("apps-key-outside-profile", lsf_application, APP_ARGS, APPS + "RES_REQ = select[docker]\n", nlines(APPS) + 1,
     "outside any Begin/End section"),
    ("apps-line-without-equals", lsf_application, APP_ARGS,
     insert_after(APPS, "NAME         = default", "CONTAINER docker[image(x)]\n"), line_of(APPS, "NAME         = default") + 1,
     "expected KEY = value in section Application"),
    ("apps-continuation-at-eof", lsf_application, APP_ARGS,
     APPS[:APPS.rindex("End Application\n")] + "RES_REQ = select[docker] \\\n", line_of(APPS, "NAME         = default") - 1,
     "Begin Application has no End"),
    ("apps-nul-byte", lsf_application, APP_ARGS, APPS.replace("default application", "default\x00application"),
     line_of(APPS, "default application"), "NUL byte"),
    ("apps-other-section", lsf_application, APP_ARGS, APPS + "Begin Queue\nQUEUE_NAME = normal\nEnd Queue\n",
     nlines(APPS) + 1, "section Queue does not belong in lsb.applications"),
    ("apps-profile-twice", lsf_application, {"name": "default", "description": "x"}, APPS + APPS[APPS.index("Begin Application\nNAME"):],
     nlines(APPS) + 1, "profile default is defined more than once"),
    ("apps-huge-line", lsf_application, APP_ARGS, insert_after(APPS, "NAME         = default", "X" * _HUGE + "\n"),
     line_of(APPS, "NAME         = default") + 1, "expected KEY = value"),
]


@pytest.mark.parametrize("check", [True, False], ids=["check", "run"])
@pytest.mark.parametrize("case_id, module, args, text, line, fragment", MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_real_file_fails_with_path_line_and_keeps_its_bytes(tmp_path, capsys, check, case_id, module,
                                                                      args, text, line, fragment):
    path = tmp_path / "lsf.file"
    path.write_bytes(text.encode())
    res = run_module(module, capsys, check=check, path=str(path), backup=True, **args)
    assert res.get("failed") is True, res
    assert res["msg"].startswith("%s:%d: " % (path, line)), res["msg"][:300]
    assert fragment in res["msg"], res["msg"][:300]
    assert len(res["msg"]) < 400  # a huge line is quoted in part only
    assert path.read_bytes() == text.encode()
    assert [p.name for p in tmp_path.iterdir()] == ["lsf.file"]  # no backup, no temporary file


INVALID_UTF8 = [
    ("conf", lsf_conf, CONF_ARGS, CONF.encode().replace(b"LOG_WARNING", b"LOG_\xffWARNING")),
    ("shared", lsf_resource, RES_ARGS, SHARED.encode() + b"\xfe\xfe\n"),
    ("cluster", lsf_host, HOST_ARGS, CLUSTER.encode().replace(b"gpu02", b"gpu\xc302")),
    ("apps", lsf_application, APP_ARGS, APPS.encode().replace(b"default application", b"default \xe2\x28\xa1")),
]


@pytest.mark.parametrize("case_id, module, args, data", INVALID_UTF8, ids=[c[0] for c in INVALID_UTF8])
def test_file_that_is_not_utf8_fails_naming_the_file_and_keeps_its_bytes(tmp_path, capsys, case_id, module, args, data):
    path = tmp_path / "lsf.file"
    path.write_bytes(data)
    res = run_module(module, capsys, path=str(path), **args)
    assert res.get("failed") is True, res
    # the transaction decodes before any model sees a line: it names the byte offset
    assert res["msg"].startswith("%s:" % path) and "UTF-8" in res["msg"], res["msg"]
    assert path.read_bytes() == data


# --------------------------------------------------------------------------
# 2. Hostile values
# --------------------------------------------------------------------------

# lsf.conf values: refused, or written so that sourcing runs nothing and the
# shell reads what LSF reads.  "refused" / "written" is the expected outcome.
CONF_HOSTILE = [
    ("dollar-paren", "$(touch canary)", "refused"),
    ("dollar-paren-in-list", "cpu $(touch canary)", "refused"),
    ("backquote", "`touch canary`", "refused"),
    ("parameter-expansion", "${PWD:+$(touch canary)}", "refused"),
    ("plain-variable", "$LSF_TOP/conf", "refused"),
    ("trailing-backslash", "memory\\", "refused"),
    ("backslash-escape", "\\$(touch canary)", "refused"),
    ("newline-command", "x\ntouch canary", "refused"),
    ("carriage-return", "x\rtouch canary", "refused"),
    ("unbalanced-double-quote", 'x"; touch canary; "', "refused"),
    ("nul", "x\x00touch canary", "refused"),
    ("escape-sequence", "x\x1b[2J", "refused"),
    ("semicolon", "a; touch canary", "written"),
    ("and-or-pipe", "a && touch canary || touch canary | cat", "written"),
    ("redirection", "a > canary < /dev/null", "written"),
    ("unbalanced-single-quote", "it's; touch canary", "written"),
    ("single-quoted-command", "'; touch canary; '", "written"),
    ("hash", "a # touch canary", "written"),
    ("glob", "* ?", "written"),
    ("tilde", "~root/x", "written"),
    ("brace", "{a,b} (x)", "written"),
    ("unicode", "Grüße ✓ 日本", "written"),
    ("tab", "a\tb", "written"),
]


@pytest.mark.parametrize("case_id, value, outcome", CONF_HOSTILE, ids=[c[0] for c in CONF_HOSTILE])
def test_hostile_lsf_conf_value_never_runs_when_the_file_is_sourced(tmp_path, capsys, case_id, value, outcome):
    path = tmp_path / "lsf.conf"
    path.write_text(CONF)
    res = run_module(lsf_conf, capsys, path=str(path), settings={"LSF_SITE_VALUE": value})
    text = path.read_bytes().decode()
    if outcome == "refused":
        assert res.get("failed") is True, res
        assert res["msg"].startswith("%s: LSF_SITE_VALUE: value " % path), res["msg"]
        assert text == CONF
    else:
        assert res.get("changed") is True, res
        assert get_keys(text)["LSF_SITE_VALUE"] == value
        assert text.startswith(CONF)
    proc = subprocess.run(["sh", "-c", '. ./lsf.conf && printf "%s" "${LSF_SITE_VALUE-unset}"'], cwd=str(tmp_path),
                          capture_output=True, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert not (tmp_path / "canary").exists()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == (value if outcome == "written" else "unset")


CONF_HOSTILE_NAMES = ["IFS", "PATH", "LD_PRELOAD", "LSF_X;touch canary", "LSF_X\n", "LSF X", "1LSF", "LSF-X", "$(touch canary)"]


@pytest.mark.parametrize("name", CONF_HOSTILE_NAMES)
def test_hostile_lsf_conf_name_is_refused(tmp_path, capsys, name):
    path = tmp_path / "lsf.conf"
    path.write_text(CONF)
    res = run_module(lsf_conf, capsys, check=True, path=str(path), settings={name: "Y"})
    assert res.get("failed") is True, res
    assert res["msg"].startswith("%s: " % path) and repr(name)[1:-1] in res["msg"], res["msg"]
    assert path.read_text() == CONF and not (tmp_path / "canary").exists()


LONG = " ".join("word%d" % i for i in range(400))

# (id, request, expected: ("refused", fragment) or ("written", KEY, value LSF reads))
APP_HOSTILE = [
    ("hash-in-description", {"description": "GPU # jobs"}, ("refused", "DESCRIPTION: value 'GPU # jobs' contains '#'")),
    ("hash-in-option", {"container": {"image": "i", "options": ["--label=a#b"]}}, ("refused", "CONTAINER: ")),
    ("hash-in-parameter", {"parameters": {"RES_REQ": "select[docker] # x"}}, ("refused", "RES_REQ: value")),
    ("newline-in-description", {"description": "x\nEnd Application"}, ("refused", "DESCRIPTION: value 'x\\nEnd Application' contains a line break")),
    ("trailing-newline", {"description": "PowerAI\n"}, ("refused", "contains a line break")),
    ("newline-in-key", {"parameters": {"RES_REQ\n": "x"}}, ("refused", "parameter name 'RES_REQ\\n'")),
    ("end-as-key", {"parameters": {"End": "Application"}}, ("refused", "parameter name 'End' would be read as an End line")),
    ("begin-as-key", {"parameters": {"BEGIN": "Application"}}, ("refused", "parameter name 'BEGIN' would be read as a Begin line")),
    ("nul-in-value", {"parameters": {"RES_REQ": "a\x00b"}}, ("refused", "control character")),
    ("trailing-backslash", {"description": "PowerAI \\"}, ("refused", "line continuation")),
    ("blank-in-mount", {"container": {"image": "i", "options": ["--volume=/gpfs/my project:/gpfs/my project"]}},
     ("refused", "has a blank inside a value")),
    ("quoted-blank-in-option", {"container": {"image": "i", "options": ['--env "A=b c"']}},
     ("refused", "blank inside one docker argument")),
    ("bracket-in-option", {"container": {"image": "i", "options": ["--x=]"]}}, ("refused", "CONTAINER: ")),
    ("blank-in-exec-driver", {"exec_driver": {"starter": "/opt/my lsf/docker-starter.py"}}, ("refused", "EXEC_DRIVER: ")),
    ("end-as-value", {"description": "End"}, ("written", "DESCRIPTION", "End")),
    ("end-application-as-value", {"description": "End Application"}, ("written", "DESCRIPTION", "End Application")),
    ("begin-as-value", {"parameters": {"RES_REQ": "Begin Application"}}, ("written", "RES_REQ", "Begin Application")),
    ("unicode", {"description": "Grüße ✓ 日本"}, ("written", "DESCRIPTION", "Grüße ✓ 日本")),
    ("shell-metacharacters", {"description": "$(touch canary); `id` | cat"},
     ("written", "DESCRIPTION", "$(touch canary); `id` | cat")),
    ("long-value-wrapped", {"parameters": {"ENV_VARS": LONG}}, ("written", "ENV_VARS", LONG)),
]


@pytest.mark.parametrize("case_id, request_, expected", APP_HOSTILE, ids=[c[0] for c in APP_HOSTILE])
def test_hostile_lsb_applications_value_is_refused_or_read_back_exactly(tmp_path, capsys, case_id, request_, expected):
    path = tmp_path / "lsb.applications"
    path.write_text(APPS)
    for check in (True, False):
        res = run_module(lsf_application, capsys, check=check, path=str(path), name="powerai", **request_)
        if expected[0] == "refused":
            assert res.get("failed") is True, res
            assert res["msg"].startswith("%s: application powerai: " % path), res["msg"]
            assert expected[1] in res["msg"], res["msg"]
            assert path.read_text() == APPS
    if expected[0] == "written":
        text = path.read_text()
        assert text.startswith(APPS)
        # LSF's keyword parsers see blank-separated words; a wrapped value keeps them
        assert lsb_read(text)["powerai"][expected[1]].split() == expected[2].split()
        assert lsb_read(text)["default"] == lsb_read(APPS)["default"]
        assert ApplicationsFile(text).names() == ["default", "powerai"]
        assert run_module(lsf_application, capsys, path=str(path), name="powerai", **request_)["changed"] is False


# (id, module, args, expected outcome fragment or None for written)
TABLE_HOSTILE = [
    ("resource-named-end", lsf_resource, dict(RES_ARGS, name="End"), "would be read as an End line"),
    ("resource-named-begin", lsf_resource, dict(RES_ARGS, name="begin"), "would be read as a Begin line"),
    ("resource-name-newline", lsf_resource, dict(RES_ARGS, name="docker\nEnd"), "contains a character LSF forbids"),
    ("resource-hash-description", lsf_resource, dict(RES_ARGS, description="Docker # container"), "parentheses, #"),
    ("resource-paren-description", lsf_resource, dict(RES_ARGS, description="Docker) x (y"), "parentheses, #"),
    ("resource-newline-description", lsf_resource, dict(RES_ARGS, description="Docker\nEnd Resource"), "line breaks"),
    ("resource-nul-description", lsf_resource, dict(RES_ARGS, description="Docker\x00"), "control character"),
    ("resource-unicode-description", lsf_resource, dict(RES_ARGS, description="Dócker ✓ 容器"), None),
    ("host-named-end", lsf_host, dict(HOST_ARGS, hosts=["End"], create_missing=True), "would be read as an End line"),
    ("host-shell-name", lsf_host, dict(HOST_ARGS, hosts=["gpu03;reboot"], create_missing=True), "not a valid host name"),
    ("host-resource-paren", lsf_host, dict(HOST_ARGS, resources=["docker)"]), "not a valid RESOURCES item"),
    ("host-model-newline", lsf_host, dict(HOST_ARGS, hosts=["gpu03"], create_missing=True, model="X86\nEnd Host"),
     "model must be one word"),
    ("host-range-created", lsf_host, dict(HOST_ARGS, hosts=["gpu[03-08]"], create_missing=True), None),
]


@pytest.mark.parametrize("case_id, module, args, fragment", TABLE_HOSTILE, ids=[c[0] for c in TABLE_HOSTILE])
def test_hostile_table_value_is_refused_or_parses_back(tmp_path, capsys, case_id, module, args, fragment):
    shared = module is lsf_resource
    path = tmp_path / ("lsf.shared" if shared else "lsf.cluster.gpucluster")
    original = SHARED if shared else CLUSTER
    path.write_text(original)
    res = run_module(module, capsys, path=str(path), **args)
    if fragment is not None:
        assert res.get("failed") is True, res
        assert res["msg"].startswith("%s: " % path) and fragment in res["msg"], res["msg"]
        assert path.read_text() == original
        return
    assert res.get("changed") is True, res
    doc = parse_document(path.read_text(), shapes=SHARED_SHAPES if shared else CLUSTER_SHAPES)
    if shared:
        rows = {r.value("RESOURCENAME"): r for s in doc.find("resource") for r in s.rows}
        assert rows[args["name"]].value("DESCRIPTION") == args["description"]
    else:
        rows = {r.value("HOSTNAME"): r for s in doc.find("host") for r in s.rows}
        assert rows[args["hosts"][0]].value("RESOURCES") == "docker"
    assert run_module(module, capsys, path=str(path), **args)["changed"] is False


# --------------------------------------------------------------------------
# 3. Every real sample round-trips byte-identically
# --------------------------------------------------------------------------

def _kind(path):
    name = path.name
    for kind in ("lsf.conf", "lsf.shared", "lsf.cluster", "lsb.applications"):
        if kind in name:
            return kind
    return None


REAL_FILES = sorted(
    [p for p in SAMPLES.iterdir() if _kind(p)] + [p for p in LSB_SAMPLES.iterdir() if _kind(p)]
    + [TREE / "lsf.conf", TREE / "lsf.shared", TREE / "lsf.cluster.gpucluster",
       TREE / "lsbatch" / "gpucluster" / "configdir" / "lsb.applications"],
    key=lambda p: str(p.relative_to(FIXTURES)))


def test_every_sample_file_is_covered():
    names = {p.name for p in REAL_FILES}
    assert {p.name for p in SAMPLES.iterdir() if p.name != "PROVENANCE.md"} <= names


def _parse(kind, text, templates):
    if kind == "lsf.conf":
        lines, _entries = parse_conf(text)
        return "".join(lines)
    if kind == "lsb.applications":
        return ApplicationsFile(text).render()
    shapes = SHARED_SHAPES if kind == "lsf.shared" else CLUSTER_SHAPES
    return parse_document(text, shapes=shapes, templates=templates).render()


@pytest.mark.parametrize("path", REAL_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_real_file_round_trips_byte_identically(tmp_path, capsys, path):
    data = path.read_bytes()
    text = data.decode()
    kind = _kind(path)
    assert _parse(kind, text, path.name.endswith(".erb")).encode() == data
    if path.name.endswith(".erb") and "<%" in text:
        return  # a template, not a file LSF reads: parsed with its ERB lines kept opaque, not edited
    target = tmp_path / path.name
    target.write_bytes(data)
    # an edit and its reversal give back the exact bytes
    if kind == "lsf.conf":
        steps = [dict(settings={"LSF_ADVERSARIAL_PROBE": "a b"}), dict(settings={"LSF_ADVERSARIAL_PROBE": None})]
        module = lsf_conf
    elif kind == "lsf.shared":
        steps = [dict(name="zzprobe", type="Boolean", description="probe"), dict(name="zzprobe", state="absent")]
        module = lsf_resource
    elif kind == "lsf.cluster":
        steps = [dict(hosts=["zzprobe"], resources=["docker"], create_missing=True),
                 dict(hosts=["zzprobe"], resources=["docker"], state="absent")]
        module = lsf_host
    else:
        steps = [dict(name="zzprobe", description="probe"), dict(name="zzprobe", state="absent")]
        module = lsf_application
    first = run_module(module, capsys, path=str(target), **steps[0])
    assert first.get("changed") is True, first
    if kind == "lsf.cluster":
        # the added row stays (with no resources); delete it by hand to compare
        text_after = target.read_text()
        assert "zzprobe" in text_after
        run_module(module, capsys, path=str(target), **steps[1])
        kept = [ln for ln in target.read_text().splitlines(True) if not ln.startswith("zzprobe")]
        assert "".join(kept).encode() == data
        return
    second = run_module(module, capsys, path=str(target), **steps[1])
    assert second.get("changed") is True, second
    assert target.read_bytes() == data


# --------------------------------------------------------------------------
# 4. Set semantics of list-valued lsf.conf parameters
# --------------------------------------------------------------------------

# (id, line in the file or None, wanted, merge_lists, expected value, changed)
SETS = [
    ("site-word-kept", '"memory cpu gpu"', "cpu memory", True, "memory cpu gpu", False),
    ("other-order-no-change", '"memory cpu gpu"', "gpu cpu memory", True, "memory cpu gpu", False),
    ("missing-word-appended", '"memory"', "cpu memory", True, "memory cpu", True),
    ("single-unquoted-word", "gpu", "cpu memory", True, "gpu cpu memory", True),
    ("absent-key-added", None, "cpu memory", True, "cpu memory", True),
    ("list-given-as-list", '"memory cpu"', ["cpu", "memory"], True, "memory cpu", False),
    ("repeated-word-once", None, "cpu cpu memory", True, "cpu memory", True),
    ("case-differs", '"CPU memory"', "cpu memory", True, "CPU memory cpu", True),
    ("replace-drops-site-word", '"memory cpu gpu"', "cpu memory", False, "cpu memory", True),
    ("replace-other-order-no-change", '"memory cpu gpu"', "gpu memory cpu", False, "memory cpu gpu", False),
]


@pytest.mark.parametrize("case_id, current, wanted, merge, expected, changed", SETS, ids=[c[0] for c in SETS])
def test_resource_enforce_is_a_set_of_words(tmp_path, capsys, case_id, current, wanted, merge, expected, changed):
    path = tmp_path / "lsf.conf"
    text = CONF + ("LSB_RESOURCE_ENFORCE=%s\n" % current if current is not None else "")
    path.write_text(text)
    args = dict(settings={"LSB_RESOURCE_ENFORCE": wanted}, merge_lists=merge)
    predicted = run_module(lsf_conf, capsys, check=True, diff=True, path=str(path), **args)
    assert path.read_text() == text
    res = run_module(lsf_conf, capsys, diff=True, path=str(path), **args)
    assert predicted == res
    assert res["changed"] is changed
    assert res["settings"] == {"LSB_RESOURCE_ENFORCE": expected}
    assert get_keys(path.read_text())["LSB_RESOURCE_ENFORCE"] == expected
    if not changed:
        assert path.read_text() == text
    else:  # only that line changed
        assert [ln for ln in path.read_text().splitlines() if "LSB_RESOURCE_ENFORCE" not in ln] == \
               [ln for ln in text.splitlines() if "LSB_RESOURCE_ENFORCE" not in ln]
    assert run_module(lsf_conf, capsys, path=str(path), **args)["changed"] is False


# --------------------------------------------------------------------------
# 5. Check mode predicts exactly
# --------------------------------------------------------------------------

POWERAI = (LSB_SAMPLES / "nicolas-tallet__OpenPOWER-HPC-System-Administration-Guide__"
           "lsb.applications.powerai-excerpt").read_text()

ROLE_PROFILE = dict(
    name="powerai", description="PowerAI", exclusive=True,
    container={"image": "registry:5000/powerai:1",
               "options": ["--ipc=host", "--network=host", "--rm", "--ulimit=memlock=819200000:819200000",
                           "--volume=/etc/passwd:/etc/passwd:ro", "--volume=/etc/group:/etc/group:ro"]},
    exec_driver={"user": "lsfadmin", "starter": "/usr/share/lsf/conf/docker/lsf-docker-starter.py",
                 "controller": "/usr/share/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-control.py",
                 "monitor": "/usr/share/lsf/10.1/linux3.10-glibc2.17-x86_64/etc/docker-monitor.py"})

# (id, module, file text, file name, args, fragments the warnings hold, in order)
CHECK_MODE = [
    ("conf-seed", lsf_conf, CONF, "lsf.conf",
     dict(settings={"LSF_PROCESS_TRACKING": True, "LSF_LINUX_CGROUP_ACCT": "Y", "LSB_RESOURCE_ENFORCE": "cpu memory"}), []),
    ("conf-remove-and-merge", lsf_conf, CONF + 'LSB_RESOURCE_ENFORCE="gpu"\n', "lsf.conf",
     dict(settings={"LSF_AUTH": None, "LSB_RESOURCE_ENFORCE": ["cpu", "memory"]}), []),
    ("conf-duplicate", lsf_conf, CONF + "LSF_LOG_MASK=LOG_ERR\n", "lsf.conf", dict(settings={"LSF_LOG_MASK": "LOG_DEBUG"}),
     ["LSF_LOG_MASK is defined 2 times"]),
    ("shared-docker", lsf_resource, SHARED, "lsf.shared", RES_ARGS, []),
    ("cluster-all-hosts", lsf_host, CLUSTER, "lsf.cluster.gpucluster", dict(hosts=["all"], resources=["docker"]), []),
    ("cluster-create", lsf_host, CLUSTER, "lsf.cluster.gpucluster",
     dict(hosts=["gpu[03-04]", "gpu01"], resources=["docker", "!gpu"], create_missing=True), []),
    ("apps-role-profile", lsf_application, APPS, "lsb.applications", ROLE_PROFILE, []),
    ("apps-replace-malformed", lsf_application, POWERAI, "lsb.applications",
     dict(name="powerai", container={"image": "img", "options": ["--rm"]}),
     [":2: CONTAINER of profile powerai does not follow the CONTAINER grammar", "; replaced by the value requested"]),
    ("apps-keep-malformed", lsf_application, POWERAI, "lsb.applications",
     dict(name="powerai", parameters={"RES_REQ": "select[docker]"}), ["; kept as it is"]),
    ("apps-risky-ulimit", lsf_application, APPS, "lsb.applications",
     dict(name="x", container={"image": "img", "options": ["--ulimit=nofile=1024:1024"]}),
     ["profile x: docker option --ulimit nofile overrides the limit LSF sets"]),
    ("apps-remove", lsf_application, APPS, "lsb.applications", dict(name="default", state="absent"), []),
]


@pytest.mark.parametrize("case_id, module, text, name, args, warned", CHECK_MODE, ids=[c[0] for c in CHECK_MODE])
def test_check_mode_predicts_exactly(tmp_path, capsys, case_id, module, text, name, args, warned):
    path = tmp_path / name
    path.write_text(text)
    predicted = run_module(module, capsys, check=True, diff=True, path=str(path), **args)
    assert path.read_text() == text and [p.name for p in tmp_path.iterdir()] == [name]
    done = run_module(module, capsys, diff=True, path=str(path), **args)
    assert predicted == done
    assert done["changed"] is True
    assert done["diff"]["before"] == text and done["diff"]["after"] == path.read_text()
    again = run_module(module, capsys, check=True, path=str(path), **args)
    assert again["changed"] is False
    # the warnings say what happens, the same in check mode and in the run
    warnings = warning_texts(done)
    assert warning_texts(predicted) == warnings
    assert len(warnings) == (1 if warned else 0), warnings
    for fragment in warned:
        assert fragment in warnings[0], warnings


def test_at_least_fifty_cases():
    total = (len(MALFORMED) * 2 + len(INVALID_UTF8) + len(CONF_HOSTILE) + len(CONF_HOSTILE_NAMES) + len(APP_HOSTILE)
             + len(TABLE_HOSTILE)
             + len(REAL_FILES) + len(SETS) + len(CHECK_MODE))
    assert total >= 50
    assert len({c[0] for c in MALFORMED}) == len(MALFORMED)
    assert all(re.match(r"[a-z0-9-]+\Z", c[0]) for c in MALFORMED + CONF_HOSTILE)
