# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registry's explicit insecure mode: reg-head serves it over plain HTTP with htpasswd auth, every
Docker host lists it in insecure-registries and is logged in, an image pushed from reg-head over HTTP
is pulled on reg-node. And an upstream registry (reg-upstream, NGC's stand-in): every Docker host trusts its
CA, is logged in as root and as lsfadmin, and pulls its two-architecture image by the index digest."""
from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
import testinfra
import testinfra.utils.ansible_runner
import yaml

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("docker_hosts")

SERVER = "reg-head"
CLIENT = "reg-node"
REGISTRY = "%s:5000" % SERVER


class _Loader(yaml.SafeLoader):
    """group_vars with its !vault values left closed (the tests need none of them)."""


_Loader.add_constructor("!vault", lambda loader, node: None)
_GROUP_VARS = yaml.load((Path(__file__).parents[1] / "group_vars" / "all.yml").read_text(), Loader=_Loader)
_ACCOUNT = _GROUP_VARS["container_registry_users"][0]
UPSTREAM = _GROUP_VARS["container_registry_upstreams"][0]["registry"]
UPSTREAM_IMAGE = "%s/nvidia/cuda" % UPSTREAM
# What prepare pushed: {"index": ..., "amd64": ..., "arm64": ...}
UPSTREAM_DIGESTS = json.loads(
    (Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "upstream" / "image.json").read_text())
USER, PASSWORD = _ACCOUNT["name"], _ACCOUNT["password"]
IMAGE = "%s/hpc/insecure:1" % REGISTRY

# Runs inside a node: GET a plain-HTTP registry URL, optional basic auth; prints status, scheme, body.
PROBE = r"""
import base64, json, sys, urllib.request, urllib.error
url, auth = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url)
if auth:
    req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
try:
    r = urllib.request.urlopen(req, timeout=20)
    print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.headers.get("WWW-Authenticate") or ""}))
"""


def node(name):
    return testinfra.get_host("ansible://%s?ansible_inventory=%s" % (name, INVENTORY))


def probe(host, path, auth=""):
    cmd = host.run("python3 -c %s %s %s", PROBE, "http://%s%s" % (REGISTRY, path), auth)
    assert cmd.rc == 0, cmd.stderr
    return json.loads(cmd.stdout)


def test_registry_serves_plain_http_with_auth(host):
    if host.backend.get_hostname() != SERVER:
        pytest.skip("not the registry host")
    assert host.service("docker-registry").is_running
    config = yaml.safe_load(host.file("/etc/docker/registry/config.yml").content_string)
    assert "tls" not in config["http"]
    assert config["http"]["addr"] == ":5000"
    assert config["auth"]["htpasswd"]["path"] == "/etc/docker/registry/htpasswd"
    # No cluster CA in this mode.
    assert not host.file("/etc/hpc-registry/tls/ca.crt").exists


def test_every_node_reaches_v2_over_http_with_auth(host):
    anonymous = probe(host, "/v2/")
    assert anonymous["status"] == 401 and "Basic" in anonymous["body"]
    assert probe(host, "/v2/", "%s:%s" % (USER, PASSWORD))["status"] == 200
    assert probe(host, "/v2/", "%s:wrong-password" % USER)["status"] == 401
    # Plain HTTP only: a TLS handshake on the port fails.
    tls = host.run("python3 -c %s", "import ssl, socket; ssl.create_default_context().wrap_socket("
                   "socket.create_connection(('%s', 5000), 10), server_hostname='%s')" % (SERVER, SERVER))
    assert tls.rc != 0 and "SSL" in tls.stderr


def test_every_node_lists_the_registry_as_insecure(host):
    daemon = json.loads(host.file("/etc/docker/daemon.json").content_string)
    assert daemon["insecure-registries"] == [REGISTRY]
    # The running daemon took it (reloaded), not only the file.
    info = json.loads(host.check_output("docker info --format '{{json .RegistryConfig.IndexConfigs}}'"))
    assert info[REGISTRY]["Secure"] is False
    assert not host.file("/etc/docker/certs.d/%s" % REGISTRY).exists
    auths = json.loads(host.file("/root/.docker/config.json").content_string)["auths"]
    assert REGISTRY in auths


def test_push_from_server_and_pull_on_client_over_http():
    server, client = node(SERVER), node(CLIENT)
    build = server.run(
        "set -e; d=$(mktemp -d); mkdir \"$d/bin\"; cp /bin/busybox \"$d/bin/busybox\"; "
        "ln -s busybox \"$d/bin/sh\"; tar -C \"$d\" -c . | docker import -c 'CMD [\"/bin/sh\", \"-c\", "
        "\"echo insecure-ok\"]' - %s; rm -rf \"$d\"" % IMAGE)
    assert build.rc == 0, build.stderr
    push = server.run("docker push %s", IMAGE)
    assert push.rc == 0, push.stderr
    catalog = probe(server, "/v2/_catalog", "%s:%s" % (USER, PASSWORD))
    assert "hpc/insecure" in json.loads(catalog["body"])["repositories"]

    client.run("docker image rm -f %s", IMAGE)
    pull = client.run("docker pull %s", IMAGE)
    assert pull.rc == 0, pull.stderr
    run = client.run("docker run --rm --network none %s", IMAGE)
    assert run.rc == 0 and "insecure-ok" in run.stdout, run.stderr
    # The registry's access log shows the client fetching the image's layers
    # (the manifest may be fetched by tag or by digest: the blob is certain).
    address = client.check_output("hostname -i").split()[0]
    log = server.run("journalctl -u docker-registry --no-pager -o cat")
    fetched = [line for line in log.stdout.splitlines()
               if line.startswith(address + " ") and '"GET /v2/hpc/insecure/blobs/sha256:' in line
               and '" 200 ' in line]
    assert fetched, log.stdout[-3000:]


def test_every_docker_host_trusts_and_is_logged_in_to_the_upstream(host):
    ca = host.file("/etc/docker/certs.d/%s/ca.crt" % UPSTREAM)
    assert ca.exists and ca.user == "root" and ca.mode == 0o644
    local_ca = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "upstream" / "ca.crt"
    assert ca.content_string == local_ca.read_text()
    for home, owner in (("/root", "root"), ("/home/lsfadmin", "lsfadmin")):
        docker_dir, config = host.file(home + "/.docker"), host.file(home + "/.docker/config.json")
        # the role gives an account of container_registry_login_users its directory; root's is Docker's own
        assert docker_dir.user == owner and (owner == "root" or docker_dir.mode == 0o700)
        assert (config.user, config.mode) == (owner, 0o600)
        auths = json.loads(host.run("cat %s", config.path).stdout)["auths"]
        # the site registry and the upstream, for each account
        assert {REGISTRY, UPSTREAM} <= set(auths), auths
        user = base64.b64decode(auths[UPSTREAM]["auth"]).decode().split(":", 1)[0]
        assert user == "$oauthtoken"


def test_upstream_refuses_an_anonymous_pull(host):
    anonymous = host.run("python3 -c %s %s", "import ssl, sys, urllib.request, urllib.error\n"
                         "ctx = ssl.create_default_context(cafile=sys.argv[1].split('|')[0])\n"
                         "try:\n urllib.request.urlopen(sys.argv[1].split('|')[1], context=ctx, timeout=20)\n"
                         "except urllib.error.HTTPError as e:\n print(e.code)",
                         "/etc/docker/certs.d/%s/ca.crt|https://%s/v2/nvidia/cuda/manifests/12.4.1-base"
                         % (UPSTREAM, UPSTREAM))
    assert anonymous.stdout.strip() == "401", anonymous.stdout + anonymous.stderr


def test_pull_upstream_image_by_index_digest_as_root_and_as_lsfadmin(host):
    reference = "%s@%s" % (UPSTREAM_IMAGE, UPSTREAM_DIGESTS["index"])
    for user in ("root", "lsfadmin"):
        host.run("docker image rm -f %s", reference)
        # each with its own ~/.docker (lsfadmin has no access to the daemon's socket here: the config it reads
        # is what is proved, and that it can read it)
        home = "/root" if user == "root" else "/home/lsfadmin"
        assert host.run("runuser -u %s -- test -r %s/.docker/config.json", user, home).rc == 0
        pull = host.run("docker --config %s/.docker pull %s", home, reference)
        assert pull.rc == 0, (user, pull.stdout, pull.stderr)
        assert UPSTREAM_DIGESTS["index"] in pull.stdout
    # the amd64 manifest of the index, picked for this host
    inspect = json.loads(host.check_output("docker image inspect %s", reference))[0]
    assert inspect["Architecture"] == "amd64"
    run = host.run("docker run --rm --network none %s", reference)
    assert run.rc == 0 and run.stdout.strip() == "amd64", run.stdout + run.stderr
