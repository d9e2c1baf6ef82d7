# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The Docker SDK for Python as the verification modules use it: the import guard and one client.

container_verify and container_benchmark run containers on the node's own engine. Both take ``docker_host``
(the SDK default, ``DOCKER_HOST`` or the local socket, when empty) and label what they start with
:data:`VERIFY_LABEL`, so that a leftover container is recognisable.
"""

from __future__ import annotations

import traceback

DOCKER_IMPORT_ERROR = None
try:
    import docker
    from docker.errors import APIError, DockerException, ImageNotFound, NotFound
except ImportError:
    DOCKER_IMPORT_ERROR = traceback.format_exc()
    docker = None

    # Stand-ins, so that the modules import without the SDK and say what is missing (missing_sdk).
    class DockerException(Exception):
        pass

    class APIError(DockerException):
        pass

    class NotFound(APIError):
        pass

    class ImageNotFound(NotFound):
        pass

REQUESTS_IMPORT_ERROR = None
try:
    from requests.exceptions import ConnectionError as RequestsConnectionError
    from requests.exceptions import ReadTimeout
except ImportError:
    REQUESTS_IMPORT_ERROR = traceback.format_exc()

    class RequestsConnectionError(Exception):
        pass

    class ReadTimeout(Exception):
        pass

__all__ = ["APIError", "DockerException", "ImageNotFound", "NotFound", "ReadTimeout", "RequestsConnectionError",
           "VERIFY_LABEL", "docker", "docker_client", "missing_sdk"]

VERIFY_LABEL = "hpc.gpu_containers.verify"


def missing_sdk():
    """(library, traceback) of the first of the Docker SDK and requests that cannot be imported, or None."""
    if DOCKER_IMPORT_ERROR:
        return "docker (Docker SDK for Python, python3-docker)", DOCKER_IMPORT_ERROR
    if REQUESTS_IMPORT_ERROR:
        return "requests", REQUESTS_IMPORT_ERROR
    return None


def docker_client(docker_host=None):
    """A client of the engine at ``docker_host``, or of the SDK's default (``DOCKER_HOST``, the local socket)."""
    if docker_host:
        return docker.DockerClient(base_url=docker_host)
    return docker.from_env()
