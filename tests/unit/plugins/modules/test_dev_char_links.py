# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dev_char_links through AnsibleModule, on real device nodes (mknod as root) under a stand-in /dev."""

import os
import stat

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import dev_char_links
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module


def run(capsys, **args):
    result = run_module(dev_char_links, capsys, with_rc=True, **args)
    return result.pop("_rc"), result


@pytest.fixture
def dev(tmp_path):
    root = tmp_path / "dev"
    root.mkdir()
    try:
        os.mknod(root / "nvidia0", 0o666 | stat.S_IFCHR, os.makedev(195, 0))
        os.mknod(root / "nvidia1", 0o666 | stat.S_IFCHR, os.makedev(195, 1))
        os.mknod(root / "nvidiactl", 0o666 | stat.S_IFCHR, os.makedev(195, 255))
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    return root


def test_check_mode_predicts_then_the_run_links_then_a_rerun_changes_nothing(capsys, dev):
    rc, res = run(capsys, dev_root=str(dev), _ansible_check_mode=True)
    assert rc == 0 and res["changed"] is True
    assert [link["action"] for link in res["links"]] == ["create"] * 3
    assert not (dev / "char").exists()
    rc, res = run(capsys, dev_root=str(dev))
    assert rc == 0 and res["changed"] is True
    assert os.readlink(dev / "char" / "195:1") == "../nvidia1"
    rc, res = run(capsys, dev_root=str(dev))
    assert rc == 0 and res["changed"] is False
    assert {link["action"] for link in res["links"]} == {"ok"}


def test_a_file_in_the_way_fails_naming_it(capsys, dev):
    (dev / "char").mkdir()
    (dev / "char" / "195:0").write_text("x")
    rc, res = run(capsys, dev_root=str(dev))
    assert rc == 1 and res["failed"] is True
    assert str(dev / "char" / "195:0") in res["msg"] and "not a symlink" in res["msg"]
    assert sorted(os.listdir(dev / "char")) == ["195:0"]
