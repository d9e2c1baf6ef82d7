# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The private registry of the default scenario: head serves it with TLS and auth, every node trusts it,
logged in, and holds the verification image pulled through it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import testinfra.utils.ansible_runner
import yaml

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts(
    os.environ.get("REGISTRY_CLIENTS", "all"))

REGISTRY_HOST = os.environ.get("REGISTRY_HOST", "head")
REGISTRY = "%s:5000" % REGISTRY_HOST
# The scenario's test account (group_vars/all.yml: container_registry_users), overridable for other beds.
_ACCOUNT = (yaml.safe_load((Path(__file__).parents[1] / "group_vars" / "all.yml").read_text())
            .get("container_registry_users") or [{}])[0]
USER = os.environ.get("REGISTRY_USER", _ACCOUNT.get("name", "hpc"))
PASSWORD = os.environ.get("REGISTRY_PASSWORD", _ACCOUNT.get("password", ""))
IMAGE = "%s/hpc/verify:1" % REGISTRY
CA = "/etc/docker/certs.d/%s/ca.crt" % REGISTRY

# Runs inside a node: GET a registry URL with the node's trusted CA, optional basic auth; prints status and body.
PROBE = r"""
import base64, json, ssl, sys, urllib.request, urllib.error
url, ca, auth = sys.argv[1], sys.argv[2], sys.argv[3]
req = urllib.request.Request(url)
if auth:
    req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
try:
    r = urllib.request.urlopen(req, context=ssl.create_default_context(cafile=ca), timeout=20)
    print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.headers.get("WWW-Authenticate") or ""}))
"""


def probe(host, path, auth=""):
    cmd = host.run("python3 -c %s %s %s %s", PROBE, "https://%s%s" % (REGISTRY, path), CA, auth)
    assert cmd.rc == 0, cmd.stderr
    return json.loads(cmd.stdout)


def is_registry(host):
    return host.backend.get_hostname() == REGISTRY_HOST


def test_registry_service(host):
    if not is_registry(host):
        pytest.skip("not the registry host")
    service = host.service("docker-registry")
    assert service.is_running and service.is_enabled
    assert host.socket("tcp://0.0.0.0:5000").is_listening or host.socket("tcp://:::5000").is_listening
    config = host.file("/etc/docker/registry/config.yml").content_string
    assert "certificate: /etc/hpc-registry/tls/server.crt" in config
    assert "path: /etc/docker/registry/htpasswd" in config
    htpasswd = host.file("/etc/docker/registry/htpasswd")
    assert htpasswd.mode == 0o640
    assert htpasswd.content_string.startswith("%s:$2" % USER)  # bcrypt, the only scheme the registry reads
    assert host.file("/etc/hpc-registry/tls/ca.key").mode == 0o600


def test_every_node_trusts_and_uses_the_registry(host):
    assert host.file(CA).is_file
    anonymous = probe(host, "/v2/")
    assert anonymous["status"] == 401 and "Basic" in anonymous["body"]
    assert probe(host, "/v2/", "%s:%s" % (USER, PASSWORD))["status"] == 200
    assert probe(host, "/v2/", "%s:wrong-password" % USER)["status"] == 401
    catalog = probe(host, "/v2/_catalog", "%s:%s" % (USER, PASSWORD))
    assert "hpc/verify" in json.loads(catalog["body"])["repositories"]


def test_every_node_holds_the_verification_image_from_the_registry(host):
    auths = json.loads(host.file("/root/.docker/config.json").content_string)["auths"]
    assert REGISTRY in auths
    inspect = host.run("docker image inspect %s", IMAGE)
    assert inspect.rc == 0, inspect.stderr
    image = json.loads(inspect.stdout)[0]
    assert any(d.startswith("%s/hpc/verify@sha256:" % REGISTRY) for d in image["RepoDigests"])
    run = host.run("docker run --rm --network none %s", IMAGE)
    assert run.rc == 0 and "hpc-verify: 1" in run.stdout
    assert "arch=%s" % host.system_info.arch in run.stdout
