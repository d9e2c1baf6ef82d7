# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import (
    SMI_BEGIN,
    SMI_END,
    VerifyError,
    compare,
    exec_format_problem,
    go_arch,
    host_gpus,
    image_arch_problem,
    isolation_problems,
    normalize_bus_id,
    parse_bsub_job_id,
    parse_nvidia_smi_xml,
    parse_verify_output,
    select_gpus,
)

FIXTURES = Path(__file__).parent / "fixtures"
A100_XML = (FIXTURES / "nvidia_smi_a100-sxm4-mig.xml").read_text()
A100_UUID = "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
SECOND_UUID = "GPU-0b5d9b0c-6f3e-4c55-9c2a-5d3e1f0a7b11"

# Host facts as gpu_facts reports them for the recorded A100 (NVML spells the bus id with 8 hex digits).
A100_FACTS = {
    "present": True,
    "driver_version": "510.47.03",
    "cuda_driver_version": 11060,
    "gpus": [{"index": 0, "uuid": A100_UUID, "pci_bus_id": "00000000:00:04.0", "minor_number": 0,
              "name": "NVIDIA A100-SXM4-40GB"}],
}


def two_gpu_xml():
    """The recording with a second GPU appended (another UUID, bus 3b, minor 1)."""
    start = A100_XML.index("<gpu ")
    end = A100_XML.index("</gpu>") + len("</gpu>")
    second = (A100_XML[start:end].replace(A100_UUID, SECOND_UUID)
              .replace("00000000:00:04.0", "00000000:3B:00.0").replace("<minor_number>0", "<minor_number>1"))
    return (A100_XML[:end] + "\n" + second + A100_XML[end:]).replace(
        "<attached_gpus>1</attached_gpus>", "<attached_gpus>2</attached_gpus>")


def two_gpu_facts():
    facts = dict(A100_FACTS)
    facts["gpus"] = A100_FACTS["gpus"] + [
        {"index": 1, "uuid": SECOND_UUID, "pci_bus_id": "00000000:3B:00.0", "minor_number": 1}]
    return facts


def report(arch="x86_64", xml=None, rc=0, visible=None):
    lines = ["hpc-verify: 1", "arch=%s" % arch]
    if visible is not None:
        lines += ["nvidia_visible_devices=%s" % visible, "cuda_visible_devices=0"]
    if xml is None:
        lines.append("nvidia_smi=absent")
    else:
        lines += ["nvidia_smi=present", "nvidia_smi_rc=%d" % rc, SMI_BEGIN, xml, SMI_END]
    return parse_verify_output("\n".join(lines) + "\n")


def test_parse_recorded_xml():
    smi = parse_nvidia_smi_xml(A100_XML)
    assert smi["driver_version"] == "510.47.03"
    assert smi["cuda_version"] == "11.6"
    assert smi["attached_gpus"] == 1
    assert smi["gpus"] == [{"uuid": A100_UUID, "pci_bus_id": "0000:00:04.0", "minor_number": 0,
                            "product_name": "NVIDIA A100-SXM4-40GB"}]


@pytest.mark.parametrize("text", ["", "<nvidia_smi_log>", "<other/>"])
def test_parse_bad_xml(text):
    with pytest.raises(VerifyError):
        parse_nvidia_smi_xml(text)


def test_parse_na_values():
    xml = ("<nvidia_smi_log><driver_version>N/A</driver_version><gpu id='0000:01:00.0'>"
           "<uuid>GPU-x</uuid><minor_number>N/A</minor_number></gpu></nvidia_smi_log>")
    smi = parse_nvidia_smi_xml(xml)
    assert smi["driver_version"] is None
    assert smi["gpus"][0]["minor_number"] is None
    assert smi["gpus"][0]["pci_bus_id"] == "0000:01:00.0"  # falls back to the gpu id attribute
    assert smi["attached_gpus"] == 1


@pytest.mark.parametrize("raw, want", [
    ("00000000:3B:00.0", "0000:3b:00.0"),
    ("0000:3b:00.0", "0000:3b:00.0"),
    ("3b:00.0", "0000:3b:00.0"),
    ("00000001:04:00.1", "0001:04:00.1"),
    (None, None),
])
def test_normalize_bus_id(raw, want):
    assert normalize_bus_id(raw) == want


def test_parse_verify_output_roundtrip():
    parsed = report(xml=A100_XML, rc=0)
    assert parsed["marker"] is True
    assert parsed["arch"] == "x86_64"
    assert parsed["nvidia_smi"] is True
    assert parsed["nvidia_smi_rc"] == 0
    assert parse_nvidia_smi_xml(parsed["nvidia_smi_xml"])["gpus"][0]["uuid"] == A100_UUID


def test_parse_verify_output_truncated_and_empty():
    assert parse_verify_output("")["marker"] is False
    cut = parse_verify_output("hpc-verify: 1\narch=ppc64le\nnvidia_smi=present\n%s\n<nvidia_smi_log>" % SMI_BEGIN)
    assert cut["arch"] == "ppc64le"
    assert cut["nvidia_smi_xml"] == "<nvidia_smi_log>"


@pytest.mark.parametrize("uname, go", [("x86_64", "amd64"), ("ppc64le", "ppc64le"), ("aarch64", "arm64"),
                                       ("amd64", "amd64"), ("s390x", "s390x")])
def test_go_arch(uname, go):
    assert go_arch(uname) == go


def test_image_arch_problem():
    assert image_arch_problem("r/verify:1", "amd64", "x86_64") is None
    assert image_arch_problem("r/verify:1", "ppc64le", "ppc64le") is None
    msg = image_arch_problem("r/verify:1", "ppc64le", "x86_64")
    assert "linux/ppc64le" in msg and "linux/amd64" in msg and "r/verify:1" in msg


def test_exec_format_problem():
    assert exec_format_problem("exec /verify: exec format error", "img", "x86_64").startswith("the entrypoint of img")
    assert exec_format_problem("all fine", "img", "x86_64") is None


def test_host_gpus_accepts_both_key_spellings():
    facts = {"present": True, "gpus": [{"uuid": "GPU-a", "bus_id": "00000000:3B:00.0", "minor": 3},
                                       {"uuid": "GPU-b", "pci": {"bus_id": "0000:5e:00.0"}}]}
    gpus = host_gpus(facts)
    assert [g["index"] for g in gpus] == [0, 1]
    assert gpus[0]["pci_bus_id"] == "0000:3b:00.0" and gpus[0]["minor_number"] == 3
    assert gpus[1]["pci_bus_id"] == "0000:5e:00.0" and gpus[1]["minor_number"] is None
    assert host_gpus({"present": False, "gpus": [{"uuid": "GPU-a"}]}) == []
    assert host_gpus(None) == []


def test_select_gpus():
    gpus = host_gpus(two_gpu_facts())
    assert select_gpus(gpus, ["all"]) == gpus
    assert [g["uuid"] for g in select_gpus(gpus, ["1"])] == [SECOND_UUID]
    assert [g["uuid"] for g in select_gpus(gpus, [A100_UUID.upper()])] == [A100_UUID]
    assert len(select_gpus(gpus, ["0", A100_UUID])) == 1  # the same GPU twice counts once
    with pytest.raises(VerifyError, match="not on this host"):
        select_gpus(gpus, ["7"])
    with pytest.raises(VerifyError, match="cannot be combined"):
        select_gpus(gpus, ["all", "0"])


def test_compare_pass_recorded_gpu():
    selected = host_gpus(A100_FACTS)
    problems, details = compare("x86_64", report(xml=A100_XML), selected, A100_FACTS)
    assert problems == []
    assert details["gpus"]["container"] == 1
    assert details["gpus"]["container_driver_version"] == "510.47.03"


def test_compare_one_of_two_requested_indices_renumbered():
    """GPU 1 on the host is GPU 0 inside: matched by UUID, so this passes."""
    facts = two_gpu_facts()
    selected = select_gpus(host_gpus(facts), ["1"])
    inside = two_gpu_xml()
    start = inside.index("<gpu ")
    end = inside.index("</gpu>") + len("</gpu>")
    only_second = (inside[:start] + inside[end:]).replace("<attached_gpus>2", "<attached_gpus>1")
    problems = compare("x86_64", report(xml=only_second), selected, facts)[0]
    assert problems == []


def test_compare_detects_extra_and_count():
    facts = two_gpu_facts()
    selected = select_gpus(host_gpus(facts), ["0"])
    problems = compare("x86_64", report(xml=two_gpu_xml()), selected, facts)[0]
    assert "GPUs: the container sees 2 GPU(s), 1 requested" in problems
    assert "GPUs: visible in the container but not requested: %s" % SECOND_UUID in problems


def test_compare_detects_missing_gpu():
    facts = two_gpu_facts()
    selected = host_gpus(facts)
    problems = compare("x86_64", report(xml=A100_XML), selected, facts)[0]
    assert "GPUs: requested but not visible in the container: %s" % SECOND_UUID in problems


def test_compare_detects_driver_bus_minor_and_cuda():
    facts = dict(A100_FACTS, driver_version="535.54.03", cuda_driver_version=12020)
    facts["gpus"] = [dict(A100_FACTS["gpus"][0], pci_bus_id="0000:3b:00.0", minor_number=2)]
    problems = compare("x86_64", report(xml=A100_XML), host_gpus(facts), facts)[0]
    text = "\n".join(problems)
    assert "driver 510.47.03 but the host runs 535.54.03" in text
    assert "CUDA 11.6 but the host driver supports CUDA 12.2" in text
    assert "PCI bus id 0000:3b:00.0 on the host but 0000:00:04.0" in text
    assert "/dev/nvidia2 on the host but /dev/nvidia0" in text


def test_compare_no_nvidia_smi_when_gpus_expected():
    problems = compare("x86_64", report(), host_gpus(A100_FACTS), A100_FACTS)[0]
    assert len(problems) == 1 and "nvidia-smi is not available" in problems[0]


def test_compare_nvidia_smi_failed():
    problems = compare("x86_64", report(xml="", rc=9), host_gpus(A100_FACTS), A100_FACTS)[0]
    assert any("exit code 9" in p for p in problems)


def test_compare_cpu_node_passes_and_flags_leaked_gpus():
    problems, details = compare("ppc64le", report(arch="ppc64le"), [], {"present": False})
    assert problems == [] and details["architecture"] == {"node": "ppc64le", "container": "ppc64le"}
    problems = compare("x86_64", report(xml=A100_XML), [], {"present": False}, expect_gpus=False)[0]
    assert problems == ["GPUs: the container sees 1 GPU(s) although none were requested (%s)" % A100_UUID]


def test_compare_architecture_mismatch_and_missing_report():
    problems = compare("x86_64", report(arch="ppc64le"), [], None)[0]
    assert problems == ["architecture: the container runs ppc64le but the node is x86_64"]
    problems = compare("x86_64", parse_verify_output("hello\n"), [], None)[0]
    assert any("did not print the verification report" in p for p in problems)
    assert any("did not report its architecture" in p for p in problems)


def test_compare_reads_gpu_facts_module_shape():
    """gpu_facts reports cuda_driver_version as "major.minor" and 8-hex-digit PCI domains."""
    facts = {"present": True, "driver_version": "510.47.03", "cuda_driver_version": "11.6",
             "cuda_driver_version_int": 11060,
             "gpus": [{"index": 0, "uuid": A100_UUID, "pci_bus_id": "00000000:00:04.0",
                       "pci_bus_id_short": "0000:00:04.0", "minor_number": 0, "name": "NVIDIA A100-SXM4-40GB"}]}
    problems = compare("x86_64", report(xml=A100_XML), host_gpus(facts), facts)[0]
    assert problems == []
    facts["cuda_driver_version"] = "12.4"
    problems = compare("x86_64", report(xml=A100_XML), host_gpus(facts), facts)[0]
    assert problems == ["driver: the container reports CUDA 11.6 but the host driver supports CUDA 12.4"]


def test_benchmark_helpers():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import (
        benchmark_script, parse_times, summarize_benchmark)
    assert "-lt 1000 ]" in benchmark_script(1000)
    assert parse_times("0.52\nCommand exited\n0.50\n") == [0.52, 0.50]
    summary = summarize_benchmark([1.0, 3.0, 2.0, 2.0], [2.2, 2.0, 4.0])
    assert summary["host"]["median"] == 2.0 and summary["host"]["min"] == 1.0 and summary["host"]["max"] == 3.0
    assert summary["container"]["median"] == 2.2 and summary["ratio"] == 1.1
    assert summarize_benchmark([], [1.0])["ratio"] is None


def test_parse_bsub_job_id():
    assert parse_bsub_job_id("Job <1204> is submitted to default queue <interactive>.\n<<Waiting") == 1204
    assert parse_bsub_job_id("Job <7> is submitted to queue <normal>.\n") == 7
    assert parse_bsub_job_id("powerai: No such application. Job not submitted.\n") is None
    assert parse_bsub_job_id(None) is None


def one_gpu_xml(which):
    """The two-GPU recording cut down to GPU ``which`` (0 or 1), as a one-GPU container prints it."""
    xml = two_gpu_xml()
    blocks = xml.split("<gpu ")
    keep = blocks[1 + which].split("</gpu>")[0]
    head = blocks[0].replace("<attached_gpus>2</attached_gpus>", "<attached_gpus>1</attached_gpus>")
    return head + "<gpu " + keep + "</gpu>\n</nvidia_smi_log>\n"


def test_report_carries_the_containers_gpu_variables():
    parsed = report(xml=one_gpu_xml(1), visible="1")
    assert parsed["nvidia_visible_devices"] == "1" and parsed["cuda_visible_devices"] == "0"
    assert report()["nvidia_visible_devices"] is None


@pytest.mark.parametrize("xml, visible, problem", [
    (lambda: one_gpu_xml(1), "1", None),
    (lambda: one_gpu_xml(1), SECOND_UUID, None),
    (lambda: one_gpu_xml(0), "1", "isolation: LSF allocated %s but the container sees %s" % (SECOND_UUID.lower(), A100_UUID.lower())),
    (two_gpu_xml, "1", "isolation: a job that LSF allocated 1 GPU(s) sees 2 (every GPU of the node: the profile hands all GPUs to every job)"),
    (two_gpu_xml, "all", "isolation: a job that LSF allocated 1 GPU(s) sees 2 (every GPU of the node: the profile hands all GPUs to every job)"),
    (lambda: None, "void", "isolation: a job that LSF allocated 1 GPU(s) sees 0"),
    (lambda: one_gpu_xml(0), "", "isolation: the job's NVIDIA_VISIBLE_DEVICES is '', not the GPUs LSF allocated"),
    (lambda: one_gpu_xml(0), "7", "isolation: requested GPU '7' is not on this host"),
], ids=["exact", "by-uuid", "wrong-gpu", "leaks-all", "profile-says-all", "no-gpu", "not-named", "unknown-index"])
def test_isolation_problems(xml, visible, problem):
    problems = isolation_problems(report(xml=xml(), visible=visible), host_gpus(two_gpu_facts()), 1)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_combined_verdict():
    from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import combined_verdict
    container = {"passed": True, "reasons": [], "gpus": {"host": 2}, "changed": False}
    assert combined_verdict(container, {"skipped": True}, {"skipped": True}) == container
    got = combined_verdict(container, {"passed": False, "reasons": ["bsub: no host"], "lsf": {"passed": False}},
                           {"host": {"median": 1.0}, "ratio": 1.1, "container": {"median": 1.1}, "changed": False})
    assert got["passed"] is False and got["reasons"] == ["bsub: no host"]
    assert got["lsf"] == {"passed": False}
    assert got["benchmark"] == {"host": {"median": 1.0}, "ratio": 1.1, "container": {"median": 1.1}}
    failed = combined_verdict({"passed": False, "reasons": ["GPU count"]}, None, None)
    assert failed == {"passed": False, "reasons": ["GPU count"]}
