# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_application module: check mode, diff, idempotency, backup, failures."""

import os
import shutil
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import lsf_application
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "lsb_applications"
MIXED = FIXTURES / "constructed__mixed.lsb.applications"
POWERAI = FIXTURES / "nicolas-tallet__OpenPOWER-HPC-System-Administration-Guide__lsb.applications.powerai-excerpt"

GPU_PROFILE = {
    "name": "gpu",
    "description": "GPU jobs in Docker",
    "container": {"image": "registry:5000/nvidia/cuda:12.4.1-base", "options": ["--rm", "--ipc=host"],
                  "options_scripts": ["/shared/lsf/docker-options.sh"]},
    "exec_driver": {"user": "lsfadmin", "starter": "/opt/lsf/etc/docker-starter.py",
                    "controller": "/opt/lsf/etc/docker-control.py", "monitor": "/opt/lsf/etc/docker-monitor.py"},
    "parameters": {"RES_REQ": "select[docker]"},
}


def run(capsys, check=False, diff=False, **args):
    return run_module(lsf_application, capsys, check=check, diff=diff, **args)


@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "lsb.applications"
    shutil.copyfile(MIXED, path)
    return path


def test_check_mode_predicts_and_writes_nothing_then_real_run_matches(mixed, capsys):
    before = mixed.read_bytes()
    predicted = run(capsys, check=True, diff=True, path=str(mixed), **GPU_PROFILE)
    assert predicted["changed"] is True
    assert predicted["changed_profiles"] == ["gpu"]
    assert mixed.read_bytes() == before
    real = run(capsys, diff=True, path=str(mixed), **GPU_PROFILE)
    assert real["changed"] is True
    assert real["diff"]["after"] == predicted["diff"]["after"] == mixed.read_text()
    assert real["diff"]["before"] == before.decode()
    assert real["profiles"] == ["default", "dockerapp", "gpu"]
    again = run(capsys, path=str(mixed), **GPU_PROFILE)
    assert again["changed"] is False and again["changed_profiles"] == []


def test_backup_keeps_the_old_bytes(mixed, capsys):
    before = mixed.read_bytes()
    res = run(capsys, path=str(mixed), name="default", description="new text", backup=True)
    assert res["changed"] is True
    assert Path(res["backup_file"]).read_bytes() == before
    assert "DESCRIPTION  = new text   # shown by bapp\n" in mixed.read_text()


def test_profiles_list_and_absent_in_one_pass(mixed, capsys):
    res = run(capsys, path=str(mixed), profiles=[GPU_PROFILE, {"name": "default", "state": "absent"}])
    assert res["changed_profiles"] == ["gpu", "default"]
    assert res["profiles"] == ["dockerapp", "gpu"]
    res = run(capsys, path=str(mixed), profiles=[GPU_PROFILE, {"name": "default", "state": "absent"}])
    assert res["changed"] is False


def test_exclusive_reports_a_hand_added_key_as_drift_and_removes_it(mixed, capsys):
    run(capsys, path=str(mixed), **GPU_PROFILE)
    clean = mixed.read_text()
    # a key added by hand to the gpu profile, before its End line
    head, tail = clean.split("= gpu\n", 1)
    body, rest = tail.split("\nEnd Application\n", 1)
    mixed.write_text(head + "= gpu\n" + body + "\nMAX_JOBS = 4\nEnd Application\n" + rest)
    hand_edited = mixed.read_bytes()
    # without exclusive the hand-added key is left alone
    assert run(capsys, check=True, path=str(mixed), **GPU_PROFILE)["changed"] is False
    predicted = run(capsys, check=True, diff=True, path=str(mixed), exclusive=True, **GPU_PROFILE)
    assert mixed.read_bytes() == hand_edited
    assert predicted["changed_profiles"] == ["gpu"]
    assert predicted["diff"]["after"] == clean
    # the item's own exclusive in the profiles form does the same
    real = run(capsys, path=str(mixed), profiles=[dict(GPU_PROFILE, exclusive=True)])
    assert real["changed"] is True and mixed.read_text() == clean
    assert run(capsys, path=str(mixed), exclusive=True, **GPU_PROFILE)["changed"] is False


def test_opaque_container_warns_with_path_and_line(tmp_path, capsys):
    path = tmp_path / "lsb.applications"
    shutil.copyfile(POWERAI, path)
    res = run(capsys, path=str(path), name="powerai", parameters={"RES_REQ": "select[docker]"})
    assert res["changed"] is True
    # ansible-core 2.19 returns warnings as WarningSummary dicts, older ones as strings
    texts = [w["event"]["msg"] if isinstance(w, dict) else w for w in res["warnings"]]
    assert any(t.startswith("%s:2: CONTAINER of profile powerai" % path) for t in texts)
    assert path.read_text().splitlines()[1] == POWERAI.read_text().splitlines()[1]


def test_create_a_new_file_and_missing_file_without_create(tmp_path, capsys):
    path = tmp_path / "lsb.applications"
    res = run(capsys, path=str(path), name="absent_one", state="absent", create=True)
    assert res["changed"] is False and not path.exists()
    res = run(capsys, path=str(path), create=True, **GPU_PROFILE)
    assert res["changed"] is True
    assert path.read_text().startswith("Begin Application\nNAME        = gpu\n")
    res = run(capsys, path=str(tmp_path / "other"), name="x")
    assert res["failed"] is True and "file does not exist" in res["msg"]
    res = run(capsys, path=str(tmp_path / "other"), name="x", state="absent")
    assert res["changed"] is False and not (tmp_path / "other").exists()


def test_mode_of_the_file_is_kept(mixed, capsys):
    os.chmod(mixed, 0o640)
    run(capsys, path=str(mixed), name="default", description="z")
    assert oct(os.stat(mixed).st_mode & 0o777) == "0o640"


# Bad inputs: each fails with a message naming the problem (path:line for the
# file's own faults) and leaves the file byte-identical.
BAD_FILES = [
    ("Begin Application\nNAME = a\n", 1, "Begin Application has no End"),
    ("NAME = a\n", 1, "is outside any Begin/End section"),
    ("# c\n\nBegin Application\nNAME = a\nBegin Application\nNAME = b\nEnd Application\n", 5, "inside section"),
    ("Begin Application\nNAME = a\nEnd Application\nEnd Application\n", 4, "without a matching Begin"),
    ("Begin Application\nNAME a\nEnd Application\n", 2, "expected KEY = value"),
    ("Begin Application\n = a\nEnd Application\n", 2, "bad key"),
    ("Begin Application\nMY KEY = a\nEnd Application\n", 2, "bad key"),
    ("Begin Queue\nQUEUE_NAME = normal\nEnd Queue\n", 1, "does not belong in lsb.applications"),
    ("Begin\nNAME = a\nEnd Application\n", 1, "Begin without a section name"),
    ("Begin Application\nNAME = gpu\nEnd Application\nBegin Application\nNAME = gpu\nEnd Application\n", 4,
     "defined more than once"),
    ("Begin Application\nCONTAINER = docker[image(a) \\\n# cut\n options(--rm)]\nEnd Application\n", 4,
     "expected KEY = value"),
    ("Begin Application\nNAME = gpu\n#if time(8:00-18:00)\nRES_REQ = a\n#endif\nEnd Application\n", 4,
     "under #if"),
]


@pytest.mark.parametrize("text, line, fragment", BAD_FILES)
def test_malformed_file_fails_with_path_line_and_is_untouched(tmp_path, capsys, text, line, fragment):
    path = tmp_path / "lsb.applications"
    path.write_bytes(text.encode())
    res = run(capsys, path=str(path), **GPU_PROFILE)
    assert res["failed"] is True
    assert res["msg"].startswith("%s:%d: " % (path, line))
    assert fragment in res["msg"]
    assert path.read_bytes() == text.encode()


BAD_REQUESTS = [
    ({"name": "gpu", "description": "GPU # jobs"}, "contains '#'"),
    ({"name": "gpu", "container": {"image": "img", "options": ["--label=a#b"]}}, "contains '#'"),
    ({"name": "gpu", "container": {"image": "img", "options": ["--x=(a"]}}, "unbalanced"),
    ({"name": "gpu", "container": {"image": "img", "options": ["--x=]"]}}, "inside options"),
    ({"name": "gpu", "container": {"image": "a b"}}, "one name"),
    ({"name": "gpu", "exec_driver": {"user": "lsf admin"}}, "one word"),
    ({"name": "gpu", "exec_driver": {}}, "at least one"),
    ({"name": "gpu", "parameters": {"NAME": "x"}}, "parameters.NAME"),
    ({"name": "gpu", "parameters": {"RES-REQ": "x"}}, "not a valid"),
    ({"name": "gpu", "parameters": {"GPU_REQ": "num=1 \\"}}, "continuation"),
    ({"name": "two words"}, "one word"),
    ({"profiles": [{"name": "gpu", "container": {"img": "x"}}]}, "unknown container option"),
]


@pytest.mark.parametrize("args, fragment", BAD_REQUESTS)
def test_unwritable_request_fails_and_file_is_untouched(mixed, capsys, args, fragment):
    before = mixed.read_bytes()
    res = run(capsys, path=str(mixed), **args)
    assert res["failed"] is True
    assert fragment in res["msg"]
    assert mixed.read_bytes() == before


def test_name_and_profiles_are_mutually_exclusive(mixed, capsys):
    res = run(capsys, path=str(mixed), name="a", profiles=[{"name": "b"}])
    assert res["failed"] is True and "mutually exclusive" in res["msg"]


@pytest.mark.parametrize("args, message", [
    ({"name": "powerai", "description": "x\ny"}, "application powerai: DESCRIPTION: value 'x\\ny' contains a line break"),
    ({"name": "powerai", "parameters": {"End": "x"}}, "application powerai: parameter name 'End' would be read as"),
    ({"name": "powerai", "parameters": {"RES_REQ\n": "x"}}, "application powerai: parameter name 'RES_REQ\\n'"),
    ({"name": "powerai", "container": {"image": "img", "options": ["--volume=/my share:/my share"]}},
     "application powerai: CONTAINER: container option '--volume=/my share:/my share' has a blank"),
])
def test_line_breaking_request_fails_naming_path_profile_and_key(tmp_path, capsys, args, message):
    path = tmp_path / "lsb.applications"
    shutil.copyfile(POWERAI, path)
    before = path.read_bytes()
    for check in (True, False):
        res = run(capsys, check=check, path=str(path), **args)
        assert res["failed"] is True
        assert res["msg"].startswith("%s: %s" % (path, message)), res["msg"]
        assert path.read_bytes() == before


def test_warnings_say_what_happens_to_a_malformed_container(tmp_path, capsys):
    path = tmp_path / "lsb.applications"
    shutil.copyfile(POWERAI, path)
    res = run(capsys, path=str(path), name="powerai",
              container={"image": "img", "options": ["--rm", "--ulimit=memlock=819200000:819200000"]})
    assert res["changed"] is True
    texts = [w["event"]["msg"] if isinstance(w, dict) else w for w in res.get("warnings", [])]
    assert texts == ["%s:2: CONTAINER of profile powerai does not follow the CONTAINER grammar "
                     "(expected '(', found '=' (at character 56)); replaced by the value requested" % path]


def test_an_edit_that_would_not_parse_is_not_written_and_names_no_wrong_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "lsb.applications"
    shutil.copyfile(POWERAI, path)
    before = path.read_bytes()
    monkeypatch.setattr(lsf_application, "apply_profiles",
                        lambda text, requests: (text + "End Application\n", ["powerai"], []))
    res = run(capsys, path=str(path), name="powerai", description="x")
    assert res["failed"] is True
    assert res["msg"].startswith("%s: internal error, the edited text would not parse" % path), res["msg"]
    assert path.read_bytes() == before
