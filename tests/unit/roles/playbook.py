# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run tasks of the collection's roles, as they are written there, with ansible-playbook on localhost; render a
role's program templates (a program's source in files/, its site values added by the template)."""

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = ROOT / "roles"


def role_task(role, tasks_file, name):
    """The task called ``name`` in ``roles/<role>/tasks/<tasks_file>`` (blocks searched), as a fresh copy."""
    def walk(tasks):
        for task in tasks or []:
            if task.get("name") == name:
                return task
            for key in ("block", "rescue", "always"):
                found = walk(task.get(key))
                if found:
                    return found
        return None
    task = walk(yaml.safe_load((ROLES / role / "tasks" / tasks_file).read_text()))
    assert task is not None, "%s/%s has no task %r" % (role, tasks_file, name)
    return copy.deepcopy(task)


def render_role_template(role, template, **variables):
    """``roles/<role>/templates/<template>`` rendered as Ansible renders it for the role's program files: the
    to_json and bool filters, and the file lookup of the role's files/ (trailing whitespace stripped)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["to_json"] = json.dumps
    env.filters["bool"] = lambda value: value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")

    def lookup(plugin, name):
        assert plugin == "ansible.builtin.file", plugin
        return (ROLES / role / "files" / name).read_text().rstrip()
    variables.setdefault("ansible_managed", "Ansible managed")
    return env.from_string((ROLES / role / "templates" / template).read_text()).render(lookup=lookup, **variables)


def import_role_program(role, source, name=None):
    """A role's program source (``roles/<role>/files/<source>``), imported as a module under ``name``."""
    spec = importlib.util.spec_from_file_location(name or Path(source).stem, ROLES / role / "files" / source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def role_defaults(role):
    return yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text())


def run_playbook(workdir, plays, *args, env=None):
    """Run ``plays`` (a list of dicts) on localhost, with ``env`` added to the environment; return the process."""
    workdir = Path(workdir)
    playbook = workdir / ("play-%d.yml" % len(list(workdir.glob("play-*.yml"))))
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False, allow_unicode=True))
    extra, env = env, dict(os.environ)
    env.update({"ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
                "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_ROLES_PATH": str(ROLES)})
    for key in ("HPC_DRIFT_REPORT_JSON", "ANSIBLE_CALLBACKS_ENABLED"):
        env.pop(key, None)
    env.update(extra or {})
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook), *args]
    return subprocess.run(cmd, env=env, cwd=str(workdir), capture_output=True, text=True, timeout=300, check=False)


def ok(proc):
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def debug_values(proc):
    """The ``msg`` of every debug task whose name starts with ``value:``, in order, as ``{name: msg}``."""
    out = {}
    for name, body in re.findall(r"TASK \[value: ([^\]]+)\] \*+\n(.*?)(?=\nTASK |\nPLAY RECAP)", proc.stdout, re.S):
        match = re.search(r'"msg": (.*)\n}', body, re.S)
        out[name] = yaml.safe_load(match.group(1)) if match else None
    return out
