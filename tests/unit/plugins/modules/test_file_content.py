# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""file_content through AnsibleModule: several files in one run, missing directories, modes, check mode
that predicts exactly, diff, backup, a rerun that changes nothing, bad input, documentation = argument_spec."""

import os

import pytest
import yaml

from ansible_collections.hpc.gpu_containers.plugins.doc_fragments.file_edit import ModuleDocFragment as FileEditFragment
from ansible_collections.hpc.gpu_containers.plugins.modules import file_content
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

STARTER = "#!/usr/bin/python -I\nprint('starter')\n"


def run(capsys, **args):
    return run_module(file_content, capsys, **args)


def mode(path):
    return os.stat(path).st_mode & 0o7777


def test_files_and_their_missing_directory_are_made_in_one_run_then_left_alone(capsys, tmp_path):
    starter, spec = tmp_path / "conf" / "docker" / "starter.py", tmp_path / "cdi" / "nvidia.yaml"
    files = [{"path": str(starter), "content": STARTER, "mode": "0755"}, {"path": str(spec), "content": "a: 1\n"}]
    checked = run(capsys, files=files, _ansible_check_mode=True, _ansible_diff=True)
    assert checked["changed"] is True and checked["changed_files"] == [str(starter), str(spec)]
    assert [d["after"] for d in checked["diff"]] == [STARTER, "a: 1\n"]
    assert not (tmp_path / "conf").exists() and not (tmp_path / "cdi").exists()
    first = run(capsys, files=files)
    assert first["changed"] is True and first["changed_files"] == [str(starter), str(spec)]
    assert starter.read_text() == STARTER and mode(starter) == 0o755
    assert spec.read_text() == "a: 1\n" and mode(spec) == 0o644
    assert mode(starter.parent) == 0o755 and mode(spec.parent) == 0o755
    again = run(capsys, files=files, _ansible_check_mode=True)
    assert again["changed"] is False and again["changed_files"] == []
    assert run(capsys, files=files)["changed"] is False


def test_only_the_file_that_differs_is_rewritten_with_a_diff_and_a_backup(capsys, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.write_text("old\n")
    two.write_text("same\n")
    two.chmod(0o644)
    res = run(capsys, files=[{"path": str(one), "content": "new\n"}, {"path": str(two), "content": "same\n"}],
              backup=True, _ansible_diff=True)
    assert res["changed_files"] == [str(one)] and list(res["backup_file"]) == [str(one)]
    assert open(res["backup_file"][str(one)]).read() == "old\n" and one.read_text() == "new\n"
    (diff,) = [d for d in res["diff"] if d["before"] != d["after"]]
    assert diff["before"] == "old\n" and diff["after"] == "new\n"


def test_a_mode_changed_by_hand_is_set_back_and_check_mode_says_so_first(capsys, tmp_path):
    starter = tmp_path / "starter.py"
    files = [{"path": str(starter), "content": STARTER, "mode": "0755"}]
    run(capsys, files=files)
    starter.chmod(0o700)
    checked = run(capsys, files=files, _ansible_check_mode=True)
    assert checked["changed"] is True and checked["changed_files"] == [str(starter)] and mode(starter) == 0o700
    fixed = run(capsys, files=files)
    assert fixed["changed"] is True and mode(starter) == 0o755 and starter.read_text() == STARTER


@pytest.mark.parametrize("files, message", [
    ([{"path": "/x", "content": "", "mode": 493}], 'files[0].mode must be an octal string such as "0755"'),
    ([{"path": "/x", "content": "", "mode": "rwx"}], "files[0].mode must be an octal string"),
    ([{"path": "/x", "content": "a"}, {"path": "/x", "content": "b"}], "files[1].path: /x is given more than once"),
])
def test_bad_input_fails_with_a_clear_message_and_writes_nothing(capsys, tmp_path, files, message):
    files = [dict(f, path=str(tmp_path / f["path"].lstrip("/"))) for f in files]
    res = run(capsys, files=files)
    assert res["failed"] is True and message.replace("/x", str(tmp_path / "x")) in res["msg"]
    assert not (tmp_path / "x").exists()


def test_a_directory_in_the_way_fails_naming_the_path(capsys, tmp_path):
    (tmp_path / "spec").mkdir()
    res = run(capsys, files=[{"path": str(tmp_path / "spec"), "content": "a\n"}])
    assert res["failed"] is True and str(tmp_path / "spec") in res["msg"]


def test_documentation_matches_the_argument_spec(monkeypatch):
    captured = {}

    class Recorder:
        def __init__(self, argument_spec, supports_check_mode=False, **kwargs):
            captured.update(spec=argument_spec, check_mode=supports_check_mode)
            raise SystemExit(0)

    monkeypatch.setattr(file_content, "AnsibleModule", Recorder)
    with pytest.raises(SystemExit):
        file_content.main()
    doc = yaml.safe_load(file_content.DOCUMENTATION)
    assert doc["extends_documentation_fragment"] == ["hpc.gpu_containers.file_edit"]
    options = dict(yaml.safe_load(FileEditFragment.DOCUMENTATION)["options"], **doc["options"])
    assert set(options) == set(captured["spec"])
    for name, spec in captured["spec"].items():
        assert options[name]["type"] == spec["type"], name
        assert options[name].get("default") == spec.get("default"), name
    sub = captured["spec"]["files"]["options"]
    assert set(doc["options"]["files"]["suboptions"]) == set(sub)
    for name, spec in sub.items():
        assert doc["options"]["files"]["suboptions"][name]["type"] == spec["type"], name
        assert doc["options"]["files"]["suboptions"][name].get("default") == spec.get("default"), name
    assert captured["check_mode"] is True and doc["version_added"] == "0.2.0"
    assert set(yaml.safe_load(file_content.RETURN)) == {"changed_files", "backup_file"}
    yaml.safe_load(file_content.EXAMPLES)
