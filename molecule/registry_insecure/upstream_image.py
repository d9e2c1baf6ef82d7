# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Push a two-architecture image (a Docker manifest list: linux/amd64 and linux/arm64) to a registry over its
HTTP API, as NGC serves its multi-arch images. Test-bed tooling (molecule registry_insecure's prepare), run on the
upstream node: python3 upstream_image.py URL REPOSITORY TAG, with UPSTREAM_USER, UPSTREAM_PASSWORD and
UPSTREAM_CA in the environment (never on the command line). Each architecture's layer holds /arch (its name);
amd64's also holds this node's static busybox, so that an amd64 host can run the image and print it.
Prints {"index": digest, "amd64": digest, "arm64": digest}."""

import base64
import gzip
import hashlib
import io
import json
import os
import ssl
import sys
import tarfile
import urllib.request

LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
CONFIG = "application/vnd.docker.container.image.v1+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"


def layer(arch):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        def add(name, data=None, mode=0o644, kind=tarfile.REGTYPE, link=""):
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.linkname, info.mtime = kind, mode, link, 0
            info.size = len(data) if data is not None else 0
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
        add("arch", ("%s\n" % arch).encode())
        if arch == "amd64":
            add("bin", kind=tarfile.DIRTYPE, mode=0o755)
            with open("/bin/busybox", "rb") as busybox:
                add("bin/busybox", busybox.read(), mode=0o755)
            add("bin/sh", kind=tarfile.SYMTYPE, link="busybox", mode=0o777)
    tar_bytes = raw.getvalue()
    return tar_bytes, gzip.compress(tar_bytes, mtime=0)


def _bytes(body):
    return json.dumps(body, sort_keys=True).encode()


def _digest(body):
    return "sha256:" + hashlib.sha256(_bytes(body)).hexdigest()


def main(url, repository, tag):
    context = ssl.create_default_context(cafile=os.environ["UPSTREAM_CA"])
    auth = "Basic " + base64.b64encode(
        ("%s:%s" % (os.environ["UPSTREAM_USER"], os.environ["UPSTREAM_PASSWORD"])).encode()).decode()

    def request(method, path, data=None, content_type=None):
        req = urllib.request.Request(path if path.startswith("http") else url + path, data=data, method=method)
        req.add_header("Authorization", auth)
        if content_type:
            req.add_header("Content-Type", content_type)
        with urllib.request.urlopen(req, context=context, timeout=60) as response:
            return response

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        location = request("POST", "/v2/%s/blobs/uploads/" % repository).headers["Location"]
        location = location if location.startswith("http") else url + location
        request("PUT", location + ("&" if "?" in location else "?") + "digest=" + digest, data,
                "application/octet-stream")
        return digest, len(data)

    def manifest(reference, body, media_type):
        data = _bytes(body)
        request("PUT", "/v2/%s/manifests/%s" % (repository, reference), data, media_type)
        return _digest(body), len(data)

    digests, entries = {}, []
    for arch in ("amd64", "arm64"):
        tar_bytes, gz = layer(arch)
        layer_digest, layer_size = blob(gz)
        config = {"architecture": arch, "os": "linux",
                  "config": {"Cmd": ["/bin/sh", "-c", "cat /arch"]},
                  "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(tar_bytes).hexdigest()]}}
        config_digest, config_size = blob(json.dumps(config, sort_keys=True).encode())
        body = {"schemaVersion": 2, "mediaType": MANIFEST,
                "config": {"mediaType": CONFIG, "digest": config_digest, "size": config_size},
                "layers": [{"mediaType": LAYER, "digest": layer_digest, "size": layer_size}]}
        digest, size = manifest(_digest(body), body, MANIFEST)
        digests[arch] = digest
        entries.append({"mediaType": MANIFEST, "digest": digest, "size": size,
                        "platform": {"architecture": arch, "os": "linux"}})
    digests["index"] = manifest(tag, {"schemaVersion": 2, "mediaType": LIST, "manifests": entries}, LIST)[0]
    sys.stdout.write(json.dumps(digests, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
