# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Malformed LSF files: every module fails with ``path:line: message`` and the
file keeps its exact bytes, in check mode and in a real run."""

import pytest
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

from ansible_collections.hpc.gpu_containers.plugins.modules import lsf_conf, lsf_host, lsf_resource

CONF_ARGS = {"settings": {"LSF_PROCESS_TRACKING": "Y"}}
RES_ARGS = {"name": "docker", "type": "Boolean", "description": "Docker container"}
HOST_ARGS = {"hosts": ["node1"], "resources": ["docker"]}

SHARED_OK = "Begin Cluster\nClusterName\nc1\nEnd Cluster\n\n"
RES_HEAD = "Begin Resource\nRESOURCENAME  TYPE    INTERVAL INCREASING  DESCRIPTION\n"
HOST_HEAD = "Begin Host\nHOSTNAME  model  type  server  RESOURCES\n"

# (id, module, args, file text, expected line, expected message fragment)
CASES = [
    # lsf.conf
    ("conf-blank-around-eq", lsf_conf, CONF_ARGS, "A=1\nLSF_LOGDIR = /var/log\n", 2, "blanks around '='"),
    ("conf-blank-before-eq", lsf_conf, CONF_ARGS, "LSF_LOGDIR =/var/log\n", 1, "blanks around '='"),
    ("conf-blank-after-eq", lsf_conf, CONF_ARGS, "# c\n\nLSF_LOGDIR= /var/log\n", 3, "blanks around '='"),
    ("conf-unquoted-blanks", lsf_conf, CONF_ARGS, "LSB_RESOURCE_ENFORCE=cpu memory\n", 1, "has blanks but no double quotes"),
    ("conf-unterminated-quote", lsf_conf, CONF_ARGS, 'A=1\nB=2\nLSB_RESOURCE_ENFORCE="cpu memory\n', 3, "unterminated double quote"),
    ("conf-text-after-quote", lsf_conf, CONF_ARGS, 'LSB_RESOURCE_ENFORCE="cpu" memory\n', 1, "text after the closing quote"),
    ("conf-stray-quote", lsf_conf, CONF_ARGS, 'LSF_X=ab"c\n', 1, "stray double quote"),
    ("conf-no-equals", lsf_conf, CONF_ARGS, "LSF_LOGDIR=/x\nLSF_ENABLE_EGO\n", 2, "expected NAME=value"),
    ("conf-bad-name", lsf_conf, CONF_ARGS, "1LSF=Y\n", 1, "not a valid parameter name"),
    ("conf-export", lsf_conf, CONF_ARGS, "export LSF_ENVDIR=/etc\n", 1, "not a valid parameter name"),
    ("conf-crlf-bad-line", lsf_conf, CONF_ARGS, "A=1\r\nB=2\r\nC D\r\n", 3, "expected NAME=value"),
    # lsf.shared
    ("shared-begin-without-end", lsf_resource, RES_ARGS, SHARED_OK + RES_HEAD + "aws Boolean () () (AWS)\n", 6, "Begin Resource has no End"),
    ("shared-end-without-begin", lsf_resource, RES_ARGS, SHARED_OK + "End Resource\n", 6, "End Resource without a matching Begin"),
    ("shared-begin-inside-section", lsf_resource, RES_ARGS, "Begin Cluster\nClusterName\nBegin HostType\nEnd HostType\n", 3,
     "Begin HostType inside section Cluster"),
    ("shared-begin-without-name", lsf_resource, RES_ARGS, SHARED_OK + "Begin\nEnd Resource\n", 6, "Begin without a section name"),
    ("shared-row-too-few", lsf_resource, RES_ARGS, SHARED_OK + RES_HEAD + "aws Boolean () (AWS)\nEnd Resource\n", 8,
     "row has 4 values but the Resource header (line 7) has 5 columns"),
    ("shared-row-too-many", lsf_resource, RES_ARGS, SHARED_OK + RES_HEAD + "aws Boolean () () AWS instance\nEnd Resource\n", 8,
     "row has 6 values"),
    ("shared-unbalanced-paren", lsf_resource, RES_ARGS, SHARED_OK + RES_HEAD + "aws Boolean () () (AWS instance\nEnd Resource\n", 8,
     "unbalanced parenthesis"),
    ("shared-stray-close-paren", lsf_resource, RES_ARGS, SHARED_OK + RES_HEAD + "aws Boolean () ) (AWS)\nEnd Resource\n", 8,
     "unbalanced parenthesis"),
    ("shared-outside-section", lsf_resource, RES_ARGS, "docker Boolean () () (Docker)\n" + SHARED_OK, 1, "outside any Begin/End section"),
    ("shared-duplicate-column", lsf_resource, RES_ARGS, SHARED_OK + "Begin Resource\nRESOURCENAME TYPE type DESCRIPTION\nEnd Resource\n", 7,
     "column type appears twice"),
    ("shared-bad-other-section", lsf_resource, RES_ARGS,
     "Begin HostModel\nMODELNAME CPUFACTOR ARCHITECTURE\nIntelI5 100\nEnd HostModel\n" + RES_HEAD + "End Resource\n", 3, "row has 2 values"),
    ("shared-no-consumable-column", lsf_resource, dict(RES_ARGS, type="Numeric", increasing=True, consumable=True),
     SHARED_OK + RES_HEAD + "aws Boolean () () (AWS)\nEnd Resource\n", 7, "has no CONSUMABLE column"),
    ("shared-continued-row-too-long", lsf_resource, RES_ARGS, SHARED_OK + RES_HEAD + "aws Boolean () () (AWS) \\\nfs Boolean () () (FS)\nEnd Resource\n", 8,
     "row has 10 values"),
    # lsf.cluster
    ("cluster-begin-host-without-end", lsf_host, HOST_ARGS, HOST_HEAD + "node1 ! ! 1 ()\n", 1, "Begin Host has no End"),
    ("cluster-end-without-begin", lsf_host, HOST_ARGS, HOST_HEAD + "node1 ! ! 1 ()\nEnd Host\nEnd Host\n", 5, "End Host without a matching Begin"),
    ("cluster-row-mismatch", lsf_host, HOST_ARGS, HOST_HEAD + "node1 ! ! 1 ()\nnode2 ! 1 ()\nEnd Host\n", 4, "row has 4 values"),
    ("cluster-row-unbalanced", lsf_host, HOST_ARGS, HOST_HEAD + "node1 ! ! 1 (mg\nEnd Host\n", 3, "unbalanced parenthesis"),
    ("cluster-parameters-no-equals", lsf_host, HOST_ARGS, "Begin Parameters\nLSF_HOST_ADDR_RANGE=*.*.*.*\nFLOAT_CLIENTS 10\nEnd Parameters\n"
     + HOST_HEAD + "End Host\n", 3, "expected KEY = value in section Parameters"),
    ("cluster-admins-bad-key", lsf_host, HOST_ARGS, "Begin ClusterAdmins\nAdmin istrators = lsfadmin\nEnd ClusterAdmins\n" + HOST_HEAD + "End Host\n",
     2, "bad key"),
    ("cluster-header-no-resources", lsf_host, HOST_ARGS, "Begin Host\nHOSTNAME model type server\nnode1 ! ! 1\nEnd Host\n", 2,
     "Host header has no RESOURCES column"),
    ("cluster-header-no-hostname", lsf_host, HOST_ARGS, "Begin Host\nmodel type server RESOURCES\n! ! 1 ()\nEnd Host\n", 2,
     "Host header has no HOSTNAME column"),
    ("cluster-nested-begin", lsf_host, HOST_ARGS, "Begin ClusterAdmins\nAdministrators = lsfadmin\n" + HOST_HEAD + "End Host\n", 3,
     "Begin Host inside section ClusterAdmins (line 1)"),
    ("cluster-outside-section", lsf_host, HOST_ARGS, "Administrators = lsfadmin\n" + HOST_HEAD + "End Host\n", 1, "outside any Begin/End section"),
    ("cluster-tabs-crlf-mismatch", lsf_host, HOST_ARGS, "Begin\tHost\r\nHOSTNAME\tmodel\ttype\tserver\tRESOURCES\r\n# c\r\nnode1\t!\t!\t1\r\nEnd Host\r\n", 4,
     "row has 4 values"),
]


@pytest.mark.parametrize("check", [True, False], ids=["check", "run"])
@pytest.mark.parametrize("case_id,module,args,text,line,fragment", CASES, ids=[c[0] for c in CASES])
def test_malformed_file_fails_with_path_line_and_stays_unchanged(tmp_path, capsys, check, case_id, module, args, text, line, fragment):
    path = tmp_path / "lsf.file"
    path.write_bytes(text.encode())
    before = path.read_bytes()
    res = run_module(module, capsys, check=check, path=str(path), backup=True, **args)
    assert res.get("failed") is True, res
    assert res["msg"].startswith("%s:%d: " % (path, line)), res["msg"]
    assert fragment in res["msg"]
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lsf.file"]  # no backup, no temp file


def test_at_least_28_distinct_bad_inputs():
    assert len({c[0] for c in CASES}) == len(CASES) >= 28
