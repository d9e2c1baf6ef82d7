# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""package_info through AnsibleModule: the real dpkg-query where there is one, a missing database."""

import shutil

import pytest

from ansible_collections.hpc.gpu_containers.plugins.modules import package_info
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module


def run(capsys, **args):
    result = run_module(package_info, capsys, with_rc=True, **args)
    return result.pop("_rc"), result


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="needs a Debian-family system's dpkg-query")
def test_the_real_dpkg_database(capsys):
    rc, res = run(capsys, names=["dpkg", "hpc-gpu-containers-no-such-package"], version="0.0.1",
                  versioned=["dpkg"], absent=["bash"], _ansible_check_mode=True)
    assert rc == 0 and res["changed"] is False and res["manager"] == "dpkg"
    assert res["missing"] == ["hpc-gpu-containers-no-such-package"]
    assert res["off_pin"] == ["dpkg"] and res["unwanted"] == ["bash"]
    assert res["install_needed"] is True
    assert res["specs"] == ["dpkg=0.0.1*", "hpc-gpu-containers-no-such-package"]
    assert res["installed"]["dpkg"] and res["installed"]["hpc-gpu-containers-no-such-package"] is None
    rc, res = run(capsys, names=["dpkg"], version=res["installed"]["dpkg"])
    assert res["install_needed"] is False and res["off_pin"] == []


def test_no_package_database_fails_clearly(capsys, monkeypatch):
    monkeypatch.setattr(package_info.shutil, "which", lambda name: None)
    rc, res = run(capsys, names=["docker-ce"])
    assert rc == 1 and res["failed"] is True
    assert "neither dpkg-query nor rpm" in res["msg"]


def test_versioned_must_be_among_names(capsys):
    rc, res = run(capsys, names=["a"], version="1", versioned=["b"])
    assert rc == 1 and "versioned names that are not among the names: b" in res["msg"]
