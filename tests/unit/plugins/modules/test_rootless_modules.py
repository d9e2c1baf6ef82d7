# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containers_conf and subid_ranges through AnsibleModule; the podman LSF profile through lsf_application."""

import re
import tomllib
from pathlib import Path

from ansible_collections.hpc.gpu_containers.plugins.modules import containers_conf, lsf_application, subid_ranges
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "lsb_applications"


def test_containers_conf_check_mode_then_real_then_idempotent(tmp_path, capsys):
    path = tmp_path / "storage.conf"
    path.write_text('[storage]\ndriver = "vfs"\n')
    args = dict(path=str(path), settings={"storage": {"driver": "overlay"},
                                          "storage.options.overlay": {"mount_program": "/usr/bin/fuse-overlayfs"}})
    predicted = run_module(containers_conf, capsys, check=True, diff=True, **args)
    assert predicted["changed"] and path.read_text() == '[storage]\ndriver = "vfs"\n'
    real = run_module(containers_conf, capsys, diff=True, **args)
    assert real["diff"]["after"] == predicted["diff"]["after"] == path.read_text()
    assert tomllib.loads(path.read_text())["storage"]["driver"] == "overlay"
    again = run_module(containers_conf, capsys, **args)
    assert again["changed"] is False and again["changed_keys"] == []


def test_containers_conf_registries_left_out_suboption_is_kept(tmp_path, capsys):
    path = tmp_path / "registries.conf"
    path.write_text('[[registry]]\nlocation = "head:5000"\nblocked = true\n')
    run_module(containers_conf, capsys, path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    assert tomllib.loads(path.read_text())["registry"] == [{"location": "head:5000", "blocked": True, "insecure": True}]


def test_containers_conf_bad_file_fails_with_path_and_line(tmp_path, capsys):
    path = tmp_path / "containers.conf"
    path.write_text('[engine]\nevents_logger = "file\n')
    before = path.read_bytes()
    result = run_module(containers_conf, capsys, path=str(path), settings={"engine": {"events_logger": "file"}})
    assert result["failed"] and result["msg"].startswith("%s:2:" % path)
    assert path.read_bytes() == before


def test_containers_conf_refuses_a_file_pasted_twice_with_line_and_column(tmp_path, capsys):
    path = tmp_path / "storage.conf"
    path.write_text('[storage]\ndriver = "overlay"\n[storage]\ndriver = "overlay"\n')
    before = path.read_bytes()
    result = run_module(containers_conf, capsys, path=str(path), settings={"storage": {"driver": "overlay"}})
    assert result["failed"] and re.match(re.escape(str(path)) + r":3:\d+: not TOML: ", result["msg"])
    assert path.read_bytes() == before


V1_REGISTRIES = "[registries.search]\nregistries = ['docker.io']\n\n[registries.insecure]\nregistries = []\n"


def test_containers_conf_keeps_a_v1_registries_conf_in_v1(tmp_path, capsys):
    path = tmp_path / "registries.conf"
    path.write_text(V1_REGISTRIES)
    result = run_module(containers_conf, capsys, path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    doc = tomllib.loads(path.read_text())
    assert result["changed"] and result["registries_syntax"] == "v1"
    assert "registry" not in doc and doc["registries"]["insecure"]["registries"] == ["head:5000"]
    converted = run_module(containers_conf, capsys, path=str(path), registries_syntax="v2",
                           registries=[{"location": "head:5000", "insecure": True}])
    doc = tomllib.loads(path.read_text())
    assert converted["registries_syntax"] == "v2" and "registries" not in doc
    assert doc == {"unqualified-search-registries": ["docker.io"], "registry": [{"location": "head:5000", "insecure": True}]}


def test_containers_conf_refuses_a_v1_drop_in(tmp_path, capsys):
    path = tmp_path / "registries.conf.d" / "50-site.conf"
    path.parent.mkdir()
    path.write_text(V1_REGISTRIES)
    result = run_module(containers_conf, capsys, path=str(path), registries=[{"location": "head:5000", "insecure": True}])
    assert result["failed"] and "registries_syntax" in result["msg"] and path.read_text() == V1_REGISTRIES


def test_containers_conf_defaults_keep_a_site_driver(tmp_path, capsys):
    path = tmp_path / "storage.conf"
    path.write_text('[storage]\ndriver = "btrfs"\n')
    args = dict(path=str(path), defaults={"storage": {"driver": "overlay"}},
                replace_site_values={"storage": {"driver": ["vfs", ""]}})
    result = run_module(containers_conf, capsys, **args)
    assert result["changed"] is False and result["kept_keys"] == ["storage.driver"]
    path.write_text('[storage]\ndriver = "vfs"\n')
    assert run_module(containers_conf, capsys, **args)["changed_keys"] == ["storage.driver"]
    assert tomllib.loads(path.read_text())["storage"]["driver"] == "overlay"


def test_subid_ranges_creates_and_reports(tmp_path, capsys):
    path = tmp_path / "subuid"
    result = run_module(subid_ranges, capsys, path=str(path), users=["alice"])
    assert result["changed"] and result["ranges"] == {"alice": {"start": 131072, "count": 65536}}
    assert path.read_text() == "alice:131072:65536\n"
    assert run_module(subid_ranges, capsys, path=str(path), users=["alice"])["changed"] is False


def test_podman_profile_renders_and_round_trips(tmp_path, capsys):
    """LSF's podman driver reads CONTAINER=podman[image(..) options(..)] like the Docker one."""
    path = tmp_path / "lsb.applications"
    path.write_bytes((FIXTURES / "constructed__mixed.lsb.applications").read_bytes())
    profile = dict(name="gpu_podman", description="GPU jobs in rootless podman",
                   container={"runtime": "podman", "image": "head:5000/hpc/verify:1",
                              "options": ["--rm", "--userns=keep-id", "--device=nvidia.com/gpu=all"]},
                   exec_driver={"starter": "/opt/lsf/etc/podman-starter.py",
                                "controller": "/opt/lsf/etc/podman-control.py",
                                "monitor": "/opt/lsf/etc/podman-monitor.py"})
    first = run_module(lsf_application, capsys, path=str(path), **profile)
    assert first["changed"] and first["changed_profiles"] == ["gpu_podman"]
    # Long values are continued with a backslash, as LSF allows: compare the joined value.
    joined = " ".join(path.read_text().replace("\\\n", " ").split())
    assert ("CONTAINER = podman[image(head:5000/hpc/verify:1) "
            "options(--rm --userns=keep-id --device=nvidia.com/gpu=all)]") in joined
    assert run_module(lsf_application, capsys, path=str(path), **profile)["changed"] is False


def test_singularity_profile_renders_as_a_profile_type_only(tmp_path, capsys):
    """Apptainer/Singularity: not installable from the distributions here, so only the profile is tested."""
    path = tmp_path / "lsb.applications"
    path.write_bytes((FIXTURES / "constructed__mixed.lsb.applications").read_bytes())
    profile = dict(name="gpu_sif", container={"runtime": "singularity", "image": "/shared/images/verify.sif",
                                              "options": ["--nv"]})
    assert run_module(lsf_application, capsys, path=str(path), **profile)["changed"] is True
    joined = " ".join(path.read_text().replace("\\\n", " ").split())
    assert "CONTAINER = singularity[image(/shared/images/verify.sif) options(--nv)]" in joined
    assert run_module(lsf_application, capsys, path=str(path), **profile)["changed"] is False
