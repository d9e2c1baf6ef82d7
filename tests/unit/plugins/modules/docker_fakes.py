# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A recording fake of the Docker SDK client (the library boundary) and the verification reports the
collection's verification image prints, for container_verify, container_benchmark and job_verify."""
from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import docker
from docker.errors import ImageNotFound

from ansible_collections.hpc.gpu_containers.plugins.module_utils._verify import SMI_BEGIN, SMI_END
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules.module_runner import run_module

XML = (Path(__file__).parents[1] / "module_utils" / "fixtures" / "nvidia_smi_a100-sxm4-mig.xml").read_text()
UUID = "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a"
FACTS = {"present": True, "driver_version": "510.47.03", "cuda_driver_version": 11060,
         "gpus": [{"index": 0, "uuid": UUID, "pci_bus_id": "00000000:00:04.0", "minor_number": 0}]}
MACHINE = os.uname().machine


def gpu_output(arch=MACHINE):
    return "hpc-verify: 1\narch=%s\nnvidia_smi=present\nnvidia_smi_rc=0\n%s\n%s\n%s\n" % (arch, SMI_BEGIN, XML, SMI_END)


CPU_OUTPUT = "hpc-verify: 1\narch=%s\nnvidia_smi=absent\n" % MACHINE


class FakeImage:
    def __init__(self, arch):
        self.id = "sha256:feed"
        self.attrs = {"Architecture": arch}


class FakeContainer:
    def __init__(self, client, out, err, code, wait_error=None, start_error=None):
        self.client = client
        self.out, self.err, self.code = out, err, code
        self.wait_error, self.start_error = wait_error, start_error

    def start(self):
        self.client.calls.append("start")
        if self.start_error:
            raise self.start_error

    def wait(self, timeout):
        self.client.calls.append("wait:%s" % timeout)
        if self.wait_error:
            raise self.wait_error
        return {"StatusCode": self.code}

    def kill(self):
        self.client.calls.append("kill")

    def logs(self, stdout, stderr):
        return (self.out if stdout else self.err).encode()

    def remove(self, force):
        self.client.calls.append("remove")

    def get_archive(self, path):
        """A tar of a stand-in busybox that prints one timing like ``time -f %e``."""
        self.client.calls.append("get_archive:%s" % path)
        script = b"#!/bin/sh\necho 0.40 >&2\n"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("busybox")
            info.size, info.mode = len(script), 0o755
            tar.addfile(info, io.BytesIO(script))
        return [buf.getvalue()], {"name": "busybox"}


class FakeClient:
    """Records every call; holds one local image (or none)."""

    def __init__(self, arch="amd64" if MACHINE == "x86_64" else MACHINE, present=True, out=CPU_OUTPUT, err="",
                 code=0, runtimes=("runc",), **container_kw):
        self.calls = []
        self.runtimes = runtimes
        self.created = None
        self.arch, self.present = arch, present
        self.out, self.err, self.code = out, err, code
        self.container_kw = container_kw
        self.images = self
        self.containers = self

    def info(self):
        self.calls.append("info")
        return {"Runtimes": dict((name, {"path": name}) for name in self.runtimes)}

    # images.*
    def get(self, ref):
        self.calls.append("get")
        if not self.present:
            raise ImageNotFound("no such image")
        return FakeImage(self.arch)

    def pull(self, repo, tag=None):
        self.calls.append("pull:%s:%s" % (repo, tag))
        self.present = True

    # containers.*
    def create(self, image, **kwargs):
        self.calls.append("create")
        if not self.present:
            raise ImageNotFound("No such image: %s" % image)  # as the engine answers a create of a missing image
        self.created = kwargs
        if kwargs.get("labels", {}).get("hpc.gpu_containers.verify") == "benchmark":
            self.bench_command = kwargs["command"]
            return FakeContainer(self, "", "0.20\n0.20\n0.50\n", 0)
        return FakeContainer(self, self.out, self.err, self.code, **self.container_kw)

    def close(self):
        self.calls.append("close")


def run_with(monkeypatch, capsys, module, client, **args):
    """main() of ``module`` with ``args``, Docker's client replaced by ``client``; its JSON result, with "_rc"."""
    if client is not None:
        monkeypatch.setattr(docker, "from_env", lambda: client)
    return run_module(module, capsys, with_rc=True, **args)
