# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's vars/ outrank the inventory: a key there that looks like a role variable (``<role>_...``) is one an
admin sets in group_vars to no effect. Every key in roles/*/vars/ is internal (``__<role>_...``); what a site may
change lives in defaults/ and the role's argument spec."""

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[2] / "roles"
VARS_FILES = sorted(ROLES.glob("*/vars/*.yml"))


@pytest.mark.parametrize("path", VARS_FILES, ids=lambda p: "%s/%s" % (p.parts[-3], p.name))
def test_vars_keys_are_internal(path):
    role = path.parts[-3]
    keys = list(yaml.safe_load(path.read_text()) or {})
    public = [key for key in keys if not key.startswith("__%s_" % role)]
    assert not public, "%s: %s look like settings a site could change; name them __%s_..." % (
        path.relative_to(ROLES.parent), ", ".join(public), role)
