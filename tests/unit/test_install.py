# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The built tarball, installed as sites install it: the README's Install lines, run as written.

The dependency collections are packed as Galaxy tarballs from the copies installed on this machine (the
``ansible`` package bundles them) and served by a Galaxy v3 API on 127.0.0.1, so the lines that reach Galaxy
run without the internet. In a copy of the checkout (the files git knows), the README's lines, byte for byte
and in order: the build, the install with dependencies from Galaxy (into a collections path of its own), the
download for an air-gapped controller and the offline installs from that download into an empty collections
path; then, with only that path visible, ``ansible-doc`` of every plugin the plugins/ directory holds and a
syntax check of every playbook by its FQCN.
"""

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text())
FQCN = "%s.%s" % (GALAXY["namespace"], GALAXY["name"])

# plugins/<directory> -> ansible-doc type; directories without documentation of their own are skipped.
DOC_TYPES = {
    "modules": "module", "filter": "filter", "test": "test", "lookup": "lookup", "callback": "callback",
    "inventory": "inventory", "connection": "connection", "become": "become", "cache": "cache",
    "strategy": "strategy", "vars": "vars", "shell": "shell", "cliconf": "cliconf", "httpapi": "httpapi",
    "netconf": "netconf", "terminal": "terminal",
}
NOT_DOCUMENTED = {"module_utils", "doc_fragments", "action", "plugin_utils"}

# What the tarball must leave out (the test bed, benchmarks, tests, developer configs) and must hold.
LEFT_OUT = ("Makefile", "tools", "molecule", "bench", ".ci", "tests", "requirements-dev.txt", "requirements-oldest.txt",
            "ruff.toml",
            ".ansible-lint", ".gitignore", ".venv", ".hypothesis", "changelogs/fragments")
SHIPPED = ("README.md", "LICENSE", "CHANGELOG.md", "requirements.yml", "meta/runtime.yml",
           "changelogs/changelog.yaml", "changelogs/config.yaml", "playbooks/site.yml")


def _tool(name):
    """The ansible command next to this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


GALAXY_CLI = _tool("ansible-galaxy")
pytestmark = pytest.mark.skipif(GALAXY_CLI is None, reason="ansible-galaxy is not installed: cannot build the tarball")


def _run(argv, env=None, cwd=None, check=True):
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    if check:
        assert proc.returncode == 0, "%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(argv), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def _pack_installed(collection_dir, dist):
    """A Galaxy tarball of an installed collection, with FILES.json redone for the files that are there.

    A Python package may leave out files its FILES.json lists, and ansible-galaxy refuses a tarball whose
    FILES.json names a missing file or a wrong checksum, so the manifest is written from what is present.
    """
    manifest = json.loads((collection_dir / "MANIFEST.json").read_text())
    info = manifest["collection_info"]
    entries = [{"name": ".", "ftype": "dir", "chksum_type": None, "chksum_sha256": None, "format": 1}]
    members = []
    for path in sorted(collection_dir.rglob("*")):
        rel = path.relative_to(collection_dir).as_posix()
        if "__pycache__" in path.parts or path.suffix == ".pyc" or rel in ("MANIFEST.json", "FILES.json"):
            continue
        if path.is_dir():
            entries.append({"name": rel, "ftype": "dir", "chksum_type": None, "chksum_sha256": None, "format": 1})
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            entries.append({"name": rel, "ftype": "file", "chksum_type": "sha256", "chksum_sha256": digest,
                            "format": 1})
        members.append((path, rel))
    files_json = json.dumps({"files": entries, "format": 1}, indent=4).encode()
    manifest["file_manifest_file"]["chksum_sha256"] = hashlib.sha256(files_json).hexdigest()
    manifest_json = json.dumps(manifest, indent=4).encode()
    tarball = dist / ("%s-%s-%s.tar.gz" % (info["namespace"], info["name"], info["version"]))
    with tarfile.open(tarball, "w:gz", dereference=True) as tar:
        for name, data in (("MANIFEST.json", manifest_json), ("FILES.json", files_json)):
            member = tarfile.TarInfo(name)
            member.size = len(data)
            member.mode = 0o644
            tar.addfile(member, io.BytesIO(data))
        for path, rel in members:
            tar.add(path, arcname=rel, recursive=False)
    return tarball, info.get("dependencies") or {}


def _installed_collections():
    """Collection name -> directory of the copies this machine has (first on the search path wins)."""
    proc = _run([GALAXY_CLI, "collection", "list", "--format", "json"])
    found = {}
    for base, collections in json.loads(proc.stdout).items():
        for name in collections:
            found.setdefault(name, Path(base, *name.split(".")))
    return found


def _isolated_env(tmp, collections_path):
    """The environment of a controller that sees only ``collections_path``: not the checkout, not ~/.ansible,
    not the collections bundled with the ansible package, no ansible.cfg."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    (tmp / "ansible.cfg").write_text("[defaults]\n")
    env.update({
        "ANSIBLE_CONFIG": str(tmp / "ansible.cfg"),
        "ANSIBLE_HOME": str(tmp / "ansible-home"),
        "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
        "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
        "ANSIBLE_NOCOLOR": "1",
    })
    return env


# The README's Install lines, in its order: a controller that reaches Galaxy ...
ONLINE_LINES = (
    "ansible-galaxy collection build --output-path dist",
    "ansible-galaxy collection install dist/hpc-gpu_containers-*.tar.gz",
)
# ... and an air-gapped one, from the download on a connected machine on.
# test_readme_lists_the_lines_this_test_runs holds the README to them.
OFFLINE_LINES = (
    "ansible-galaxy collection download -r requirements.yml -p collections-offline",
    "cp dist/hpc-gpu_containers-*.tar.gz collections-offline/",
    "cd collections-offline",
    "ansible-galaxy collection install -r requirements.yml --offline",
    "ansible-galaxy collection install hpc-gpu_containers-*.tar.gz --offline",
)


def _sh(lines, env, cwd):
    """Each line as written through a shell, in order, from ``cwd``; a ``cd`` line moves the later ones."""
    for line in lines:
        _run(["sh", "-c", line], env=env, cwd=cwd)
        if line.startswith("cd "):
            cwd = cwd / line.split(None, 1)[1]
    return cwd


# Left out of a copy of a tree that is not a git checkout (ansible-test's copy of the collection).
NOT_A_CHECKOUT_LEAVES_OUT = (".git", ".venv", ".ansible", ".cache", "tests/output", "dist")


def _copy_checkout(dest):
    """The files git knows in the checkout (tracked, and untracked ones it does not ignore), copied to dest;
    outside a git checkout (ansible-test's copy, which holds only those files) the whole tree but its outputs."""
    if not (ROOT / ".git").exists():
        ignored = {ROOT / rel for rel in NOT_A_CHECKOUT_LEAVES_OUT}
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, symlinks=True,
                        ignore=lambda directory, names: [n for n in names if Path(directory, n) in ignored])
        return
    proc = _run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    for rel in proc.stdout.split("\0"):
        source = ROOT / rel
        if rel and source.is_file():  # a tracked file deleted in the work tree is left out
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)


def _readme_install_lines():
    """The command lines (no comments, no blanks) of the ```sh block of the README's Install section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


class _Galaxy(ThreadingHTTPServer):
    """The part of Galaxy's v3 API that ``ansible-galaxy collection download`` and ``install`` read, for the
    tarballs given.

    GET /api/ (the API root: the versions it speaks), /api/v3/collections/<ns>/<name>/ (when it was
    updated), .../versions/?limit=N (one page: the one version there is), .../versions/<version>/ (the
    download URL, the artifact's sha256, the dependencies) and /download/<file> (the tarball).
    """

    def __init__(self, tarballs):
        super().__init__(("127.0.0.1", 0), _GalaxyHandler)
        self.url = "http://127.0.0.1:%d/" % self.server_address[1]
        self.routes = {"/api/": {"available_versions": {"v3": "v3/"}}}
        self.requests = []
        for tarball in tarballs:
            with tarfile.open(tarball) as tar:
                info = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
            namespace, name, version = info["namespace"], info["name"], info["version"]
            base = "/api/v3/collections/%s/%s/" % (namespace, name)
            self.routes[base] = {"namespace": namespace, "name": name, "href": base,
                                 "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"}
            self.routes[base + "versions/"] = {
                "meta": {"count": 1}, "links": {"first": None, "previous": None, "next": None, "last": None},
                "data": [{"version": version, "href": "%sversions/%s/" % (base, version)}]}
            self.routes["%sversions/%s/" % (base, version)] = {
                "namespace": {"name": namespace}, "collection": {"name": name}, "version": version,
                "href": "%sversions/%s/" % (base, version), "download_url": "/download/" + tarball.name,
                "artifact": {"filename": tarball.name, "size": tarball.stat().st_size,
                             "sha256": hashlib.sha256(tarball.read_bytes()).hexdigest()},
                "metadata": {"dependencies": info.get("dependencies") or {}}, "signatures": []}
            self.routes["/download/" + tarball.name] = tarball

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


class _GalaxyHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the name http.server calls)
        path = self.path.split("?", 1)[0]
        self.server.requests.append(self.path)
        # ansible-galaxy asks for some of them without the trailing slash (the API root: /api).
        found = self.server.routes.get(path) or self.server.routes.get(path + "/")
        if found is None:
            body, status, kind = b'{"errors": [{"status": "404", "code": "not_found"}]}', 404, "application/json"
        elif isinstance(found, Path):
            body, status, kind = found.read_bytes(), 200, "application/gzip"
        else:
            body, status, kind = json.dumps(found).encode(), 200, "application/json"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A copy of the checkout; the README's build line and its install line (dependencies from a Galaxy
    server here, into a collections path of its own); the server, holding the dependencies, kept up."""
    tmp = tmp_path_factory.mktemp("install")
    scratch = tmp / "checkout"
    _copy_checkout(scratch)

    installed = _installed_collections()
    served = tmp / "galaxy"
    served.mkdir()
    wanted = list(GALAXY.get("dependencies") or {})
    packed = {}
    while wanted:
        name = wanted.pop()
        if name in packed:
            continue
        if name not in installed:
            pytest.skip("dependency %s is not installed on this machine (the ansible package bundles it): "
                        "nothing to pack for the offline install" % name)
        packed[name], dependencies = _pack_installed(installed[name], served)
        wanted.extend(dependencies)

    empty = tmp / "collections"
    empty.mkdir()
    online = tmp / "collections-online"
    online.mkdir()
    env = _isolated_env(tmp, empty)
    # The README's lines name the tools bare: the ones beside this Python come first.
    env["PATH"] = "%s%s%s" % (Path(GALAXY_CLI).parent, os.pathsep, env.get("PATH", ""))
    with _Galaxy(packed.values()) as galaxy:
        env["ANSIBLE_GALAXY_SERVER"] = galaxy.url
        _sh(ONLINE_LINES, dict(env, ANSIBLE_COLLECTIONS_PATH=str(online)), scratch)
        (tarball,) = (scratch / "dist").glob("*.tar.gz")
        yield {"tmp": tmp, "scratch": scratch, "tarball": tarball, "packed": packed, "env": env,
               "path": empty, "online": online, "galaxy": galaxy}


@pytest.fixture(scope="module")
def installed(site):
    """The README's offline lines, after its build line, into the empty collections path; what each asked
    the Galaxy server for."""
    cwd, asked = site["scratch"], {}
    for line in OFFLINE_LINES:
        before = len(site["galaxy"].requests)
        cwd = _sh([line], site["env"], cwd)
        asked[line] = site["galaxy"].requests[before:]
    site["asked"] = asked
    site["offline"] = site["scratch"] / "collections-offline"
    return site


def test_readme_lists_the_lines_this_test_runs():
    lines = _readme_install_lines()
    assert tuple(lines) == ONLINE_LINES + OFFLINE_LINES, (
        "README.md's Install block differs from the lines tests/unit/test_install.py runs:\n%s\n!=\n%s"
        % ("\n".join(lines), "\n".join(ONLINE_LINES + OFFLINE_LINES)))


def test_install_with_dependencies_from_galaxy(site):
    root = site["online"] / "ansible_collections"
    for name in [FQCN, *site["packed"]]:
        assert (root.joinpath(*name.split(".")) / "MANIFEST.json").is_file(), "%s not installed" % name


def test_download_fetches_every_dependency_from_the_galaxy_server(installed):
    offline = installed["offline"]
    names = {tarball.name for tarball in installed["packed"].values()}
    assert names <= {p.name for p in offline.glob("*.tar.gz")}, "collections-offline/ lacks %s" % sorted(
        names - {p.name for p in offline.glob("*.tar.gz")})
    for tarball in installed["packed"].values():
        assert (offline / tarball.name).read_bytes() == tarball.read_bytes(), tarball.name
    downloaded = {r.rsplit("/", 1)[1] for r in installed["asked"][OFFLINE_LINES[0]] if r.startswith("/download/")}
    assert downloaded == names, installed["asked"][OFFLINE_LINES[0]]
    for line in OFFLINE_LINES[1:]:
        assert not installed["asked"][line], "%s asked the Galaxy server for %s" % (line, installed["asked"][line])
    requirements = yaml.safe_load((offline / "requirements.yml").read_text())
    assert {c["name"] for c in requirements["collections"]} == names, requirements
    # The collection's own tarball was copied beside them; the requirements file leaves it to its own line.
    assert (offline / installed["tarball"].name).is_file()


def test_tarball_holds_what_sites_install_and_no_test_bed(site):
    with tarfile.open(site["tarball"]) as tar:
        names = set(tar.getnames())
    for left_out in LEFT_OUT:
        shipped = sorted(n for n in names if n == left_out or n.startswith(left_out + "/"))
        assert not shipped, "the tarball ships %s: %s" % (left_out, shipped[:5])
    for shipped in SHIPPED:
        assert shipped in names, "the tarball lacks %s" % shipped
    for directory in ("plugins/modules", "roles", "playbooks"):
        in_checkout = {p.relative_to(ROOT).as_posix() for p in (ROOT / directory).rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts}
        assert in_checkout <= names, "the tarball lacks %s" % sorted(in_checkout - names)[:5]


def test_requirements_yml_names_the_galaxy_yml_dependencies():
    requirements = yaml.safe_load((ROOT / "requirements.yml").read_text())
    assert {c["name"]: c["version"] for c in requirements["collections"]} == GALAXY["dependencies"]


def test_every_collection_the_content_calls_is_a_dependency():
    """A task's FQCN action, or an FQCN connection, from another collection must be declared, or a site
    installing from Galaxy gets it only partway through its first run."""
    used = set()
    task_key = re.compile(r"^\s*(?:-\s+)?([a-z0-9_]+\.[a-z0-9_]+)\.[a-z0-9_]+:\s*(?:#.*)?$", re.MULTILINE)
    connection = re.compile(r"ansible_connection:\s*[\"']?([a-z0-9_]+\.[a-z0-9_]+)\.[a-z0-9_]+")
    for directory in ("roles", "playbooks", "examples"):
        for path in (ROOT / directory).rglob("*.yml"):
            text = path.read_text()
            used.update(task_key.findall(text))
            used.update(connection.findall(text))
    foreign = used - {"ansible.builtin", "ansible.legacy", FQCN}
    assert "community.docker" in foreign  # the scan itself finds what the roles call
    assert foreign <= set(GALAXY["dependencies"]), "used but not in galaxy.yml dependencies: %s" % sorted(
        foreign - set(GALAXY["dependencies"]))


def test_offline_install_without_dependencies_fails_at_once_naming_them(site):
    other = site["tmp"] / "no-deps"
    other.mkdir()
    proc = _run([GALAXY_CLI, "collection", "install", str(site["tarball"]), "-p", str(other), "--offline"],
                env=dict(site["env"], ANSIBLE_COLLECTIONS_PATH=str(other)), cwd=site["tmp"], check=False)
    assert proc.returncode != 0
    assert "community.docker" in proc.stdout + proc.stderr
    assert not (other / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]).exists()


def test_installed_copy_holds_collection_and_dependencies(installed):
    root = installed["path"] / "ansible_collections"
    assert {"community.docker", "community.crypto"} <= set(installed["packed"]), installed["packed"]
    for name in [FQCN, *installed["packed"]]:
        assert (root.joinpath(*name.split(".")) / "MANIFEST.json").is_file(), "%s not installed" % name


def _plugins():
    """ansible-doc type -> FQCNs, from the plugins/ directory of the checkout."""
    found = {}
    for directory in sorted(p for p in (ROOT / "plugins").iterdir() if p.is_dir() and p.name != "__pycache__"):
        if directory.name in NOT_DOCUMENTED:
            continue
        assert directory.name in DOC_TYPES, "plugins/%s: no ansible-doc type known for it" % directory.name
        names = sorted(p.stem for p in directory.glob("*.py") if p.stem != "__init__")
        found[DOC_TYPES[directory.name]] = ["%s.%s" % (FQCN, name) for name in names]
    return found


def test_every_plugin_renders_in_ansible_doc_from_the_installed_copy(installed):
    plugins = _plugins()
    assert len(plugins.get("module", [])) >= 20  # the derivation found the modules
    for doc_type, names in plugins.items():
        proc = _run([_tool("ansible-doc"), "--json", "-t", doc_type, *names], env=installed["env"],
                    cwd=installed["tmp"])
        docs = json.loads(proc.stdout)
        for name in names:
            assert name in docs, "ansible-doc -t %s %s: not found in the installed copy\n%s" % (
                doc_type, name, proc.stderr[-2000:])
            assert docs[name]["doc"]["short_description"], name
            # The plugin was read from the installed copy, not from the checkout.
            assert str(installed["path"]) in docs[name]["doc"]["filename"], docs[name]["doc"]["filename"]


def test_every_playbook_passes_a_syntax_check_by_fqcn(installed):
    playbooks = sorted("%s.%s" % (FQCN, p.stem) for p in (ROOT / "playbooks").glob("*.yml"))
    assert "%s.site" % FQCN in playbooks
    inventory = installed["tmp"] / "hosts.ini"
    inventory.write_text("node01 ansible_connection=local\n")
    playbooks_dir = installed["path"] / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"] / "playbooks"
    for playbook in playbooks:
        proc = _run([_tool("ansible-playbook"), "--syntax-check", "-i", str(inventory), playbook],
                    env=installed["env"], cwd=installed["tmp"])
        # Resolved by its FQCN to the installed copy.
        expected = "playbook: %s/%s.yml" % (playbooks_dir, playbook.rsplit(".", 1)[1])
        assert expected in proc.stdout, proc.stdout
