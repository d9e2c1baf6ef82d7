# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_packages: the package database query and what an install at a pin would change."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _packages as pk

# dpkg-query -W -f '${Package}\t${Version}\t${db:Status-Status}\n' as Debian 12 prints it: a removed package
# whose configuration files stay is "config-files"; a package it does not know is named on stderr (rc 1).
DPKG_OUT = ("docker-ce\t5:24.0.7-1~debian.12~bookworm\tinstalled\n"
            "docker-ce-cli\t5:25.0.3-1~debian.12~bookworm\tinstalled\n"
            "runc\t1.1.5+ds1-1+deb12u1\tconfig-files\n"
            "nvidia-container-toolkit\t1.17.9-1\tinstalled\n"
            "nvidia-container-toolkit-base\t1.17.90-1\tinstalled\n")
# rpm -q --qf '%{NAME}\t%{EPOCH}:%{VERSION}-%{RELEASE}.%{ARCH}\tinstalled\n': "(none)" for no epoch, and a line
# on stdout for a package that is not installed.
RPM_OUT = ("docker-ce\t3:24.0.7-1.el8.x86_64\tinstalled\n"
           "package podman-docker is not installed\n"
           "nvidia-container-toolkit\t(none):1.17.9-1.x86_64\tinstalled\n")


def database(output, manager="dpkg-query"):
    """The installed packages of a recorded query, every package it names asked for."""
    names = [line.split("\t")[0] for line in output.splitlines() if "\t" in line] + ["podman-docker"]
    return pk.query(names, runner({manager: (0, output, "")}))[1]


def runner(answers, calls=None):
    def run(argv):
        if calls is not None:
            calls.append(argv)
        return answers.get(argv[0], (None, "", ""))
    return run


def test_dpkg_query_once_installed_only():
    calls = []
    manager, installed = pk.query(["docker-ce", "docker-ce-cli", "runc", "containerd.io"],
                                  runner({"dpkg-query": (1, DPKG_OUT, "dpkg-query: no packages found matching containerd.io\n")}, calls))
    assert manager == "dpkg" and len(calls) == 1
    assert calls[0][-4:] == ["docker-ce", "docker-ce-cli", "runc", "containerd.io"]
    assert installed == {"docker-ce": "5:24.0.7-1~debian.12~bookworm", "docker-ce-cli": "5:25.0.3-1~debian.12~bookworm"}


def test_rpm_when_there_is_no_dpkg():
    manager, installed = pk.query(["docker-ce", "podman-docker", "nvidia-container-toolkit"], runner({"rpm": (1, RPM_OUT, "")}))
    assert manager == "rpm"
    assert installed == {"docker-ce": "3:24.0.7-1.el8.x86_64", "nvidia-container-toolkit": "(none):1.17.9-1.x86_64"}
    assert pk.comparable_version("rpm", installed["docker-ce"]) == "24.0.7"
    assert pk.comparable_version("rpm", installed["nvidia-container-toolkit"]) == "1.17.9"
    assert pk.comparable_version("dpkg", "5:24.0.7-1") == "5:24.0.7-1"


def test_no_names_asks_nothing():
    calls = []
    assert pk.query([], runner({"dpkg-query": (0, DPKG_OUT, "")}, calls)) == (None, {})
    assert calls == []


def test_neither_database_is_a_clear_error():
    with pytest.raises(pk.PackageError, match="neither dpkg-query nor rpm"):
        pk.query(["docker-ce"], runner({}))


def test_plan_prefix_pin_missing_off_pin_unwanted_and_specs():
    installed = database(DPKG_OUT)
    plan = pk.plan("dpkg", installed, ["docker-ce", "docker-ce-cli", "containerd.io"], "5:24.0.7",
                   ["docker-ce", "docker-ce-cli"], "prefix", ["runc", "nvidia-container-toolkit", "podman-docker"])
    assert plan["missing"] == ["containerd.io"]
    assert plan["off_pin"] == ["docker-ce-cli"]
    assert plan["unwanted"] == ["nvidia-container-toolkit"]  # runc only left its configuration files
    assert plan["install_needed"] is True
    assert plan["specs"] == ["docker-ce=5:24.0.7*", "docker-ce-cli=5:24.0.7*", "containerd.io"]
    assert plan["installed"]["containerd.io"] is None and plan["installed"]["podman-docker"] is None
    assert plan["installed"]["docker-ce"] == "5:24.0.7-1~debian.12~bookworm"


def test_release_match_does_not_take_a_longer_version():
    installed = database(DPKG_OUT)
    names = ["nvidia-container-toolkit", "nvidia-container-toolkit-base"]
    plan = pk.plan("dpkg", installed, names, "1.17.9", match="release")
    assert plan["off_pin"] == ["nvidia-container-toolkit-base"]  # 1.17.90-1 is not 1.17.9
    assert plan["specs"] == ["nvidia-container-toolkit=1.17.9-*", "nvidia-container-toolkit-base=1.17.9-*"]
    assert pk.plan("dpkg", installed, names, "1.17.9", match="prefix")["off_pin"] == []


def test_no_pin_all_installed_needs_nothing():
    installed = {"a": "1", "b": "2"}
    plan = pk.plan("dpkg", installed, ["a", "b"])
    assert plan == {"missing": [], "off_pin": [], "unwanted": [], "install_needed": False, "specs": ["a", "b"],
                    "installed": {"a": "1", "b": "2"}}


def test_rpm_specs_and_pin_on_the_version_alone():
    installed = database(RPM_OUT, "rpm")
    plan = pk.plan("rpm", installed, ["docker-ce", "nvidia-container-toolkit"], "24.0.7", ["docker-ce"], "prefix")
    assert plan["off_pin"] == [] and plan["missing"] == []
    assert plan["specs"] == ["docker-ce-24.0.7", "nvidia-container-toolkit"]
    assert pk.plan("rpm", installed, ["nvidia-container-toolkit"], "1.17.9", match="release")["off_pin"] == []
    assert pk.plan("rpm", installed, ["docker-ce"], "24.0.9")["off_pin"] == ["docker-ce"]


def test_bad_requests():
    with pytest.raises(pk.PackageError, match="versioned names that are not among the names: b"):
        pk.plan("dpkg", {}, ["a"], "1", ["b"])
    with pytest.raises(pk.PackageError, match="match must be one of"):
        pk.plan("dpkg", {}, ["a"], "1", match="exact")


ROCKY = 'NAME="Rocky Linux"\nVERSION="9.5 (Blue Onyx)"\nID="rocky"\nID_LIKE="rhel centos fedora"\nVERSION_ID="9.5"\n'
DEBIAN = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'


@pytest.mark.parametrize("text, expected", [
    (ROCKY, "rpm"), (DEBIAN, "dpkg"),
    ('ID=ubuntu\nID_LIKE=debian\n', "dpkg"), ('ID="almalinux"\nID_LIKE="rhel centos fedora"\n', "rpm"),
    ('ID="sles"\nID_LIKE="suse"\n', "rpm"), ('ID=linuxmint\nID_LIKE="ubuntu debian"\n', "dpkg"),
    ('ID=myhpcos\nID_LIKE="rhel fedora"\n', "rpm"), ('ID=alpine\n', None), ("", None),
])
def test_native_manager_from_os_release(text, expected):
    assert pk.native_manager(text) == expected


def test_a_rhel_node_with_dpkg_is_read_through_rpm():
    """EPEL ships dpkg: on a Rocky node with dpkg-query on PATH, the installed packages are rpm's, not dpkg's."""
    calls = []
    answers = {"dpkg-query": (1, "", "dpkg-query: no packages found matching docker-ce\n"), "rpm": (0, RPM_OUT, "")}
    manager, installed = pk.query(["docker-ce"], runner(answers, calls), pk.native_manager(ROCKY))
    assert manager == "rpm" and pk.comparable_version("rpm", installed["docker-ce"]) == "24.0.7"
    assert [argv[0] for argv in calls] == ["rpm"]
    # without the node's family, dpkg first, as before
    assert pk.query(["docker-ce"], runner(answers))[0] == "dpkg"


def test_node_manager_reads_the_nodes_file(tmp_path):
    (tmp_path / "os-release").write_text(ROCKY)
    assert pk.node_manager(str(tmp_path / "os-release")) == "rpm"
    assert pk.node_manager(str(tmp_path / "missing")) is None
