# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The /dev/char links of NVIDIA's nodes, on real character device nodes (mknod as root) in a
directory that stands in for /dev: the numbers are those of an H100 node (nvidia0 195:0, nvidiactl
195:255, nvidia-uvm 238:0 and 238:1, nvidia-caps 241:1 and 241:2), and the recordings of the model
run on real GPU nodes (tests/fixtures/dev_char/) replayed."""

import json
import os
import stat
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._dev_char import (
    DevCharError,
    apply,
    nvidia_nodes,
    plan,
)

H100 = {"nvidia0": (195, 0), "nvidiactl": (195, 255), "nvidia-uvm": (238, 0), "nvidia-uvm-tools": (238, 1),
        "nvidia-caps/nvidia-cap1": (241, 1), "nvidia-caps/nvidia-cap2": (241, 2)}


def _mknod(root, rel, major, minor):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(major, minor))


@pytest.fixture
def dev(tmp_path):
    root = tmp_path / "dev"
    root.mkdir()
    try:
        for rel, (major, minor) in H100.items():
            _mknod(root, rel, major, minor)
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    # Not NVIDIA's, or not a device: never linked.
    (root / "nvidia-notes").write_text("x")
    _mknod(root, "null", 1, 3)
    _mknod(root, "nvidia-caps/other", 241, 9)
    return root


def _resolved(link):
    st = os.stat(link)
    return stat.S_ISCHR(st.st_mode), os.major(st.st_rdev), os.minor(st.st_rdev)


def test_every_nvidia_node_is_found_and_nothing_else(dev):
    assert sorted(nvidia_nodes(str(dev))) == sorted((rel, *numbers) for rel, numbers in H100.items())


def test_each_node_gets_a_relative_link_that_resolves_to_its_numbers(dev):
    links = plan(str(dev))
    assert {link["action"] for link in links} == {"create"}
    apply(str(dev), links)
    for rel, (major, minor) in H100.items():
        link = dev / "char" / ("%d:%d" % (major, minor))
        assert os.readlink(link) == "../" + rel
        assert _resolved(link) == (True, major, minor)
    assert sorted(os.listdir(dev / "char")) == sorted("%d:%d" % numbers for numbers in H100.values())
    # A second plan has nothing to do.
    assert {link["action"] for link in plan(str(dev))} == {"ok"}


def test_a_link_that_resolves_right_is_kept_a_wrong_or_dangling_one_replaced(dev):
    (dev / "char").mkdir()
    os.symlink(str(dev / "nvidia0"), dev / "char" / "195:0")     # absolute, but right: kept as it is
    os.symlink("../nvidiactl", dev / "char" / "238:0")           # the wrong node
    os.symlink("../gone", dev / "char" / "238:1")                # dangling
    actions = {link["device"]: link["action"] for link in plan(str(dev))}
    assert actions["195:0"] == "ok" and actions["238:0"] == "replace" and actions["238:1"] == "replace"
    apply(str(dev), plan(str(dev)))
    assert os.readlink(dev / "char" / "195:0") == str(dev / "nvidia0")
    assert os.readlink(dev / "char" / "238:0") == "../nvidia-uvm"
    assert _resolved(dev / "char" / "238:1") == (True, 238, 1)
    assert not [name for name in os.listdir(dev / "char") if name.startswith(".")]


def test_something_that_is_not_a_link_fails_before_anything_changes(dev):
    (dev / "char").mkdir()
    (dev / "char" / "195:255").write_text("a site's own file")
    with pytest.raises(DevCharError) as raised:
        plan(str(dev))
    assert str(dev / "char" / "195:255") in str(raised.value)
    assert "not a symlink" in str(raised.value)
    assert os.listdir(dev / "char") == ["195:255"]


def test_a_node_without_nvidia_devices_needs_no_link(tmp_path):
    assert plan(str(tmp_path)) == []
    apply(str(tmp_path), [])
    assert not (tmp_path / "char").exists()


def test_nodes_sharing_numbers_get_one_link_the_first_ones(dev):
    _mknod(dev, "nvidia1", 195, 0)  # the test bed's stand-in nodes all share /dev/null's numbers
    links = plan(str(dev))
    assert [link["target"] for link in links if link["device"] == "195:0"] == ["../nvidia0"]


RECORDINGS = sorted((Path(__file__).resolve().parents[3] / "fixtures" / "dev_char").glob("*.json"))


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda path: path.stem)
def test_a_real_nodes_dev_gives_the_links_recorded_there(recording, tmp_path):
    """The model's answer on a real GPU node (the recording) equals its answer on a stand-in /dev made
    with the same names and numbers; and on the real node every link opened its device."""
    rec = json.loads(recording.read_text())
    assert rec["nodes"], "the recording found no NVIDIA node"
    assert set(rec["open_through_link"].values()) == {"opened"}
    assert {link["action"] for link in rec["plan_after"]} == {"ok"}
    root = tmp_path / "dev"
    root.mkdir()
    try:
        for rel, major, minor in rec["nodes"]:
            _mknod(root, rel, major, minor)
    except PermissionError:
        pytest.skip("mknod needs root (CAP_MKNOD)")
    assert sorted(map(list, nvidia_nodes(str(root)))) == sorted(rec["nodes"])

    def local(links):
        return sorted((link["path"].replace("/dev/", str(root) + "/", 1), link["target"], link["device"],
                       link["action"]) for link in links)

    links = plan(str(root))
    assert local(rec["plan_before"]) == sorted((link["path"], link["target"], link["device"], link["action"])
                                               for link in links)
    apply(str(root), links)
    assert local(rec["plan_after"]) == sorted((link["path"], link["target"], link["device"], link["action"])
                                              for link in plan(str(root)))
