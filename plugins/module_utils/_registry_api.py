# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The few calls of the Docker registry HTTP API (v2) the collection makes: read a manifest or an image
configuration, put a manifest. Basic authentication, and the token (Bearer) authentication of the registry
token specification that Harbor, GitLab, Quay and Docker Hub use: a 401 whose ``WWW-Authenticate`` is a
``Bearer`` challenge sends the account to the challenge's realm for a token of the challenge's scope, and the
request is made again once with it. The registry's CA by path."""

from __future__ import annotations

import base64
import json
import re

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlencode, urlsplit
from ansible.module_utils.urls import open_url

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _image_index as model


class RegistryError(Exception):
    """A request the registry refused or did not answer. ``transient``: no answer (no connection, a timeout) or
    HTTP 429 or 5xx, which the same request a moment later may not meet."""

    def __init__(self, message, transient=False):
        super().__init__(message)
        self.transient = transient


def _transient(exc):
    """Whether an HTTP error or a failure to connect may be gone a moment later."""
    if isinstance(exc, HTTPError):
        return exc.code == 429 or exc.code >= 500
    return isinstance(exc, OSError)


_CHALLENGE_PARAM = re.compile(r'([A-Za-z_]+)\s*=\s*"([^"]*)"')


def bearer_challenge(header):
    """The parameters (``realm``, ``service``, ``scope``) of a ``WWW-Authenticate: Bearer ...`` challenge; {}
    when the header is missing or another scheme (``Basic realm=...``)."""
    scheme, _sep, rest = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return dict(_CHALLENGE_PARAM.findall(rest))


class Registry:
    """The few calls of the registry's HTTP API this module makes (basic or token authentication)."""

    def __init__(self, params):
        self.base = "%s://%s/v2/%s" % ("http" if params["insecure"] else "https", params["registry"],
                                       params["repository"].strip("/"))
        self.reference = "%s/%s" % (params["registry"], params["repository"].strip("/"))
        self.headers = {}
        self.basic = None
        if params["username"]:
            account = "%s:%s" % (params["username"], params["password"] or "")
            self.basic = "Basic " + base64.b64encode(account.encode("utf-8")).decode("ascii")
            self.headers["Authorization"] = self.basic
        self.host = params["registry"]
        self.ca_path = params["ca_path"]
        self.timeout = params["timeout"]

    def _token(self, challenge):
        """A token for the challenge's scope from its realm (the account's basic credentials, when there is one;
        anonymous otherwise). The realm is checked with the registry's CA only when it is the registry's host."""
        realm = challenge["realm"]
        query = urlencode([(key, challenge[key]) for key in ("service", "scope") if challenge.get(key)])
        url = realm + (("&" if "?" in realm else "?") + query if query else "")
        same_host = urlsplit(realm).netloc == self.host
        kwargs = {"ca_path": self.ca_path} if self.ca_path and same_host else {}
        try:
            response = open_url(url, method="GET", headers={"Authorization": self.basic} if self.basic else {},
                                timeout=self.timeout, follow_redirects="all", **kwargs)
            answer = json.loads(response.read().decode("utf-8"))
        except HTTPError as exc:
            hint = " (check the registry account)" if exc.code in (401, 403) else ""
            raise RegistryError("token service %s: HTTP %d%s" % (realm, exc.code, hint), _transient(exc))
        except (URLError, OSError, ValueError) as exc:
            raise RegistryError("token service %s: %s" % (realm, getattr(exc, "reason", exc)), _transient(exc))
        token = (answer.get("token") or answer.get("access_token")) if isinstance(answer, dict) else None
        if not token or not isinstance(token, str):
            raise RegistryError("token service %s: the answer holds no token" % realm)
        return token

    def _request(self, method, path, accept=None, data=None, content_type=None, retried=False):
        headers = dict(self.headers)
        if accept:
            headers["Accept"] = accept
        if content_type:
            headers["Content-Type"] = content_type
        url = "%s/%s" % (self.base, path)
        try:
            kwargs = {"ca_path": self.ca_path} if self.ca_path else {}
            response = open_url(url, method=method, headers=headers, data=data, timeout=self.timeout,
                                follow_redirects="all", **kwargs)
            return response.read(), response.headers
        except HTTPError as exc:
            if exc.code == 404 and method == "GET":
                return None, None
            challenge = bearer_challenge(exc.headers.get("WWW-Authenticate") if exc.headers else None)
            if exc.code == 401 and not retried and challenge.get("realm"):
                self.headers["Authorization"] = "Bearer " + self._token(challenge)
                return self._request(method, path, accept=accept, data=data, content_type=content_type, retried=True)
            try:
                detail = exc.read().decode("utf-8", "replace").strip()[:300]
            except (OSError, AttributeError):
                detail = ""  # the body is only for the message
            hint = " (check the registry account)" if exc.code in (401, 403) else ""
            raise RegistryError("%s %s: HTTP %d%s %s" % (method, url, exc.code, hint, detail), _transient(exc))
        except (URLError, OSError, ValueError) as exc:
            raise RegistryError("%s %s: %s" % (method, url, getattr(exc, "reason", exc)), _transient(exc))

    def manifest(self, tag, accept=model.ACCEPT_ANY):
        """(document, body bytes, media type) of a tag or digest; (None, None, None) when it is not there."""
        body, headers = self._request("GET", "manifests/%s" % tag, accept=accept)
        if body is None:
            return None, None, None
        try:
            document = json.loads(body.decode("utf-8"))
        except ValueError:
            raise RegistryError("%s:%s: the registry's answer is not a JSON manifest" % (self.reference, tag))
        media_type = document.get("mediaType") or (headers.get("Content-Type") or "").split(";")[0].strip()
        return document, body, media_type

    def config(self, manifest, tag):
        """The image configuration blob a manifest names, parsed."""
        digest = ((manifest or {}).get("config") or {}).get("digest")
        if not digest:
            raise RegistryError("%s:%s: the manifest names no image configuration" % (self.reference, tag))
        body, _headers = self._request("GET", "blobs/%s" % digest)
        if body is None:
            raise RegistryError("%s:%s: its configuration %s is not in the registry" % (self.reference, tag, digest))
        try:
            return json.loads(body.decode("utf-8"))
        except ValueError:
            raise RegistryError("%s:%s: its configuration is not JSON" % (self.reference, tag))

    def put_manifest(self, tag, body, media_type):
        self._request("PUT", "manifests/%s" % tag, data=body, content_type=media_type)
