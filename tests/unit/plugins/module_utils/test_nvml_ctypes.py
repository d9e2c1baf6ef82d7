# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The built-in ctypes binding against a real C library, beside nvidia-ml-py.

The test bed's stand-in libnvidia-ml.so.1 (molecule/resources/nvidia-standin/nvml, C source) is compiled
here and loaded by the dynamic linker, as the driver's library is on a node. The same facts must come out
through the collection's binding (what gpu_facts uses) and through the real nvidia-ml-py, for each GPU
node's recorded values, and the binding must read every value the recording holds.
"""

import ctypes.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
STANDIN = ROOT / "molecule" / "resources" / "nvidia-standin"
UTILS = ROOT / "plugins" / "module_utils"

COLLECT = r"""
import importlib.util, json, sys
def load(name):
    spec = importlib.util.spec_from_file_location(name, sys.argv[1] + "/" + name + ".py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
nvml = load("_nvml")
if sys.argv[2] == "builtin":
    binding = load("_nvml_ctypes").Nvml()
else:
    import pynvml as binding
print(json.dumps(nvml.collect(binding, "/nonexistent-dev")))
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    if not shutil.which("cc"):
        pytest.skip("no C compiler (cc) to build the stand-in libnvidia-ml.so.1")
    out = tmp_path_factory.mktemp("nvml")
    subprocess.run(["sh", str(STANDIN / "nvml" / "build.sh"), str(out)], check=True, capture_output=True)
    return out


def collect(library, binding, values):
    env = dict(os.environ, LD_LIBRARY_PATH=str(library), NVIDIA_STANDIN_NVML_CONF=str(values))
    proc = subprocess.run([sys.executable, "-c", COLLECT, str(UTILS), binding], env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def recorded(path):
    values = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            values[key.strip()] = value.split(" #")[0].strip()
    return values


@pytest.mark.parametrize("node", ["gpu01", "gpu02"])
def test_builtin_binding_reads_every_recorded_value_as_nvidia_ml_py_does(library, node):
    conf = STANDIN / "gpus" / ("%s.conf" % node)
    ours = collect(library, "builtin", conf)
    theirs = collect(library, "pynvml", conf)
    assert ours == theirs
    values = recorded(conf)
    assert ours["present"] is True and ours["errors"] == []
    assert ours["driver_version"] == values["driver_version"]
    assert ours["cuda_driver_version_int"] == int(values["cuda_driver_version"])
    assert ours["count"] == int(values["gpu.count"])
    for gpu in ours["gpus"]:
        prefix = "gpu.%d." % gpu["index"]
        assert gpu["name"] == values[prefix + "name"]
        assert gpu["uuid"] == values[prefix + "uuid"]
        assert gpu["serial"] == values[prefix + "serial"]
        assert gpu["pci_bus_id"] == values[prefix + "pci_bus_id"]
        assert gpu["memory_total_bytes"] == int(values[prefix + "memory_total"])
        assert gpu["compute_capability"] == values[prefix + "compute_capability"]
        assert gpu["minor_number"] == int(values[prefix + "minor_number"])
        mig = values[prefix + "mig_mode"]
        if mig == "unsupported":
            assert gpu["mig_mode"] == {"capable": False, "current": None, "pending": None}
        else:
            current, pending = (int(x) for x in mig.split(","))
            assert gpu["mig_mode"]["capable"] is True
            assert gpu["mig_mode"]["current"] == ("enabled" if current else "disabled")
            assert gpu["mig_mode"]["pending"] == ("enabled" if pending else "disabled")
        assert gpu["errors"] == []


def test_no_driver_values_is_driver_not_loaded_through_both(library, tmp_path):
    missing = tmp_path / "absent.conf"
    for binding in ("builtin", "pynvml"):
        facts = collect(library, binding, missing)
        assert facts["present"] is False and facts["reason"] == "NVIDIA kernel driver not loaded", (binding, facts)


def test_no_library_at_all(tmp_path):
    if ctypes.util.find_library("nvidia-ml"):
        pytest.skip("this machine has an NVIDIA driver library of its own")
    facts = collect(tmp_path, "builtin", tmp_path / "absent.conf")
    assert facts["present"] is False
    assert facts["reason"] == "NVML library libnvidia-ml.so.1 not found (no NVIDIA driver installed)"
