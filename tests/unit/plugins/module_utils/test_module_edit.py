# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_edit: the file-edit transaction seen through a real AnsibleModule."""

import json
import os

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.hpc.gpu_containers.plugins.module_utils._file_edit import FileEditError
from ansible_collections.hpc.gpu_containers.plugins.module_utils._module_edit import exit_edit, input_errors, run_edit

ORIGINAL = "LSF_LOGDIR=/var/log/lsf\n"


@pytest.fixture
def make_module():
    """Build an AnsibleModule from args; exit_json/fail_json must run while the
    args are patched in (ansible-core 2.19 reads the output profile from them)."""
    patches = []

    def build(args):
        patch = patch_module_args(args)
        patch.__enter__()
        patches.append(patch)
        return AnsibleModule(
            argument_spec={"path": {"type": "path", "required": True}, "backup": {"type": "bool", "default": False}},
            supports_check_mode=True,
        )

    yield build
    for patch in reversed(patches):
        patch.__exit__(None, None, None)


def _exit(module, result, capsys):
    with pytest.raises(SystemExit) as exc:
        module.exit_json(**result)
    assert exc.value.code == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / "lsf.conf"
    path.write_text(ORIGINAL)
    return path


def _add(text):
    return text + "LSF_PROCESS_TRACKING=Y\n"


def test_check_mode_and_diff(conf, capsys, make_module):
    module = make_module({"path": str(conf), "_ansible_check_mode": True, "_ansible_diff": True})
    result = run_edit(module, str(conf), _add)

    assert result["changed"] is True
    assert result["diff"]["before"] == ORIGINAL
    assert result["diff"]["after"] == ORIGINAL + "LSF_PROCESS_TRACKING=Y\n"
    assert "backup_file" not in result
    assert conf.read_text() == ORIGINAL
    assert _exit(module, result, capsys)["changed"] is True


def test_no_diff_key_without_diff_mode(conf, make_module):
    module = make_module({"path": str(conf)})
    result = run_edit(module, str(conf), _add)
    assert result == {"changed": True}
    assert conf.read_text() == ORIGINAL + "LSF_PROCESS_TRACKING=Y\n"


def test_backup_option_is_honoured(conf, make_module):
    module = make_module({"path": str(conf), "backup": True})
    result = run_edit(module, str(conf), _add)
    assert os.path.dirname(result["backup_file"]) == str(conf.parent)
    with open(result["backup_file"]) as handle:
        assert handle.read() == ORIGINAL


def test_model_warnings_reach_the_module_result(conf, capsys, make_module):
    module = make_module({"path": str(conf)})
    result = run_edit(module, str(conf), lambda text: (text, ["LSF_LOGDIR is defined 2 times; the last one wins"]))
    assert result == {"changed": False}
    out = _exit(module, result, capsys)
    # 2.19 writes structured warnings ({"event": {"msg": ...}}) under the module profile.
    messages = [w["event"]["msg"] if isinstance(w, dict) else w for w in out["warnings"]]
    assert messages == ["LSF_LOGDIR is defined 2 times; the last one wins"]


def test_file_edit_error_becomes_fail_json_with_location(conf, capsys, make_module):
    module = make_module({"path": str(conf)})

    def compute(text):
        raise FileEditError("unterminated Begin Resource section", path=str(conf), line=7)

    with pytest.raises(SystemExit) as exc:
        run_edit(module, str(conf), compute)
    assert exc.value.code == 1
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] is True
    assert out["msg"] == "%s:7: unterminated Begin Resource section" % conf
    assert out["path"] == str(conf)
    assert conf.read_text() == ORIGINAL


def test_create_passes_through(tmp_path, make_module):
    path = tmp_path / "daemon.json"
    module = make_module({"path": str(path)})
    result = run_edit(module, str(path), lambda text: "{}\n", create=True, new_mode=0o600)
    assert result["changed"] is True
    assert path.read_text() == "{}\n"
    assert os.stat(path).st_mode & 0o777 == 0o600


def _failed(capsys, call):
    with pytest.raises(SystemExit) as exc:
        call()
    assert exc.value.code == 1
    out = json.loads(capsys.readouterr().out)
    assert out["failed"] is True
    return out


def _bad_input(module, path):
    with input_errors(module, path):
        raise ValueError("settings: LSF_LOGDIR must be a path")


def test_input_errors_fail_the_module_with_the_path_before_the_file_is_read(conf, capsys, make_module):
    module = make_module({"path": str(conf)})
    out = _failed(capsys, lambda: _bad_input(module, str(conf)))
    assert out["msg"] == "%s: settings: LSF_LOGDIR must be a path" % conf and out["path"] == str(conf)
    with input_errors(module, str(conf)):
        checked = True
    assert checked


def test_exit_edit_returns_the_edit_and_what_compute_recorded(tmp_path, capsys, make_module):
    path = tmp_path / "lsf.conf"
    module = make_module({"path": str(path), "backup": True})
    outcome = {}

    def compute(text):
        outcome["changed_keys"] = ["LSF_PROCESS_TRACKING"]
        return _add(text or ""), []

    with pytest.raises(SystemExit) as exc:
        exit_edit(module, str(path), compute, outcome, create=True, new_mode=0o600)
    assert exc.value.code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["changed"] is True and out["changed_keys"] == ["LSF_PROCESS_TRACKING"]
    assert path.read_text() == "LSF_PROCESS_TRACKING=Y\n" and os.stat(path).st_mode & 0o777 == 0o600


def test_fifo_fails_the_module_without_blocking(tmp_path, capsys, make_module):
    path = tmp_path / "lsf.conf"
    os.mkfifo(path)
    module = make_module({"path": str(path)})
    out = _failed(capsys, lambda: run_edit(module, str(path), _add))
    assert out["msg"] == "%s: not a regular file (FIFO)" % path


def test_lock_timeout_passes_through_and_fails_the_module(conf, capsys, make_module):
    import fcntl
    holder = os.open(conf, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        module = make_module({"path": str(conf)})
        out = _failed(capsys, lambda: run_edit(module, str(conf), _add, lock_timeout=0.1))
    finally:
        os.close(holder)
    assert out["msg"] == "%s: another process holds the lock on this file; gave up after 0.1 s" % conf
    assert conf.read_text() == ORIGINAL


def test_read_only_directory_fails_the_module_with_the_reason(conf, capsys, make_module, monkeypatch):
    from ansible_collections.hpc.gpu_containers.plugins.module_utils import _file_edit

    def read_only(*args, **kwargs):
        raise OSError(30, os.strerror(30))
    monkeypatch.setattr(_file_edit.tempfile, "mkstemp", read_only)
    module = make_module({"path": str(conf)})
    out = _failed(capsys, lambda: run_edit(module, str(conf), _add))
    assert out["msg"] == "%s: cannot write temporary file in %s: Read-only file system" % (conf, conf.parent)
    assert conf.read_text() == ORIGINAL
