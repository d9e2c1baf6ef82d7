# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The owners the drift record names and the roles site.yml's drift check can scope to are the same names.

Each role names what it manages in a fact ``<role>_drift_items[_<entry>]``; site.yml records them with the owner
``<role>[_<entry>]`` and, in a check, runs only the roles that own what differs (docs/drift-fast-path.md). An
owner the playbook does not gate on would be left out of every scoped check (its drift missed); a gate with no
owner behind it never runs in one.
"""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "playbooks" / "site.yml"
ITEMS = re.compile(r"^([a-z_]+)_drift_items(_[a-z_]+)?$")
# Owners site.yml runs outside the list of __hpc_site_roles: the verification always (it owns what it pulls and
# runs, found again on every run), the LSF master's lsf_docker in a play of its own.
OUTSIDE_THE_LIST = {"container_verify", "lsf_docker"}


def _owners():
    owners = {}
    for path in sorted(ROOT.glob("roles/*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            for name in (task.get("ansible.builtin.set_fact") or task.get("set_fact") or {}):
                match = ITEMS.match(name)
                if match:
                    owners[match.group(1) + (match.group(2) or "")] = path.relative_to(ROOT)
    return owners


def _site_plays():
    return yaml.safe_load(SITE.read_text())


def _default_roles(plays):
    for play in plays:
        value = (play.get("vars") or {}).get("__hpc_site_roles")
        if value:
            return re.findall(r"'([a-z_]+)'", value.split("default(", 1)[1])
    raise AssertionError("site.yml sets no __hpc_site_roles")


def _gates():
    """Every name a ``'<name>' in __hpc_site_roles`` (or ``__hpc_site_drift_roles``) condition tests."""
    return set(re.findall(r"'([a-z_]+)' in __hpc_site_(?:drift_)?roles", SITE.read_text()))


def test_the_roles_name_their_items_as_owners():
    owners = _owners()
    assert {"docker_engine", "nvidia_container_runtime", "image_variants_node"} <= set(owners), owners


def test_every_owner_is_a_role_the_check_can_run_and_every_gate_an_owner():
    plays = _site_plays()
    owners, listed, gated = set(_owners()), _default_roles(plays), _gates()
    assert len(listed) == len(set(listed)), listed
    assert owners == set(listed) | OUTSIDE_THE_LIST, (sorted(owners), listed)
    assert gated == set(listed) | {"lsf_docker"}, (sorted(gated), listed)


def test_the_verification_is_never_left_out():
    tasks = [task for play in _site_plays() for task in play.get("tasks") or []
             if (task.get("ansible.builtin.include_role") or {}).get("name") == "hpc.gpu_containers.container_verify"]
    assert tasks and all("__hpc_site_roles" not in str(task.get("when")) for task in tasks), tasks
