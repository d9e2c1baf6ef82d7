# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make demo` (tools/demo.sh) runs molecule/default/prepare.yml with ansible-playbook, without molecule: the
playbooks it imports must not need the variables only molecule sets (MOLECULE_PROJECT_DIRECTORY, ...), or the
README's first command fails (a shared stand-in playbook once did: its build script became /molecule/...)."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
# What tools/demo.sh exports itself (its stage directory, molecule's ephemeral one).
DEMO_SETS = {"MOLECULE_EPHEMERAL_DIRECTORY"}


def demo_playbooks():
    """The playbooks tools/demo.sh runs from molecule/, with every playbook they import."""
    demo = (ROOT / "tools" / "demo.sh").read_text()
    todo = [ROOT / path for path in re.findall(r"ansible-playbook [^\n]*?(molecule/\S+\.yml)", demo)]
    assert todo, "tools/demo.sh runs no molecule/ playbook"
    seen = []
    while todo:
        path = todo.pop().resolve()
        if path in seen:
            continue
        seen.append(path)
        for play in yaml.safe_load(path.read_text()) or []:
            imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
            if imported:
                todo.append(path.parent / imported)
    return seen


def test_demo_playbooks_need_no_variable_only_molecule_sets():
    playbooks = demo_playbooks()
    assert any(path.name == "driver.yml" for path in playbooks), [str(path) for path in playbooks]
    for path in playbooks:
        used = set(re.findall(r"\b(MOLECULE_[A-Z_]+)\b", path.read_text())) - DEMO_SETS
        assert not used, "%s reads %s, which tools/demo.sh does not set" % (path.relative_to(ROOT), sorted(used))


def test_paths_from_playbook_dir_exist():
    """An imported playbook's playbook_dir is its own directory: every path a demo playbook builds from it exists."""
    for path in demo_playbooks():
        for rest in re.findall(r"\{\{ playbook_dir \}\}([^\"' ]*)", path.read_text()):
            assert (path.parent / ("." + rest)).exists(), "%s: {{ playbook_dir }}%s" % (path.relative_to(ROOT), rest)
