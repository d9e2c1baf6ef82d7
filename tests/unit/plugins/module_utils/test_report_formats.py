# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""JUnit XML and Prometheus textfile rendering (_junit_xml, _prom_textfile) and the reports' mapping to them
(_report_outputs), read back with the parsers CI systems and Prometheus use: junitparser and prometheus_client."""

from __future__ import annotations

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _junit_xml, _prom_textfile
from ansible_collections.hpc.gpu_containers.plugins.module_utils._report_outputs import (
    check_verify_report,
    drift_cases,
    drift_families,
    verify_cases,
    verify_families,
)

HOSTILE = 'a <b> & "c" \'d\' \\ e\nf \x01 \x1b[31m \ud800 \ufffe end'


def _read_junit(tmp_path, text):
    path = tmp_path / "report.xml"
    path.write_text(text, encoding="utf-8")
    return {(suite.name, case.name): case for suite in JUnitXml.fromfile(str(path)) for case in suite}


def _families(text):
    return {family.name: family for family in text_string_to_metric_families(text)}


def test_junit_escapes_every_text_and_still_parses(tmp_path):
    text = _junit_xml.render("suite " + HOSTILE, [
        {"classname": "host" + HOSTILE, "name": "check " + HOSTILE,
         "failure": {"message": HOSTILE, "text": HOSTILE, "type": "drift"}, "output": HOSTILE},
    ])
    cases = _read_junit(tmp_path, text)
    (suite, name), case = next(iter(cases.items()))
    assert name.startswith('check a <b> & "c" \'d\' \\ e\nf \\u0001 \\u001b[31m \\ud800 \\ufffe end')
    assert case.result[0].message == 'a <b> & "c" \'d\' \\ e\nf \\u0001 \\u001b[31m \\ud800 \\ufffe end'
    assert case.system_out.startswith('a <b> & "c"')


def test_junit_counts_per_suite_and_in_total(tmp_path):
    text = _junit_xml.render("s", [
        {"classname": "h1", "name": "ok"},
        {"classname": "h1", "name": "drift", "failure": {"message": "m"}},
        {"classname": "h2", "name": "failed", "error": {"message": "e"}},
        {"classname": "h2", "name": "skipped", "skipped": "why"},
    ], "2026-01-01T00:00:00Z")
    xml = JUnitXml.fromstring(text.split("\n", 1)[1])
    assert (xml.tests, xml.failures, xml.errors, xml.skipped) == (4, 1, 1, 1)
    suites = {suite.name: suite for suite in xml}
    assert (suites["h1"].tests, suites["h1"].failures, suites["h2"].errors, suites["h2"].skipped) == (2, 1, 1, 1)
    assert suites["h1"].timestamp == "2026-01-01T00:00:00Z"
    kinds = {(case.classname, case.name): [type(r) for r in case.result] for suite in xml for case in suite}
    assert kinds == {("h1", "ok"): [], ("h1", "drift"): [Failure], ("h2", "failed"): [Error],
                     ("h2", "skipped"): [Skipped]}


def test_prom_escapes_label_values_and_help_and_parses():
    text = _prom_textfile.render([
        ("x_total", "counter", "help with \\ and\nnewline", [({"host": 'h"1\\\n'}, 3)]),
        ("gauge_value", "gauge", "g", [({}, 1.5), ({"a": "b"}, float("nan"))]),
    ])
    assert '# HELP hpc_gpu_containers_x_total help with \\\\ and\\nnewline' in text
    assert 'hpc_gpu_containers_x_total{host="h\\"1\\\\\\n"} 3' in text
    families = _families(text)
    sample = families["hpc_gpu_containers_x"].samples[0]  # the parser strips _total from a counter's name
    assert sample.labels == {"host": 'h"1\\\n'} and sample.value == 3
    assert families["hpc_gpu_containers_x"].documentation == "help with \\ and\nnewline"
    assert families["hpc_gpu_containers_gauge_value"].type == "gauge"


@pytest.mark.parametrize("families, message", [
    ([("bad-name", "gauge", "h", [])], "not a Prometheus metric name"),
    ([("ok", "summary", "h", [])], "type 'summary'"),
    ([("ok", "gauge", "h", [({"bad-label": "x"}, 1)])], "not a Prometheus label name"),
    ([("ok", "gauge", "h", [({"__reserved": "x"}, 1)])], "not a Prometheus label name"),
])
def test_prom_refuses_what_node_exporter_would(families, message):
    with pytest.raises(ValueError, match=message):
        _prom_textfile.render(families)


DRIFT = {
    "schema_version": 1, "generated": "2026-01-01T00:00:00Z", "generated_unix": 1767225600,
    "summary": {"hosts_with_drift": 1},
    "hosts": {
        "gpu01": {"changed": [
            {"task": "Merge daemon.json", "target": "/etc/docker/daemon.json", "diff": "-a\n+b\n", "item": None},
            {"task": "Reload", "handler": True, "diff": ""}], "failed": []},
        "gpu02": {"changed": [], "failed": [{"task": "Read the state", "msg": "bjobs failed"}]},
        "head": {"changed": [], "failed": [], "fast_path": {"clean": True, "full_check": False}},
    },
    "unreachable": {"gpu03": "ssh: connect to host gpu03 port 22: Connection refused"},
}


def test_drift_report_as_test_cases_one_per_host_and_check(tmp_path):
    cases = _read_junit(tmp_path, _junit_xml.render("drift", drift_cases(DRIFT)))
    kinds = {key: [type(r) for r in case.result] for key, case in cases.items()}
    assert kinds == {("gpu01", "Merge daemon.json"): [Failure], ("gpu01", "Reload [handler]"): [Failure],
                     ("gpu02", "Read the state"): [Error], ("head", "no drift"): [],
                     ("gpu03", "reachable"): [Error]}
    assert cases[("gpu01", "Merge daemon.json")].result[0].text == "-a\n+b\n"
    assert cases[("gpu01", "Merge daemon.json")].result[0].message == "would change /etc/docker/daemon.json"
    assert "Connection refused" in cases[("gpu03", "reachable")].result[0].message
    assert "fingerprint" in cases[("head", "no drift")].system_out


def test_drift_report_as_metrics():
    families = _families(_prom_textfile.render(drift_families(DRIFT)))
    values = {name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
              for name, family in families.items()}
    assert values["hpc_gpu_containers_drift_host_drifted"] == {
        (("host", "gpu01"),): 1, (("host", "gpu02"),): 0, (("host", "head"),): 0}
    assert values["hpc_gpu_containers_drift_host_differences"][(("host", "gpu01"),)] == 2
    assert values["hpc_gpu_containers_drift_host_failed_tasks"][(("host", "gpu02"),)] == 1
    assert values["hpc_gpu_containers_drift_host_unreachable"][(("host", "gpu03"),)] == 1
    assert values["hpc_gpu_containers_drift_last_run_timestamp_seconds"] == {(): 1767225600}
    assert all(family.documentation for family in families.values())


VERIFY = {
    "schema_version": 1, "generated": "2026-01-01T00:00:00Z", "generated_unix": 1767225600,
    "hosts": {
        "gpu01": {"passed": False, "reasons": ["GPUs: requested but not visible in the container: GPU-b"],
                  "architecture": {"node": "x86_64", "container": "x86_64"},
                  "gpus": {"requested": ["GPU-a", "GPU-b"], "host": 2, "container": 1,
                           "container_gpus": [{"uuid": "GPU-A"}]},
                  "lsf": {"passed": True, "timings": {"total": 2.5}}},
        "head": {"passed": True, "reasons": [], "architecture": {"node": "x86_64", "container": "x86_64"},
                 "gpus": {"requested": [], "host": 0, "container": 0, "container_gpus": []}, "lsf": None},
        "gpu02": {"passed": None, "reasons": [], "architecture": {}, "gpus": {}, "lsf": None},
    },
}


def test_verify_report_as_test_cases_with_one_per_gpu(tmp_path):
    cases = _read_junit(tmp_path, _junit_xml.render("verify", verify_cases(VERIFY)))
    kinds = {key: [type(r) for r in case.result] for key, case in cases.items()}
    assert kinds == {
        ("gpu01", "verification"): [Failure], ("gpu01", "architecture"): [], ("gpu01", "GPU count"): [Failure],
        ("gpu01", "GPU 0 GPU-a"): [], ("gpu01", "GPU 1 GPU-b"): [Failure], ("gpu01", "LSF job"): [],
        ("head", "verification"): [], ("head", "architecture"): [], ("head", "GPU count"): [],
        ("gpu02", "verification"): [Error]}
    assert float(cases[("gpu01", "LSF job")].time) == 2.5


def test_verify_report_as_metrics_per_host_and_per_gpu():
    families = _families(_prom_textfile.render(verify_families(check_verify_report(VERIFY))))
    per_gpu = {(s.labels["host"], s.labels["gpu"], s.labels["uuid"]): s.value
               for s in families["hpc_gpu_containers_verify_gpu_passed"].samples}
    assert per_gpu == {("gpu01", "0", "GPU-a"): 1, ("gpu01", "1", "GPU-b"): 0}
    passed = {s.labels["host"]: s.value for s in families["hpc_gpu_containers_verify_host_passed"].samples}
    ran = {s.labels["host"]: s.value for s in families["hpc_gpu_containers_verify_host_ran"].samples}
    assert passed == {"gpu01": 0, "gpu02": 0, "head": 1} and ran == {"gpu01": 1, "gpu02": 0, "head": 1}


@pytest.mark.parametrize("report, message", [
    ({"gpu01": {"passed": True}}, "no 'hosts' mapping"),
    (dict(VERIFY, schema_version=2), "schema_version 2, expected 1"),
    (dict(VERIFY, generated_unix=None), "no generated_unix"),
])
def test_a_report_of_another_shape_or_version_is_refused(report, message):
    with pytest.raises(ValueError, match=message):
        check_verify_report(report)
