# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""registry_image_index through AnsibleModule against a registry served over HTTP in the test process.

The registry speaks the part of the distribution API the module uses (manifests by tag or digest, GET
and PUT, with Accept negotiation: a client that does not accept an index gets the amd64 entry, as the
distribution registry answers; blobs; basic authentication). Images are pushed the way ``docker push``
pushes them: a config blob and a Docker v2 manifest under a tag.
"""

import base64
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_index as model
from ansible_collections.hpc.gpu_containers.plugins.module_utils import _registry_api
from ansible_collections.hpc.gpu_containers.plugins.modules import registry_image_index
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

REPO = "hpc/verify"
AUTH = "Basic " + base64.b64encode(b"hpcadmin:s3cret-pw").decode()


class FakeRegistry:
    def __init__(self):
        self.manifests = {}  # digest -> (media type, bytes)
        self.tags = {}  # tag -> digest
        self.blobs = {}
        self.requests = []
        # token authentication (the registry token specification, as Harbor, GitLab and Quay have it): the
        # registry accepts only tokens its token service (/token here) issued for the request's scope
        self.token_auth = False
        self.tokens = {}  # token -> the actions it grants
        self.token_requests = []
        # HTTP codes to answer the next requests with, one each, before serving again (a registry under load)
        self.failures = []

    def push_image(self, tag, arch, salt=""):
        config = json.dumps({"architecture": arch, "os": "linux", "rootfs": {"salt": salt}}).encode()
        config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
        self.blobs[config_digest] = config
        body = json.dumps({"schemaVersion": 2, "mediaType": model.DOCKER_MANIFEST,
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                                      "digest": config_digest, "size": len(config)}, "layers": []}).encode()
        digest = model.digest_of(body)
        self.manifests[digest] = (model.DOCKER_MANIFEST, body)
        self.tags[tag] = digest
        return config_digest

    def document(self, tag):
        return json.loads(self.manifests[self.tags[tag]][1])


@pytest.fixture
def registry():
    state = FakeRegistry()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, code, body=b"", media_type="application/json", digest=None):
            self.send_response(code)
            self.send_header("Content-Type", media_type)
            self.send_header("Content-Length", str(len(body)))
            if digest:
                self.send_header("Docker-Content-Digest", digest)
            self.end_headers()
            self.wfile.write(body)

        def _token(self):
            query = parse_qs(urlsplit(self.path).query)
            state.token_requests.append((self.headers.get("Authorization"), query))
            if self.headers.get("Authorization") != AUTH:
                self._answer(401, b'{"details":"incorrect username or password"}')
                return
            token = "tok-%d" % (len(state.tokens) + 1)
            state.tokens[token] = set(query["scope"][0].rsplit(":", 1)[1].split(","))
            self._answer(200, json.dumps({"token": token, "expires_in": 300}).encode())

        def _authorized(self):
            if not state.token_auth:
                return self.headers.get("Authorization") == AUTH
            scheme, _sep, token = (self.headers.get("Authorization") or "").partition(" ")
            need = "push" if self.command == "PUT" else "pull"
            return scheme == "Bearer" and need in state.tokens.get(token, ())

        def _route(self):
            state.requests.append((self.command, self.path, self.headers.get("Accept")))
            if state.failures:
                self._answer(state.failures.pop(0), b'{"errors":[{"code":"UNAVAILABLE"}]}')
                return None
            if not self._authorized():
                self.send_response(401)
                if state.token_auth:
                    actions = "pull,push" if self.command == "PUT" else "pull"
                    self.send_header("WWW-Authenticate", 'Bearer realm="http://%s/token",service="fake",scope='
                                     '"repository:%s:%s"' % (state.address, REPO, actions))
                else:
                    self.send_header("WWW-Authenticate", 'Basic realm="fake"')
                body = b'{"errors":[{"code":"UNAUTHORIZED"}]}'
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return None
            prefix = "/v2/%s/" % REPO
            if not self.path.startswith(prefix):
                self._answer(404, b'{"errors":[{"code":"NAME_UNKNOWN"}]}')
                return None
            return self.path[len(prefix):].split("/", 1)

        def do_GET(self):
            if self.path.startswith("/token"):
                self._token()
                return
            route = self._route()
            if route is None:
                return
            kind, ref = route
            if kind == "blobs":
                if ref in state.blobs:
                    self._answer(200, state.blobs[ref], "application/octet-stream")
                else:
                    self._answer(404, b'{"errors":[{"code":"BLOB_UNKNOWN"}]}')
                return
            digest = state.tags.get(ref, ref)
            if digest not in state.manifests:
                self._answer(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
                return
            media_type, body = state.manifests[digest]
            accept = self.headers.get("Accept") or ""
            if media_type in model.INDEX_TYPES and media_type not in accept:
                digest = next(e["digest"] for e in json.loads(body)["manifests"]
                              if e["platform"]["architecture"] == "amd64")
                media_type, body = state.manifests[digest]
            self._answer(200, body, media_type, digest)

        def do_PUT(self):
            route = self._route()
            if route is None:
                return
            _kind, tag = route
            body = self.rfile.read(int(self.headers["Content-Length"]))
            media_type = self.headers["Content-Type"]
            document = json.loads(body)
            for child in document.get("manifests", []):
                if child["digest"] not in state.manifests:
                    self._answer(400, b'{"errors":[{"code":"MANIFEST_BLOB_UNKNOWN"}]}')
                    return
            digest = model.digest_of(body)
            state.manifests[digest] = (media_type, body)
            state.tags[tag] = digest
            self._answer(201, b"", digest=digest)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.address = "127.0.0.1:%d" % server.server_address[1]
    yield state
    server.shutdown()
    server.server_close()


def run(capsys, registry, check=False, diff=False, **args):
    params = dict(registry=registry.address, repository=REPO, tag="1", insecure=True, username="hpcadmin",
                  password="s3cret-pw", _ansible_check_mode=check, _ansible_diff=diff)
    params.update(args)
    return run_module(registry_image_index, capsys, with_output=True, **params)


def test_two_architectures_built_apart_end_in_one_index(registry, capsys):
    amd = registry.push_image("1-amd64", "amd64")
    ppc = registry.push_image("1-ppc64le", "ppc64le")
    res, _out = run(capsys, registry, images=["1-amd64"])
    assert res["changed"] and res["platforms"] == ["linux/amd64"] and res["changed_platforms"] == ["linux/amd64"]
    res, _out = run(capsys, registry, images=["1-ppc64le"])
    assert res["changed"] and res["platforms"] == ["linux/amd64", "linux/ppc64le"]
    index = registry.document("1")
    assert index["mediaType"] == model.DOCKER_LIST
    assert [e["platform"]["architecture"] for e in index["manifests"]] == ["amd64", "ppc64le"]
    assert res["digest"] == registry.tags["1"]
    # each node gets its own architecture's image, by configuration digest (the image id after a pull)
    res, _out = run(capsys, registry, architecture="x86_64")
    assert res["changed"] is False and res["image"]["config_digest"] == amd
    assert res["image"]["platform"] == "linux/amd64"
    res, _out = run(capsys, registry, architecture="ppc64le")
    assert res["image"]["config_digest"] == ppc and res["image"]["digest"] == registry.tags["1-ppc64le"]


def test_a_rerun_changes_nothing_and_pushes_nothing(registry, capsys):
    registry.push_image("1-amd64", "amd64")
    run(capsys, registry, images=["1-amd64"])
    before = dict(registry.tags)
    del registry.requests[:]
    res, _out = run(capsys, registry, images=["1-amd64"], diff=True)
    assert res["changed"] is False and registry.tags == before
    assert not [r for r in registry.requests if r[0] == "PUT"]
    assert res["diff"]["before"] == res["diff"]["after"] == "linux/amd64\n"


def test_check_mode_predicts_and_pushes_nothing(registry, capsys):
    registry.push_image("1-amd64", "amd64")
    res, _out = run(capsys, registry, check=True, diff=True, images=["1-amd64", "1-ppc64le"])
    assert res["changed"] is True and "1" not in registry.tags
    assert res["changed_platforms"] == ["linux/amd64", "(1-ppc64le, not pushed yet)"]
    assert res["diff"]["before"] == "" and res["diff"]["after"] == "linux/amd64\n"


def test_a_node_whose_architecture_is_missing_fails_with_what_the_index_has(registry, capsys):
    registry.push_image("1-amd64", "amd64")
    run(capsys, registry, images=["1-amd64"])
    res, _out = run(capsys, registry, architecture="ppc64le")
    assert res["failed"] is True
    assert res["msg"].startswith("%s/hpc/verify:1 has no image for linux/ppc64le (it has: linux/amd64)"
                                 % registry.address)
    assert res["platforms"] == ["linux/amd64"]


def test_a_single_image_tag_is_read_and_then_replaced_by_the_index(registry, capsys):
    amd = registry.push_image("1", "amd64")
    res, _out = run(capsys, registry)
    assert res["image"] == {"platform": "linux/amd64", "digest": registry.tags["1"], "config_digest": amd}
    res, _out = run(capsys, registry, architecture="ppc64le")
    assert res["failed"] and "has no image for linux/ppc64le (it has: linux/amd64)" in res["msg"]
    registry.push_image("1-amd64", "amd64")
    res, _out = run(capsys, registry, images=["1-amd64"])
    assert res["changed"] and registry.manifests[registry.tags["1"]][0] == model.DOCKER_LIST


def test_the_index_is_asked_for_with_the_index_types_accepted(registry, capsys):
    registry.push_image("1-amd64", "amd64")
    registry.push_image("1-ppc64le", "ppc64le")
    run(capsys, registry, images=["1-amd64", "1-ppc64le"])
    del registry.requests[:]
    res, _out = run(capsys, registry, architecture="ppc64le")
    assert res["platforms"] == ["linux/amd64", "linux/ppc64le"]  # not the amd64 entry a plain client gets
    first = registry.requests[0]
    assert first[:2] == ("GET", "/v2/hpc/verify/manifests/1") and model.DOCKER_LIST in first[2]


def test_a_tag_to_add_that_is_missing_fails_outside_check_mode(registry, capsys):
    res, _out = run(capsys, registry, images=["1-ppc64le"])
    assert res["failed"] and "1-ppc64le is not in the registry: push it before" in res["msg"]
    assert "1" not in registry.tags


def test_a_wrong_password_is_named_and_the_password_never_shown(registry, capsys):
    res, out = run(capsys, registry, password="wrong-pw-123", architecture="x86_64")
    assert res["failed"] and "HTTP 401 (check the registry account)" in res["msg"]
    assert "wrong-pw-123" not in out and "s3cret-pw" not in out


def test_an_unreachable_registry_is_a_clear_error(capsys):
    params = dict(registry="127.0.0.1:9", repository=REPO, tag="1", insecure=True, timeout=3)
    res = run_module(registry_image_index, capsys, **params)
    assert res["failed"] and res["msg"].startswith("GET http://127.0.0.1:9/v2/hpc/verify/manifests/1: ")


VARIANT_FEATURES = {"dl-cuda12-sm80-v4": ["x86-64-v4", "cuda12.2", "sm_80"],
                    "dl-cuda12-sm80": ["x86-64-v2", "cuda12.2", "sm_80"],
                    "dl-cuda11-sm70": ["cuda11.0", "sm_70", "compute_70"]}


def test_variants_of_one_architecture_stand_side_by_side_by_their_features(registry, capsys):
    for salt, tag in enumerate(VARIANT_FEATURES):
        registry.push_image(tag, "amd64", salt=str(salt))
    res, _out = run(capsys, registry, tag="dl", images=list(VARIANT_FEATURES), features=VARIANT_FEATURES)
    assert res["changed"] and res["platforms"] == [
        "linux/amd64+compute_70,cuda11.0,sm_70", "linux/amd64+cuda12.2,sm_80,x86-64-v2",
        "linux/amd64+cuda12.2,sm_80,x86-64-v4"]
    index = registry.document("dl")
    by_digest = {entry["digest"]: entry["platform"] for entry in index["manifests"]}
    assert by_digest[registry.tags["dl-cuda12-sm80-v4"]] == {
        "architecture": "amd64", "os": "linux", "features": ["cuda12.2", "sm_80", "x86-64-v4"]}
    # the same again changes nothing; another feature set for one variant replaces that entry only
    res, _out = run(capsys, registry, tag="dl", images=list(VARIANT_FEATURES), features=VARIANT_FEATURES)
    assert res["changed"] is False
    features = dict(VARIANT_FEATURES, **{"dl-cuda12-sm80": ["x86-64-v3", "cuda12.2", "sm_80"]})
    res, _out = run(capsys, registry, tag="dl", images=["dl-cuda12-sm80"], features={"dl-cuda12-sm80": features["dl-cuda12-sm80"]})
    assert res["changed_platforms"] == ["linux/amd64+cuda12.2,sm_80,x86-64-v3"]
    assert len(res["platforms"]) == 4  # the old x86-64-v2 entry stays until it is replaced by its own key


def test_features_of_a_tag_not_listed_or_not_a_word_fail(registry, capsys):
    registry.push_image("dl-a", "amd64")
    res, _out = run(capsys, registry, tag="dl", images=["dl-a"], features={"dl-b": ["sm_80"]})
    assert res["failed"] and res["msg"] == "features: dl-b not in images (dl-a)"
    res, _out = run(capsys, registry, tag="dl", images=["dl-a"], features={"dl-a": ["sm_80,sm_90"]})
    assert res["failed"] and "a feature is one word" in res["msg"]
    assert "dl" not in registry.tags


def test_a_registry_with_token_authentication_gets_a_token_per_scope(registry, capsys):
    """Harbor, GitLab and Quay answer 401 with a Bearer challenge: the account gets a token of the challenge's
    scope from its realm, the request is made again with it, and a push asks for a push token."""
    registry.token_auth = True
    registry.push_image("1-amd64", "amd64")
    res, out = run(capsys, registry, images=["1-amd64"])
    assert res["changed"] and res["platforms"] == ["linux/amd64"], res
    assert registry.document("1")["mediaType"] == model.DOCKER_LIST
    scopes = [query["scope"][0] for _auth, query in registry.token_requests]
    assert scopes[0] == "repository:hpc/verify:pull" and scopes[-1] == "repository:hpc/verify:pull,push"
    assert all(auth == AUTH and query["service"] == ["fake"] for auth, query in registry.token_requests)
    assert "s3cret-pw" not in out and "tok-" not in out
    # a read asks for one token and uses it for every request of the run
    del registry.token_requests[:]
    res, _out = run(capsys, registry, architecture="x86_64")
    assert res["image"]["platform"] == "linux/amd64" and len(registry.token_requests) == 1


def test_a_token_service_that_refuses_the_account_is_named_and_the_password_never_shown(registry, capsys):
    registry.token_auth = True
    registry.push_image("1-amd64", "amd64")
    res, out = run(capsys, registry, password="wrong-pw", images=["1-amd64"])
    assert res["failed"] is True
    assert "token service http://%s/token: HTTP 401 (check the registry account)" % registry.address in res["msg"]
    assert "wrong-pw" not in out


@pytest.mark.parametrize("header, expected", [
    ('Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push"',
     {"realm": "https://auth.example/token", "service": "registry.example", "scope": "repository:a/b:pull,push"}),
    ('bearer realm="https://h/t"', {"realm": "https://h/t"}),
    ('Basic realm="Registry Realm"', {}),
    (None, {}),
    ("", {}),
])
def test_bearer_challenges_are_read_and_other_schemes_are_not(header, expected):
    assert _registry_api.bearer_challenge(header) == expected
