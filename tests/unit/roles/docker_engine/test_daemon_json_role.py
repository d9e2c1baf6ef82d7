# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""docker_engine's daemon.json task and its reload-or-restart choice, run as the role writes them.

- The role's defaults fill in what a site's daemon.json lacks and never replace what it has (its own
  ``log-opts.max-size``); a value the inventory asks for (``docker_engine_daemon_settings``) still replaces it.
- A reloadable key that leaves daemon.json restarts dockerd (a reload keeps a key the file no longer has): the
  registry switched from plain HTTP to TLS (container_registry's client tasks, through docker_engine's restart
  entry point), and a site setting that deletes such a key.
"""

import json

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import (
    ROLES,
    debug_values,
    ok,
    role_defaults,
    role_task,
    run_playbook,
)

DEFAULTS = role_defaults("docker_engine")
MERGE_TASK = role_task("docker_engine", "main.yml", "Merge the daemon settings into daemon.json")
CHOOSE_TASK = role_task("docker_engine", "restart.yml", "Choose between a reload and a restart")

# A site's own daemon.json, as sites write it: small logs on a node with a small root disk, no live restore.
SITE = '{\n  "log-driver": "json-file",\n  "log-opts": {"max-size": "10m"},\n  "live-restore": false\n}\n'


def merge_play(path, extra_vars=None):
    task = dict(MERGE_TASK, register="merged")
    variables = {key: DEFAULTS[key] for key in ("docker_engine_daemon_defaults", "docker_engine_daemon_settings",
                                                "docker_engine_daemon_list_merge", "docker_engine_daemon_backup")}
    variables["docker_engine_daemon_json_path"] = str(path)
    variables.update(extra_vars or {})
    return [{"name": "daemon.json", "hosts": "all", "gather_facts": False, "vars": variables,
             "vars_files": [str(ROLES / "docker_engine" / "vars" / "main.yml")],
             "tasks": [task, {"name": "value: merged", "ansible.builtin.debug": {"msg": "{{ merged }}"}}]}]


def test_role_defaults_keep_a_sites_own_log_size_and_live_restore(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(SITE)
    proc = ok(run_playbook(tmp_path, merge_play(path)))
    merged = json.loads(path.read_text())
    assert merged["log-opts"]["max-size"] == "10m"
    assert merged["live-restore"] is False
    # what the file lacked is filled in from the role's defaults
    assert merged["log-opts"]["max-file"] == "5"
    assert debug_values(proc)["merged"]["changed_keys"] == ["log-opts.max-file"]
    before = path.read_text()
    ok(run_playbook(tmp_path, merge_play(path)))
    assert path.read_text() == before


def test_a_value_the_inventory_asks_for_still_replaces_the_sites(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text(SITE)
    ok(run_playbook(tmp_path, merge_play(path, {"docker_engine_daemon_settings": {"log-opts": {"max-size": "50m"},
                                                                                  "live-restore": True}})))
    merged = json.loads(path.read_text())
    assert merged["log-opts"] == {"max-size": "50m", "max-file": "5"}
    assert merged["live-restore"] is True


def test_a_fresh_node_gets_every_default(tmp_path):
    path = tmp_path / "daemon.json"
    ok(run_playbook(tmp_path, merge_play(path)))
    assert json.loads(path.read_text()) == DEFAULTS["docker_engine_daemon_defaults"]


def test_log_options_of_the_default_driver_are_not_put_under_a_sites_other_driver(tmp_path):
    path = tmp_path / "daemon.json"
    path.write_text('{"log-driver": "journald"}\n')
    ok(run_playbook(tmp_path, merge_play(path)))
    merged = json.loads(path.read_text())
    assert merged == {"log-driver": "journald", "live-restore": True}


# -- reload or restart ---------------------------------------------------------------------------------------


def choose(tmp_path, keys, removed, packages=()):
    variables = {key: DEFAULTS[key] for key in ("docker_engine_reload_keys", "docker_engine_reload_clears_keys")
                 if key in DEFAULTS}
    variables.update({"__docker_engine_service_now": {"status": {"ActiveState": "active"}},
                      "docker_engine_restart_keys": list(keys), "docker_engine_restart_removed_keys": list(removed),
                      "docker_engine_restart_packages": list(packages)})
    proc = ok(run_playbook(tmp_path, [{
        "name": "choose", "hosts": "all", "gather_facts": False, "vars": variables,
        "tasks": [CHOOSE_TASK, {"name": "value: kind", "ansible.builtin.debug": {"msg": "{{ __docker_engine_restart_kind }}"}}]}]))
    return debug_values(proc)["kind"]


@pytest.mark.parametrize("key", ["insecure-registries", "registry-mirrors", "labels", "debug", "live-restore",
                                 "default-runtime", "runtimes", "shutdown-timeout", "authorization-plugins",
                                 "default-shm-size", "allow-nondistributable-artifacts"])
def test_a_reloadable_key_that_leaves_the_file_restarts(tmp_path, key):
    assert choose(tmp_path, [key], [key]) == "restart"


@pytest.mark.parametrize("keys, removed, kind", [
    (["insecure-registries"], [], "reload"),                      # a registry added, or one of several taken out
    (["runtimes.nvidia", "default-runtime"], [], "reload"),
    (["runtimes.legacy"], ["runtimes.legacy"], "reload"),          # runtimes stays: the reload replaces the set
    (["max-concurrent-downloads"], ["max-concurrent-downloads"], "reload"),  # a reload puts the default back
    (["features"], ["features"], "reload"),
    (["data-root"], [], "restart"),
])
def test_what_a_reload_applies_is_reloaded(tmp_path, keys, removed, kind):
    assert choose(tmp_path, keys, removed) == kind


def test_the_registry_switched_to_tls_restarts_dockerd(tmp_path):
    """container_registry's client tasks, as written: the removal and the include of docker_engine's restart entry
    point, whose restart.yml here is the decision task of the real one."""
    path = tmp_path / "daemon.json"
    path.write_text('{\n    "insecure-registries": ["head01:5000"],\n    "live-restore": true\n}\n')
    add = role_task("container_registry", "client.yml", "List the registry as insecure (plain HTTP) for Docker")
    remove = role_task("container_registry", "client.yml", "Take the registry out of Docker's insecure registries (it serves TLS)")
    include = role_task("container_registry", "client.yml", "Reload or restart Docker for its registry settings")
    (tmp_path / "restart.yml").write_text(json.dumps([CHOOSE_TASK, {
        "name": "value: kind", "ansible.builtin.debug": {"msg": "{{ __docker_engine_restart_kind }}"}}]))
    include.pop("ansible.builtin.include_role")
    include["ansible.builtin.include_tasks"] = str(tmp_path / "restart.yml")
    variables = {key: DEFAULTS[key] for key in ("docker_engine_reload_keys", "docker_engine_reload_clears_keys")
                 if key in DEFAULTS}
    variables.update({"container_registry_insecure": False, "container_registry_address": "head01:5000",
                      "docker_engine_daemon_json_path": str(path),
                      "__docker_engine_service_now": {"status": {"ActiveState": "active"}}})
    proc = ok(run_playbook(tmp_path, [{"name": "client", "hosts": "all", "gather_facts": False, "vars": variables,
                                       "tasks": [add, remove, include]}]))
    assert json.loads(path.read_text()) == {"live-restore": True}
    assert debug_values(proc)["kind"] == "restart"


# -- real published files ----------------------------------------------------------------------------------

PUBLISHED = ROLES.parent / "tests" / "fixtures" / "daemon_json" / "published"


@pytest.mark.parametrize("name, added", [
    ("ebl-infrastructure.json", {"live-restore": True}),
    ("dogvscat.json", {"log-driver": "json-file", "log-opts": {"max-size": "100m", "max-file": "5"},
                       "live-restore": True}),
])
def test_published_site_files_keep_their_values_and_lines(tmp_path, name, added):
    original = (PUBLISHED / name).read_text()
    path = tmp_path / "daemon.json"
    path.write_text(original)
    ok(run_playbook(tmp_path, merge_play(path)))
    text = path.read_text()
    assert json.loads(text) == dict(json.loads(original), **added)
    kept = [line for line in original.splitlines() if line.strip() not in ("{", "}")]
    assert all(line in text.splitlines() or line + "," in text.splitlines() for line in kept), text
