# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""site.yml's batches (the site_batches filter over module_utils/_site_batches.py), in a real ansible-playbook run
whose play takes its serial from the filter as site.yml's does: which hosts went through together."""

import re

import pytest
import yaml

from ansible_collections.hpc.gpu_containers.tests.unit.roles.playbook import run_playbook

DOCKER_HOSTS = ["reg", "n1", "n2", "n3", "n4"]


def _batches(tmp_path, live=(), clean=(), sources=False, args=(), serial=None):
    """Run two plays on five local hosts (reg is the registry): the first registers a stat of a path that exists
    on the ``live`` hosts (site.yml's docker.sock) and a fingerprint, clean on ``clean``; the second runs with
    the filter's serial and prints each batch. Returns the batches, in order."""
    (tmp_path / "sock").write_text("")
    inventory = {"all": {"hosts": {h: {"ansible_connection": "local"} for h in DOCKER_HOSTS}, "children": {
        "docker_hosts": {"hosts": {h: None for h in DOCKER_HOSTS}},
        "registry": {"hosts": {"reg": {"image_variants_sources": {"hpc/app": "x"} if sources else {}}}}}}}
    (tmp_path / "inv.yml").write_text(yaml.safe_dump(inventory))
    plays = [
        {"name": "Facts", "hosts": "docker_hosts", "gather_facts": False, "tasks": [
            {"name": "Socket", "ansible.builtin.stat": {"path": "{{ sock }}"}, "register": "docker_socket",
             "when": "not ansible_check_mode", "tags": ["always"],
             "vars": {"sock": "{{ '%s' if inventory_hostname in %s else '%s' }}" % (
                 tmp_path / "sock", list(live), tmp_path / "none")}},
            {"name": "Fingerprint", "ansible.builtin.set_fact": {
                "hpc_drift_fingerprint": {"clean": "{{ inventory_hostname in %s }}" % list(clean)}}, "tags": ["always"]}]},
        {"name": "Batches", "hosts": "registry:docker_hosts", "gather_facts": False,
         "serial": ["{{ plan.first }}", "{{ plan.rest }}"],
         "vars": {"plan": "{{ groups['docker_hosts'] | hpc.gpu_containers.site_batches(groups['registry'], hostvars,"
                          " 'docker_socket', check_mode=ansible_check_mode, run_tags=ansible_run_tags,"
                          " skip_tags=ansible_skip_tags, serial=%s) }}" % ("none" if serial is None else repr(serial))},
         "tasks": [{"name": "batch", "ansible.builtin.debug": {"msg": "BATCH {{ ansible_play_batch | join(',') }}"},
                    "run_once": True, "tags": ["always"]}]}]
    proc = run_playbook(tmp_path, plays, "-i", str(tmp_path / "inv.yml"), "--limit", "docker_hosts", *args)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return [batch.split(",") for batch in re.findall(r'"msg": "BATCH ([^"]*)"', proc.stdout)]


def test_a_live_cluster_with_changes_goes_registry_first_then_a_quarter(tmp_path):
    # 25% of five hosts is one host a batch.
    assert _batches(tmp_path, live=DOCKER_HOSTS) == [["reg"], ["n1"], ["n2"], ["n3"], ["n4"]]


def test_the_sites_serial_wins(tmp_path):
    assert _batches(tmp_path, live=DOCKER_HOSTS, serial=2) == [["reg"], ["n1", "n2"], ["n3", "n4"]]
    # Given, it applies on a new cluster too.
    assert _batches(tmp_path, serial=2) == [["reg"], ["n1", "n2"], ["n3", "n4"]]


def test_one_batch_when_nothing_can_be_restarted(tmp_path):
    # A new cluster (no engine anywhere) without an image catalogue.
    assert _batches(tmp_path) == [DOCKER_HOSTS]
    # Every host as its last full converge left it.
    assert _batches(tmp_path, live=DOCKER_HOSTS, clean=DOCKER_HOSTS) == [DOCKER_HOSTS]
    # Check mode restarts nothing.
    assert _batches(tmp_path, live=DOCKER_HOSTS, args=("--check",)) == [DOCKER_HOSTS]


def test_a_new_cluster_with_a_catalogue_builds_on_the_registry_first(tmp_path):
    assert _batches(tmp_path, sources=True) == [["reg"], ["n1", "n2", "n3", "n4"]]
    # A --tags run without images builds nothing.
    assert _batches(tmp_path, sources=True, args=("--tags", "docker")) == [DOCKER_HOSTS]


@pytest.mark.parametrize("changed", ["reg", "n3"])
def test_one_changed_host_is_enough_for_batches(tmp_path, changed):
    clean = [h for h in DOCKER_HOSTS if h != changed]
    assert _batches(tmp_path, live=DOCKER_HOSTS, clean=clean)[0] == ["reg"]
