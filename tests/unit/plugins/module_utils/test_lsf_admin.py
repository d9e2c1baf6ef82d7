# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""_lsf_admin: which reloads run, and how the checks' and lshosts' output is read."""

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_admin

# As LSF 10.1 prints them (IBM's documentation of lsadmin/badmin ckconfig -v).
CHECK_OK = "\nChecking configuration files ...\nNo errors found.\n"
CHECK_FATAL = ("\nChecking configuration files ...\n"
               "Jan 17 10:00:00 2023 12 3 10.1 /usr/share/lsf/conf/lsf.shared(45): Bad format\n"
               "---------------------------------------------------------\n"
               "There are fatal errors.\n\nDo you want to see detailed messages? [y/n] n\n")
LSHOSTS = ("HOST_NAME                       type       model  cpuf ncpus maxmem maxswp server RESOURCES\n"
           "gpu01.cluster.example           X86_64  Intel_E5  12.5    64   251G   3.9G    Yes (mg docker)\n"
           "gpu02                           X86_64  Intel_E5  12.5    64   251G      -    Yes (docker)\n")


def test_a_check_fails_on_its_status_or_on_lsf_s_fatal_error():
    assert not _lsf_admin.check_failed(0, CHECK_OK, "")
    assert _lsf_admin.check_failed(255, CHECK_OK, "")
    # The exit status of ckconfig is not documented: the words count as well.
    assert _lsf_admin.check_failed(0, CHECK_FATAL, "")
    assert _lsf_admin.check_failed(0, "", "lsadmin: Fatal error in lsf.cluster.gpucluster")


def test_the_report_holds_the_command_status_and_lsf_s_words():
    report = _lsf_admin.check_report(["badmin", "ckconfig", "-v"], 255, CHECK_FATAL, "")
    assert report.startswith("badmin ckconfig -v failed (rc=255):\n")
    assert "lsf.shared(45): Bad format" in report and "There are fatal errors." in report


@pytest.mark.parametrize("asked,expected", [
    ({}, []),
    ({"lim": True}, [["lsadmin", "reconfig", "-f"]]),
    ({"batch": True}, [["badmin", "reconfig", "-f"]]),
    # mbdrestart re-reads lsb.* as well: no badmin reconfig beside it
    ({"lim": True, "mbdrestart": True, "batch": True}, [["lsadmin", "reconfig", "-f"], ["badmin", "mbdrestart", "-f"]]),
    # sbatchd and RES restart last, after LSF has the new configuration
    ({"lim": True, "batch": True, "hosts_restart": True},
     [["lsadmin", "reconfig", "-f"], ["badmin", "reconfig", "-f"], ["badmin", "hrestart", "-f", "all"],
      ["lsadmin", "resrestart", "-f", "all"]]),
    ({"hosts_restart": True}, [["badmin", "hrestart", "-f", "all"], ["lsadmin", "resrestart", "-f", "all"]]),
])
def test_reloads_in_order(asked, expected):
    assert _lsf_admin.reloads(**asked) == expected


def test_lshosts_lists_the_first_column_after_the_header():
    assert _lsf_admin.listed_hosts(0, LSHOSTS, "") == ["gpu01.cluster.example", "gpu02"]
    assert _lsf_admin.listed_hosts(0, LSHOSTS.splitlines(True)[0], "") == []


def test_lshosts_without_a_matching_host_lists_none_and_other_failures_raise():
    assert _lsf_admin.listed_hosts(255, "", "No matching host found\n") == []
    assert _lsf_admin.listed_hosts(255, "", "lshosts: No host found\n") == []
    with pytest.raises(ValueError, match="LIM is down"):
        _lsf_admin.listed_hosts(255, "", "ls_gethostinfo(): LIM is down; try later\n")
