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


def _registered(role_dir):
    names = set()
    for path in role_dir.glob("**/*.yml"):
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith("register:"):
                names.add(stripped.split(":", 1)[1].strip())
    return names


@pytest.mark.parametrize("role", sorted({p.parts[-3] for p in VARS_FILES}))
def test_no_registered_result_takes_a_vars_name(role):
    # A task that registers under a vars/ name replaces that value for the rest of the play (a package list
    # became a package_info result once, and the next task installed a dict).
    keys = set()
    for path in (ROLES / role / "vars").glob("*.yml"):
        keys |= set(yaml.safe_load(path.read_text()) or {})
    clash = sorted(keys & _registered(ROLES / role))
    assert not clash, "roles/%s registers results under its vars/ names: %s" % (role, ", ".join(clash))
