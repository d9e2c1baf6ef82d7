# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lsf_config_info on a copy of a real LSF 10.1 configuration tree (tests/fixtures/lsf10.1)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_layout as model
from ansible_collections.hpc.gpu_containers.plugins.modules import lsf_config_info
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

FIXTURE = Path(__file__).resolve().parents[3] / "fixtures" / "lsf10.1"


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """The fixture's LSF tree at tmp_path/lsf, its lsf.conf pointing at itself; an empty /etc/profile.d."""
    top = tmp_path / "lsf"
    shutil.copytree(FIXTURE, top)
    conf = top / "conf" / "lsf.conf"
    conf.write_text(conf.read_text().replace("/usr/share/lsf", str(top)))
    (tmp_path / "profile.d").mkdir()
    monkeypatch.setattr(lsf_config_info, "PROFILE_D", str(tmp_path / "profile.d"))
    monkeypatch.delenv("LSF_ENVDIR", raising=False)
    return top


def run(capsys, **args):
    return run_module(lsf_config_info, capsys, invocation=False, **args)


def test_the_layout_of_a_real_tree_from_lsf_top(tree, capsys):
    result = run(capsys, top=str(tree), hosts=["gpu01", "nosuchhost"])
    layout = result["layout"]
    conf = str(tree / "conf")
    assert layout["envdir"] == conf and layout["confdir"] == conf and layout["cluster"] == "gpucluster"
    assert layout["lsf_cluster"] == conf + "/lsf.cluster.gpucluster"
    assert layout["lsb_applications"] == conf + "/lsbatch/gpucluster/configdir/lsb.applications"
    assert result["changed"] is False and "nosuchhost" in result["missing_hosts"]


def test_profile_lsf_sourced_by_the_login_profile_is_found(tree, capsys, tmp_path):
    (tmp_path / "profile.d" / "lsf.sh").write_text(". '%s/conf/profile.lsf'\n" % tree)
    result = run(capsys, envdir_candidates=["/nonexistent"])
    assert result["layout"]["envdir"] == str(tree / "conf")


def test_a_login_script_that_sets_lsf_envdir_itself_is_found(tree, capsys, tmp_path):
    # As volclava's /etc/profile.d/volclava.sh does; a name or a variable is not a path and is left alone.
    (tmp_path / "profile.d" / "volclava.sh").write_text(
        "VOLCLAVA_TOP=/x\nLSF_ENVDIR=$VOLCLAVA_TOP/etc\nLSF_ENVDIR=%s/conf\nexport LSF_ENVDIR\n" % tree)
    (tmp_path / "profile.d" / "other.csh").write_text("setenv LSF_ENVDIR /nonexistent\n")
    result = run(capsys, envdir_candidates=["/nonexistent"])
    assert result["layout"]["envdir"] == str(tree / "conf")
    assert model.envdir_candidates("", "", "", "export LSF_ENVDIR='/a/etc'\n  LSF_ENVDIR=\"/b\"\n", []) == ["/a/etc", "/b"]


def test_no_lsf_conf_names_every_place_looked_at(tree, capsys):
    result = run(capsys, envdir="/nonexistent/conf")
    assert result["failed"] and result["msg"] == (
        "No lsf.conf found in /nonexistent/conf. Set lsf_docker_envdir (the LSF_ENVDIR directory) or "
        "lsf_docker_top (LSF_TOP).")


def test_two_cluster_files_are_told_apart_by_lsf_shared_or_refused(tree, capsys):
    shutil.copy(tree / "conf" / "lsf.cluster.gpucluster", tree / "conf" / "lsf.cluster.other")
    shutil.copy(tree / "conf" / "lsf.cluster.gpucluster", tree / "conf" / "lsf.cluster.gpucluster.bak")
    assert run(capsys, top=str(tree))["layout"]["cluster"] == "gpucluster"  # the one lsf.shared lists
    shared = tree / "conf" / "lsf.shared"
    shared.write_text(re.sub(r"(?m)^gpucluster\b.*$", "other", shared.read_text(), count=1))
    assert run(capsys, top=str(tree))["layout"]["cluster"] == "other"
    shared.write_text(shared.read_text().replace("\nother", "\nneither"))
    result = run(capsys, top=str(tree))
    assert result["failed"] and result["msg"] == (
        "Cannot tell which LSF cluster to configure (found none in %s). Set lsf_docker_cluster_name." % (tree / "conf"))
    assert run(capsys, top=str(tree), cluster_name="other")["layout"]["lsf_cluster"].endswith("lsf.cluster.other")


def test_live_configuration_is_refused(tree, capsys):
    live = tree / "work" / "live_confdir"
    (live / "lsbatch").mkdir(parents=True)
    (live / "lsbatch" / "lsb.queues").write_text("Begin Queue\nEnd Queue\n")
    conf = tree / "conf" / "lsf.conf"
    conf.write_text(conf.read_text() + "LSF_LIVE_CONFDIR=%s\n" % live)
    result = run(capsys, top=str(tree))
    assert result["failed"] and "LSF_LIVE_CONFDIR (%s) holds live configuration written by bconf" % live in result["msg"]


def test_serverdir_from_profile_lsf_or_required(tree, capsys):
    conf = tree / "conf" / "lsf.conf"
    conf.write_text(conf.read_text() + "LSF_SERVERDIR=/opt/lsf/etc\n")
    assert run(capsys, top=str(tree), require_serverdir=True)["layout"]["serverdir"] == "/opt/lsf/etc"
    assert run(capsys, top=str(tree), serverdir="/srv/etc")["layout"]["serverdir"] == "/srv/etc"


def test_a_malformed_cluster_file_names_file_and_line(tree, capsys):
    (tree / "conf" / "lsf.cluster.gpucluster").write_text("Begin Host\nHOSTNAME model\ngpu01 ! \"unclosed\nEnd Host\n")
    result = run(capsys, top=str(tree), hosts=["gpu01"])
    assert result["failed"] and result["msg"].startswith(str(tree / "conf" / "lsf.cluster.gpucluster") + ":")


def test_the_model_pieces():
    assert model.envdir_candidates("", "/env", "/top", ". /a/conf/profile.lsf; . '/b/profile.lsf'", ["/env", "/c"]) == [
        "/env", "/top/conf", "/a/conf", "/b", "/c"]
    assert model.envdir_candidates("/only", "/env", "/top", "", ["/c"]) == ["/only"]
    layout = model.layout("/e", {"LSF_CONFDIR": "/c"}, {"LSF_SERVERDIR": "/s"}, "cl")
    assert layout["lsb_applications"] == "/c/lsbatch/cl/configdir/lsb.applications" and layout["serverdir"] == "/s"


def test_the_lsb_files_of_the_openlava_lineage_are_in_lsb_confdir_itself(tmp_path, capsys, monkeypatch):
    # volclava's installed tree: lsf.conf, lsf.cluster.<name> and the lsb.* files side by side in etc/.
    etc = tmp_path / "volclava" / "etc"
    etc.mkdir(parents=True)
    (etc / "lsf.conf").write_text("LSF_ENVDIR=%s\nLSF_CONFDIR=%s\nLSB_CONFDIR=%s\nLSF_SERVERDIR=/s\n" % (etc, etc, etc))
    (etc / "lsf.cluster.volclava").write_text("Begin Host\nHOSTNAME model type server\nhead ! ! 1\nEnd Host\n")
    (etc / "lsb.queues").write_text("Begin Queue\nQUEUE_NAME = normal\nEnd Queue\n")
    monkeypatch.setattr(lsf_config_info, "PROFILE_D", str(tmp_path / "none"))
    layout = run(capsys, envdir=str(etc))["layout"]
    assert layout["lsb_configdir"] == str(etc) and layout["lsb_applications"] == str(etc / "lsb.applications")
    assert layout["lineage"] == "openlava"
    # Once LSF's <cluster>/configdir is there, it is the one.
    (etc / "volclava" / "configdir").mkdir(parents=True)
    layout = run(capsys, envdir=str(etc))["layout"]
    assert layout["lsb_configdir"] == str(etc / "volclava" / "configdir") and layout["lineage"] == "lsf"


def test_where_the_lsb_files_are():
    assert model.batch_configdir("/c/lsbatch", "cl", False, False) == "/c/lsbatch/cl/configdir"
    assert model.batch_configdir("/c/lsbatch", "cl", True, True) == "/c/lsbatch/cl/configdir"
    assert model.batch_configdir("/etc", "cl", False, True) == "/etc"
    assert model.layout("/e", {}, {}, "cl")["lsb_applications"] == "/e/lsbatch/cl/configdir/lsb.applications"
