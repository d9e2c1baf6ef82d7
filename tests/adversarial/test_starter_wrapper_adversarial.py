# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF Docker starter wrapper against a hostile job environment, one variable at a time.

The wrapper is rendered from the role's template and run for real, as LSF runs it (as the Docker driver's
user, in the docker group, with the submitter's environment); a recording docker-starter.py at the fixed
LSF_SERVERDIR stands in for LSF's driver. Helpers come from the unit test of the same wrapper.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

_UNIT = Path(__file__).resolve().parents[1] / "unit" / "roles" / "lsf_docker" / "test_starter_wrapper.py"
_spec = importlib.util.spec_from_file_location("_starter_wrapper_unit", _UNIT)
unit = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = unit
_spec.loader.exec_module(unit)
wrapper = unit.wrapper

# Each changes what a program started with that environment loads or runs.
DANGEROUS = ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_DEBUG_OUTPUT", "LD_PROFILE", "PYTHONPATH",
             "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONWARNINGS", "PYTHONBREAKPOINT",
             "BASH_ENV", "ENV", "IFS", "CDPATH", "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES",
             "RESOLV_HOST_CONF", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "GLIBC_TUNABLES",
             "MALLOC_CHECK_", "DYLD_INSERT_LIBRARIES", "BASH_FUNC_module%%", "BASH_FUNC_ml()"]


@pytest.mark.parametrize("name", DANGEROUS)
def test_dangerous_variable_never_reaches_the_driver(wrapper, tmp_path, name):
    _path, run = wrapper()
    value = str(tmp_path / "evil") if not name.startswith("BASH_FUNC_") else "() { echo evil; }"
    seen = run({name: value, "KEEP_ME": "1"})
    assert name not in seen["env"]
    assert seen["env"]["KEEP_ME"] == "1"


@pytest.mark.parametrize("serverdir", ["/tmp", "relative/dir", "", "$(touch /tmp/x)", "/nonexistent"])
def test_lsf_serverdir_from_the_job_is_never_used(wrapper, tmp_path, serverdir):
    _path, run = wrapper()
    seen = run({"LSF_SERVERDIR": serverdir})
    assert seen["argv"][0] == str(tmp_path / "serverdir" / "docker-starter.py")


@pytest.mark.parametrize("allocation, expected", [
    ("0,0", "0,0"),                       # passed as LSF gave it; the runtime refuses what is not a GPU
    ("all", "all"),                       # never produced by LSF; documented as the runtime's to judge
    (",,", "void"),
    (" , ", "void"),
    ("GPU-x;rm -rf /", "GPU-x;rm -rf /"),  # one environment value, never a shell word
])
def test_odd_allocations_stay_one_value(wrapper, allocation, expected):
    _path, run = wrapper()
    assert run({"CUDA_VISIBLE_DEVICES": allocation})["env"]["NVIDIA_VISIBLE_DEVICES"] == expected


def test_an_exported_function_with_newlines_and_a_restrictive_umask(wrapper):
    _path, run = wrapper()
    seen = run({"BASH_FUNC_ml%%": "() {  eval $(lmod ml)\n}", "HOME": "/home/u"})
    assert not [name for name in seen["env"] if name.startswith("BASH_FUNC_")]
    assert seen["umask"] == 0o022
