#!/usr/bin/env python
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real-GPU lane: record what a machine with NVIDIA GPUs answers, as a test fixture.

Run it on a machine with a real NVIDIA GPU and driver (``make gpu-check``). It needs nothing but
Python 3 and the driver: it loads the collection's own NVML code (plugins/module_utils/_nvml.py over
the ctypes binding _nvml_ctypes.py, what the gpu_facts module runs) straight from this checkout, and

1. gathers the GPU facts exactly as gpu_facts does on a node;
2. records ``nvidia-smi -q -x`` when nvidia-smi is there;
3. when a Docker engine with the NVIDIA runtime (or toolkit hook) answers and an image is given
   (GPU_CHECK_IMAGE, one with a shell or nvidia-smi mounted by the runtime), runs
   ``nvidia-smi -q -x`` inside a container given all GPUs and compares it with the host by UUID,
   with the same comparison container_verify uses.

The result goes to tests/fixtures/nvml/recorded/<date>-<first GPU model>.json (or GPU_CHECK_OUT)
with the date, host architecture and the device names, and is printed. Exit status: 0 recorded with
GPUs, 2 no usable GPU (the facts say why), 1 the container comparison failed.
"""

import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UTILS = os.path.join(ROOT, "plugins", "module_utils")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(UTILS, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(argv, timeout=120):
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, str(exc)
    return proc.returncode, proc.stdout + proc.stderr


def main():
    nvml, ctypes_binding, cpuinfo, verify = load("_nvml"), load("_nvml_ctypes"), load("_cpuinfo"), load("_verify")
    facts = nvml.collect(ctypes_binding.Nvml())
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
        facts["cpu"] = cpuinfo.parse(handle.read(), platform.machine())
    record = {
        "recorded": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "devices": [gpu.get("name") for gpu in facts["gpus"]],
        "gpu_facts": facts,
        "nvidia_smi_xml": None,
        "container": None,
    }
    if shutil.which("nvidia-smi"):
        rc, out = run(["nvidia-smi", "-q", "-x"])
        record["nvidia_smi_xml"] = out if rc == 0 else None
    image = os.environ.get("GPU_CHECK_IMAGE")
    failed = False
    if image and shutil.which("docker") and facts["present"]:
        argv = ["docker", "run", "--rm", "--runtime=nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all",
                "-e", "NVIDIA_DRIVER_CAPABILITIES=compute,utility", image, "nvidia-smi", "-q", "-x"]
        rc, out = run(argv, timeout=600)
        container = {"image": image, "argv": argv, "exit_code": rc, "problems": []}
        if rc == 0:
            xml = out[out.index("<?xml"):] if "<?xml" in out else out
            report = {"marker": True, "arch": platform.machine(), "nvidia_smi": True, "nvidia_smi_rc": 0,
                      "nvidia_smi_xml": xml}
            container["problems"], container["details"] = verify.compare(
                platform.machine(), report, verify.host_gpus(facts), facts)
        else:
            container["problems"] = ["the container failed: %s" % out[-2000:]]
        failed = bool(container["problems"])
        record["container"] = container
    model = re.sub(r"[^a-z0-9]+", "-", (record["devices"] or ["no-gpu"])[0].lower()).strip("-")
    out_path = os.environ.get("GPU_CHECK_OUT") or os.path.join(
        ROOT, "tests", "fixtures", "nvml", "recorded", "%s-%s.json" % (record["recorded"][:10], model))
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
    print(json.dumps({"written": os.path.relpath(out_path, ROOT), "present": facts["present"],
                      "reason": facts["reason"], "driver": facts["driver_version"],
                      "cuda": facts["cuda_driver_version"], "devices": record["devices"],
                      "container": (record["container"] or {}).get("problems")}, indent=2))
    if failed:
        return 1
    return 0 if facts["present"] else 2


if __name__ == "__main__":
    sys.exit(main())
