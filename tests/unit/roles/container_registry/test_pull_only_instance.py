# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry's pull-only instance (container_registry_pull_users) as the role renders it, and the login Slurm jobs
get: the distribution registry's htpasswd authentication has no per-account rights, so the pull accounts are served
by a second instance in the registry's read-only mode (storage.maintenance.readonly), with an htpasswd file of their
own, and srun-docker's login is the first of them, for that instance only. The registry itself refusing a push with
that account is shown in molecule/slurm (the role checks it at every run too)."""

import json
from pathlib import Path

import jinja2
import yaml

ROLES = Path(__file__).resolve().parents[4] / "roles"
SETTINGS = {"ansible_managed": "Ansible managed", "container_registry_log_level": "info",
            "container_registry_storage_root": "/var/lib/docker-registry", "container_registry_delete_enabled": False,
            "container_registry_port": 5000, "container_registry_pull_port": 5001, "container_registry_insecure": False,
            "container_registry_tls_dir": "/etc/hpc-registry/tls", "container_registry_auth": True,
            "container_registry_realm": "hpc-registry", "__container_registry_config_dir": "/etc/docker/registry"}


def environment():
    # as Ansible's template module renders (its bool filter for the one this needs)
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, keep_trailing_newline=True)
    env.filters["bool"] = lambda value: value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
    return env


def render_config(**extra):
    text = (ROLES / "container_registry" / "templates" / "config.yml.j2").read_text()
    return environment().from_string(text).render(**dict(SETTINGS, **extra))


def test_pull_instance_is_read_only_with_its_own_accounts_and_port():
    config = yaml.safe_load(render_config(__container_registry_pull_instance=True))
    assert config["storage"]["maintenance"]["readonly"] == {"enabled": True}
    assert config["storage"]["maintenance"]["uploadpurging"] == {"enabled": False}
    assert config["http"]["addr"] == ":5001"
    assert config["auth"]["htpasswd"]["path"] == "/etc/docker/registry/htpasswd-pull"
    # the same storage and certificate as the main instance
    main = yaml.safe_load(render_config())
    assert config["storage"]["filesystem"] == main["storage"]["filesystem"]
    assert config["http"]["tls"] == main["http"]["tls"]


def test_main_instance_stays_writable_with_the_push_accounts():
    main = yaml.safe_load(render_config())
    assert "maintenance" not in main["storage"] and main["http"]["addr"] == ":5000"
    assert main["auth"]["htpasswd"]["path"] == "/etc/docker/registry/htpasswd"
    assert "pull-only" not in render_config()


def slurm_docker_default(name, **inventory):
    """A default of the slurm_docker role, evaluated as Ansible would with ``inventory``."""
    defaults = yaml.safe_load((ROLES / "slurm_docker" / "defaults" / "main.yml").read_text())
    env = environment()
    variables = dict(inventory, groups={"registry": ["slurm-ctl"]})

    def value(key):
        text = defaults[key]
        return env.from_string(text).render(**variables).strip() if isinstance(text, str) else text

    variables["slurm_docker_registry"] = value("slurm_docker_registry")
    variables["slurm_docker_pull_registry"] = value("slurm_docker_pull_registry")
    return value(name)


PUSH = [{"name": "hpcadmin", "password": "push-pw"}]
PULL = [{"name": "jobs", "password": "pull-pw"}]


def test_jobs_pull_with_the_first_pull_only_account_from_the_pull_instance():
    """Item 9: srun-docker's login is a pull-only account, for the read-only instance."""
    inventory = {"container_registry_users": PUSH, "container_registry_pull_users": PULL}
    assert slurm_docker_default("slurm_docker_registry_user", **inventory) == "jobs"
    assert slurm_docker_default("slurm_docker_registry_password", **inventory) == "pull-pw"
    assert slurm_docker_default("slurm_docker_pull_registry", **inventory) == "slurm-ctl:5001"
    inventory["container_registry_pull_address"] = "registry.example:6000"
    assert slurm_docker_default("slurm_docker_pull_registry", **inventory) == "registry.example:6000"
    # no pull-only account: the registry's login account, as before (the role warns)
    assert slurm_docker_default("slurm_docker_registry_user", container_registry_users=PUSH) == "hpcadmin"
    assert slurm_docker_default("slurm_docker_pull_registry", container_registry_users=PUSH) == ""


def test_the_login_file_names_the_pull_instance_only():
    tasks = yaml.safe_load((ROLES / "slurm_docker" / "tasks" / "node.yml").read_text())
    block = [t for t in tasks if t.get("name") == "The job side of a compute node"][0]["block"]
    (login,) = [t for t in block if t.get("name", "").startswith("Write the registry login")]
    assert "__slurm_docker_login_registry" in login["ansible.builtin.copy"]["content"]
    assert login.get("no_log") is True and login.get("diff") is False
    role_vars = yaml.safe_load((ROLES / "slurm_docker" / "vars" / "main.yml").read_text())
    rendered = environment().from_string(role_vars["__slurm_docker_login_registry"]).render(
        slurm_docker_pull_registry="slurm-ctl:5001", slurm_docker_registry="slurm-ctl:5000")
    assert json.loads(json.dumps(rendered)) == "slurm-ctl:5001"
