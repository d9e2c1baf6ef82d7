# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF models read a real scheduler's output: volclava 2.2 (the OpenLava lineage), recorded from a node of
tools/volclava-image.sh (tests/fixtures/volclava/README.md): ckconfig clean and with a line ignored, lshosts -R with
and without a match, bhosts -l open, running a job, closed by an operator and closed by the collection during a
drain (the volclava scenario's side effect), bjobs with and without jobs."""

import json
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_admin as admin
from ansible_collections.hpc.gpu_containers.plugins.module_utils import _lsf_host_state as hs

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "volclava"


def recorded(name):
    return json.loads((FIXTURES / ("%s.json" % name)).read_text())


def output(name):
    record = recorded(name)
    return record["rc"], record["stdout"], record["stderr"]


@pytest.mark.parametrize("name, failed", [
    ("lsadmin-ckconfig-clean", False),
    ("badmin-ckconfig-clean", False),
    # An ignored host resource: lsadmin exits 255 with "No fatal errors found." and the warning.
    ("lsadmin-ckconfig-warning", True),
    # An ignored Queue section: badmin exits 0 with the same words.
    ("badmin-ckconfig-warning", True),
])
def test_ckconfig(name, failed):
    rc, out, err = output(name)
    assert admin.check_failed(rc, out, err) is failed
    if name == "badmin-ckconfig-warning":
        assert rc == 0 and "No fatal errors found." in err


def test_lshosts_select():
    assert admin.listed_hosts(*output("lshosts-select-match")) == ["head"]
    # volclava's words for "no host matched": "Not enough host(s) currently eligible", status 255.
    assert admin.listed_hosts(*output("lshosts-select-none")) == []
    # A resource LIM does not know is not "no host": the configuration was not taken.
    with pytest.raises(ValueError, match="Unknown resource name"):
        admin.listed_hosts(*output("lshosts-select-unknown-resource"))


def test_bhosts_long():
    assert hs.parse_bhosts_long(output("bhosts-l-ok")[1])["head"] == {
        "status": "ok", "max": 2, "njobs": 0, "run": 0, "ssusp": 0, "ususp": 0, "comment": None}
    running = hs.parse_bhosts_long(output("bhosts-l-running")[1])["head"]
    assert running["status"] == "ok" and running["njobs"] == 1 and running["run"] == 1
    # volclava prints the operator's comment without LSF 10.1's quotes.
    closed = hs.parse_bhosts_long(output("bhosts-l-closed-adm")[1])["head"]
    assert closed["status"] == "closed_Adm" and closed["comment"] == "operator: fan replacement, keep closed"
    # An operator's close is left as it is, and never reopened by the collection.
    assert hs.decide("drained", closed["status"], closed["comment"])[0] is None
    assert hs.decide("open", closed["status"], closed["comment"])[0] is None


def test_bjobs():
    jobs = hs.parse_bjobs(output("bjobs-running")[1])
    assert jobs == [{"job": 1, "user": "jobuser", "stat": "RUN", "queue": "normal", "from_host": "head",
                     "exec_hosts": ["head"], "job_name": "long-job"}]
    assert hs.started_jobs_on(jobs, "head") == jobs and hs.started_jobs_on(jobs, "gpu01") == []
    rc, out, err = output("bjobs-none")
    assert rc == 254 and out == "" and hs.no_jobs_message(err) and hs.parse_bjobs(out) == []


def test_bhosts_long_closed_by_the_collection_during_a_drain():
    # Recorded by the volclava scenario's watcher while the collection drained gpu01: its ResourceMap values
    # (x86_64_level, nvidia_driver, ...) print as extra load blocks between the load and threshold tables.
    closed = hs.parse_bhosts_long(output("bhosts-l-closed-by-collection")[1])["gpu01"]
    assert closed["status"] == "closed_Adm" and closed["njobs"] == 1 and closed["run"] == 1
    assert closed["comment"] == "hpc.gpu_containers: restart of dockerd for daemon.json log-opts.max-file"
    assert hs.is_owned(closed["comment"], hs.OWNER)
    assert hs.decide("drained", closed["status"], closed["comment"])[0] is None
    assert hs.decide("open", closed["status"], closed["comment"])[0] == "hopen"


def test_bjobs_a_user_name_wider_than_its_column():
    jobs = hs.parse_bjobs(output("bjobs-running-gpu01")[1])
    assert jobs == [{"job": 1, "user": "testbed-user", "stat": "RUN", "queue": "normal", "from_host": "head",
                     "exec_hosts": ["gpu01"], "job_name": "rolling-job"}]
    assert hs.started_jobs_on(jobs, "gpu01") == jobs
