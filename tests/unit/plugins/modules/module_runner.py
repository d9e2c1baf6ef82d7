# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a module's main() with arguments and return its JSON result: the one module runner of the unit tests."""

import json

import pytest
from ansible.module_utils.common import warnings as ansible_warnings
from ansible.module_utils.testing import patch_module_args


def run_module(module, capsys, check=False, diff=False, invocation=True, with_rc=False, with_output=False, **args):
    """The JSON result of ``module.main()`` run with ``args``.

    check, diff: run in check mode, with diff. invocation=False: the result without its ``invocation`` (the
    arguments as the module saw them). with_rc: the exit status in the result's ``_rc``. with_output: return
    ``(result, stdout)``, for tests that search the whole output (a secret must not be in it)."""
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    # warnings are collected process-wide; start each run with none
    ansible_warnings._global_warnings.clear()
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            module.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    if not invocation:
        result.pop("invocation", None)
    if with_rc:
        result["_rc"] = exc.value.code
    return (result, out) if with_output else result


def warning_texts(result):
    """The warning messages of a result (plain strings or 2.19 WarningSummary dicts)."""
    out = []
    for item in result.get("warnings", []):
        out.append(item["event"]["msg"] if isinstance(item, dict) else item)
    return out
