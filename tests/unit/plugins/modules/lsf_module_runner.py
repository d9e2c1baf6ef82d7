# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run an LSF module's main() with arguments and return its JSON result."""

import json

import pytest
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args


def run_module(module, capsys, check=False, diff=False, invocation=True, **args):
    """invocation=False: the result without its ``invocation`` (the arguments as the module saw them)."""
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    # warnings are collected process-wide; start each run with none
    ansible_warnings._global_warnings.clear()
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    result = json.loads(capsys.readouterr().out)
    if not invocation:
        result.pop("invocation", None)
    return result


def warning_texts(result):
    """The warning messages of a result (plain strings or 2.19 WarningSummary dicts)."""
    out = []
    for item in result.get("warnings", []):
        out.append(item["event"]["msg"] if isinstance(item, dict) else item)
    return out
