# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-Python verdict (module_utils/_node_python.py) from probe lines as the pre-flight's raw command prints them.

tests/unit/test_node_python.py runs the whole pre-flight play against this host; these cover what one host cannot
show: other distributions, ansible-core 2.16's distribution map, versions compared as numbers.
"""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._node_python import candidates, verdict

# ansible-core 2.16's map, cut down to what the tests need.
DISTRO_MAP = {"redhat": {"6": "/usr/bin/python", "8": "/usr/libexec/platform-python", "9": "/usr/bin/python3"},
              "ubuntu": {"14": "/usr/bin/python", "16": "/usr/bin/python3"}}
FALLBACK = ["python3.12", "/usr/bin/python3"]


def probe(os_id, version_id, like="", pythons=()):
    return ["os\t%s\t%s\t%s" % (os_id, version_id, like)] + ["py\t%s\t%s" % (v, p) for p, v in pythons]


def test_candidates_keep_ansibles_order():
    assert candidates("auto", DISTRO_MAP, FALLBACK) == [
        "/usr/bin/python", "/usr/libexec/platform-python", "/usr/bin/python3", "python3.12", "/usr/bin/python3"]
    assert candidates("auto_silent", {}, FALLBACK) == FALLBACK
    assert candidates("/opt/py/bin/python3", DISTRO_MAP, FALLBACK) == ["/opt/py/bin/python3"]


def test_discovery_prefers_the_platform_python_of_the_map():
    # Rocky 8.10: the map's entry for major 8 wins over the first fallback that runs, and is too old.
    lines = probe("rocky", "8.10", "rhel centos fedora",
                  [("/usr/libexec/platform-python", "3.6.8"), ("python3.12", "3.12.1")])
    result = verdict(lines, "n1", "auto", "3.9", DISTRO_MAP, FALLBACK)
    assert (result["ok"], result["python"], result["version"]) == (False, "/usr/libexec/platform-python", "3.6.8")
    assert 'Run "dnf install python3.11" on it and set ansible_python_interpreter=/usr/bin/python3.11' in result["msg"]
    # Without a map (ansible-core 2.17+) the probe tries the fallback list, and the first that runs is used.
    lines = probe("rocky", "8.10", "rhel centos fedora", [("python3.12", "3.12.1"), ("/usr/bin/python3", "3.6.8")])
    result = verdict(lines, "n1", "auto", "3.9", {}, FALLBACK)
    assert (result["ok"], result["python"]) == (True, "python3.12")
    assert result["msg"] == "n1: python3.12, Python 3.12.1"


def test_the_nearest_major_below_is_used():
    # Ubuntu 22.04 has no entry of its own: 16's applies.
    lines = probe("ubuntu", "22.04", "debian", [("/usr/bin/python", "-"), ("/usr/bin/python3", "3.10.12")])
    result = verdict(lines, "u1", "auto", "3.9", DISTRO_MAP, FALLBACK)
    assert (result["ok"], result["python"], result["version"]) == (True, "/usr/bin/python3", "3.10.12")


def test_versions_compare_as_numbers():
    lines = probe("debian", "12", "", [("/usr/bin/python3", "3.10.0")])
    assert verdict(lines, "d1", "/usr/bin/python3", "3.9")["ok"]
    assert not verdict(lines, "d1", "/usr/bin/python3", "3.11")["ok"]


@pytest.mark.parametrize("os_id, version_id, like, fix", [
    ("centos", "7", "rhel fedora", "centos 7 (EL 7) is not supported: its newest Python is 3.6"),
    ("rocky", "9.5", "rhel centos fedora", 'Run "dnf install python3" on it, or set ansible_python_interpreter'),
    ("debian", "12", "", 'Run "apt-get install python3" on it, or set ansible_python_interpreter'),
    ("linuxmint", "21", "ubuntu debian", 'Run "apt-get install python3" on it'),
    ("sles", "15.5", "suse", "Install Python 3.9 or newer on it and set ansible_python_interpreter to it."),
])
def test_the_fix_fits_the_os(os_id, version_id, like, fix):
    lines = probe(os_id, version_id, like, [("/usr/bin/python3", "3.6.15")])
    result = verdict(lines, "h", "/usr/bin/python3", "3.9")
    assert not result["ok"]
    assert result["msg"].startswith("h: Ansible would run the collection's modules with /usr/bin/python3, Python "
                                    "3.6.15; they need Python 3.9 or newer. ")
    assert fix in result["msg"]
    assert result["msg"].endswith("(Skip this check with --skip-tags node_python.)")


def test_no_python_names_what_was_tried():
    lines = probe("debian", "12", "", [("python3.12", "-"), ("/usr/bin/python3", "-")])
    result = verdict(lines, "d1", "auto", "3.9", {}, FALLBACK)
    assert (result["ok"], result["python"], result["version"]) == (False, "", "-")
    assert "interpreter discovery finds none of python3.12, /usr/bin/python3" in result["msg"]
    result = verdict(probe("debian", "12", "", [("/opt/py", "-")]), "d1", "/opt/py", "3.9")
    assert "ansible_python_interpreter /opt/py does not run there" in result["msg"]


def test_a_probe_without_os_release_still_answers():
    result = verdict(["py\t3.11.2\t/usr/bin/python3"], "x", "/usr/bin/python3", "3.9")
    assert result["ok"] and result["python"] == "/usr/bin/python3"
