# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The site templates under examples/sites/, each as a site runs it.

For every template: its ansible.cfg has the settings its comments promise; ``ansible-inventory --graph``
with that ansible.cfg shows the groups its playbooks need; ``ansible-playbook --syntax-check`` of those
playbooks by FQCN, with the template's inventory and its vault opened by the test password; every
password/secret/token/key variable in its inventory and group_vars is a ``!vault`` value, and each one
opens with ``ansible-vault decrypt``; the air-gapped template names no host outside the site. Last, site.yml's
inventory pre-flight play (the groups, and a ``--limit`` that leaves out the LSF master) runs in ``--check``
against each inventory. The other pre-flight plays read facts, GPUs and lsf.conf from the hosts, which these
templates only name: they are not run here.

The vault password (tests/unit/site-templates.vault-password) is a test password for the templates only.
"""

import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SITES = ROOT / "examples" / "sites"
VAULT_PASSWORD = Path(__file__).resolve().parent / "site-templates.vault-password"
GALAXY = yaml.safe_load((ROOT / "galaxy.yml").read_text(encoding="utf-8"))
FQCN = "%s.%s" % (GALAXY["namespace"], GALAXY["name"])

# Template -> the playbooks it runs and the groups each needs (site.yml's header and pre-flight, slurm.yml's
# and rootless.yml's hosts lines).
TEMPLATES = {
    "lsf-ssh": {"playbooks": ["site"], "groups": {"lsf_master", "docker_hosts", "gpu_nodes", "registry"},
                "lsf": True},
    "slurm": {"playbooks": ["site", "slurm"],
              "groups": {"slurm_controller", "slurm_nodes", "docker_hosts", "gpu_nodes", "registry"}, "lsf": False},
    "rootless": {"playbooks": ["site", "rootless"], "groups": {"rootless_hosts", "docker_hosts", "registry"},
                 "lsf": False},
    "ngc": {"playbooks": ["site"], "groups": {"lsf_master", "docker_hosts", "gpu_nodes", "registry"}, "lsf": True},
    "air-gapped": {"playbooks": ["site"], "groups": {"lsf_master", "docker_hosts", "gpu_nodes", "registry"},
                   "lsf": True},
}
# The air-gapped template's mirror domain: no URL in its variables may name another host.
AIR_GAPPED_DOMAIN = ".hpc.internal"
SECRET_NAME = re.compile(r"(password|passwd|secret|token|(^|_)key)$")
PREFLIGHT_PLAY = "Pre-flight - inventory and --limit"


def _tool(name):
    """The ansible command next to this Python (the venv's), else the one on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


TOOLS = {name: _tool(name) for name in ("ansible-inventory", "ansible-playbook", "ansible-vault")}
pytestmark = pytest.mark.skipif(
    None in TOOLS.values(),
    reason="ansible-core's commands (%s) are not installed: the site templates cannot be run"
    % ", ".join(name for name, path in TOOLS.items() if path is None))


class _Vaulted(str):
    """A ``!vault`` value as it stands in the file (the ciphertext)."""


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!vault", lambda loader, node: _Vaulted(loader.construct_scalar(node)))


def _var_files(site):
    return [site / "hosts.yml"] + sorted((site / "group_vars").glob("*.yml"))


def _walk(value, path=()):
    """(path, leaf) of every scalar in a loaded YAML document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, path + (str(key),))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, path + (str(index),))
    else:
        yield path, value


@pytest.fixture(scope="module")
def collections_path(tmp_path_factory):
    """A collections path of its own with the checkout linked in as the collection."""
    base = tmp_path_factory.mktemp("site-collections")
    namespace_dir = base / "ansible_collections" / GALAXY["namespace"]
    namespace_dir.mkdir(parents=True)
    (namespace_dir / GALAXY["name"]).symlink_to(ROOT)
    return base


@pytest.fixture(params=sorted(TEMPLATES))
def site(request, collections_path, tmp_path):
    path = SITES / request.param
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(path / "ansible.cfg"), ANSIBLE_HOME=str(tmp_path / "ansible-home"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_COLLECTIONS_PATH=str(collections_path),
               ANSIBLE_NOCOLOR="1")
    return {"name": request.param, "path": path, "env": env, "tmp": tmp_path, **TEMPLATES[request.param]}


def _run(site, argv, check=True, stdin=None):
    proc = subprocess.run(argv, env=site["env"], cwd=site["path"], input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
    if check:
        assert proc.returncode == 0, "%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(argv), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def test_template_files(site):
    for name in ("ansible.cfg", "hosts.yml", "README.md"):
        assert (site["path"] / name).is_file(), "%s has no %s" % (site["name"], name)
    config = configparser.ConfigParser(inline_comment_prefixes=(";",))
    config.read(site["path"] / "ansible.cfg")
    assert config["defaults"]["inventory"] == "hosts.yml"
    assert int(config["defaults"]["forks"]) >= 20
    assert config["ssh_connection"].getboolean("pipelining")
    assert "ControlMaster=auto" in config["ssh_connection"]["ssh_args"]
    assert "ControlPersist=60s" in config["ssh_connection"]["ssh_args"]
    inventory = yaml.safe_load((site["path"] / "hosts.yml").read_text(encoding="utf-8"))
    connection = inventory["all"]["vars"]
    assert connection.get("ansible_user") and connection.get("ansible_become") is True
    assert "ansible_connection" not in connection, "a site template connects over SSH, the default"


def test_inventory_graph(site):
    graph = _run(site, [TOOLS["ansible-inventory"], "-i", "hosts.yml", "--graph"]).stdout
    groups = set(re.findall(r"@(\w+):", graph))
    assert site["groups"] <= groups, "%s lacks the groups %s:\n%s" % (site["name"], site["groups"] - groups, graph)
    # Each needed group has a host: in the graph its line is followed by a deeper line that is a host.
    lines = graph.splitlines()
    for group in site["groups"]:
        index = next(i for i, line in enumerate(lines) if line.endswith("|--@%s:" % group))
        below = lines[index + 1] if index + 1 < len(lines) else ""
        assert below.find("|--") > lines[index].find("|--") and "@" not in below, (
            "group %s of %s has no host:\n%s" % (group, site["name"], graph))


def test_playbooks_syntax(site):
    argv = [TOOLS["ansible-playbook"], "-i", "hosts.yml", "--syntax-check",
            "--vault-id", "site@%s" % VAULT_PASSWORD]
    argv += ["%s.%s" % (FQCN, playbook) for playbook in site["playbooks"]]
    out = _run(site, argv).stdout
    for playbook in site["playbooks"]:
        assert "playbooks/%s.yml" % playbook in out


def test_every_secret_is_vaulted_and_opens(site):
    vaulted = []
    for path in _var_files(site["path"]):
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506 - SafeLoader subclass
        for keys, value in _walk(document):
            names = [key for key in keys if not key.isdigit()]
            if names and SECRET_NAME.search(names[-1]):
                assert isinstance(value, _Vaulted), "%s: %s is not a !vault value" % (
                    path.relative_to(ROOT), ".".join(keys))
                vaulted.append((path, keys, value))
            elif isinstance(value, str):
                assert "$ANSIBLE_VAULT" not in value or isinstance(value, _Vaulted)
    assert vaulted, "%s has no vaulted secret: its registry accounts belong in the vault" % site["name"]
    # One ansible-vault run opens them all, each from a file of its own.
    files = []
    for index, secret in enumerate(vaulted):
        files.append(site["tmp"] / ("secret-%d" % index))
        files[-1].write_text(secret[2], encoding="utf-8")
    _run(site, [TOOLS["ansible-vault"], "decrypt", "--vault-id", "site@%s" % VAULT_PASSWORD]
         + [str(f) for f in files])
    for (path, keys, _value), opened in zip(vaulted, files):
        plain = opened.read_text(encoding="utf-8").strip()
        assert plain and "$ANSIBLE_VAULT" not in plain, "%s: %s" % (path, ".".join(keys))
        assert plain not in path.read_text(encoding="utf-8"), "plaintext of %s in the file" % ".".join(keys)


def test_air_gapped_names_no_outside_host():
    urls = []
    for path in _var_files(SITES / "air-gapped"):
        for keys, value in _walk(yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)):  # noqa: S506
            for url in re.findall(r"\b[a-z][a-z0-9+.-]*://[^\s\"']+", str(value)):
                urls.append(url)
                host = urlsplit(url).hostname or ""
                assert host.endswith(AIR_GAPPED_DOMAIN), "%s: %s leaves the site (%s)" % (
                    path.name, ".".join(keys), url)
    # The mirror variables of docker_engine, nvidia_container_runtime and container_registry are all set.
    text = "\n".join(p.read_text(encoding="utf-8") for p in _var_files(SITES / "air-gapped"))
    for variable in ("docker_engine_rpm_repo_baseurl", "docker_engine_rpm_key_url",
                     "nvidia_container_runtime_rpm_repo_baseurl", "nvidia_container_runtime_rpm_key_url",
                     "container_registry_binary_url", "container_registry_binary_checksum"):
        assert re.search(r"^%s: \S" % variable, text, re.M), "air-gapped sets no %s" % variable
    assert len(urls) >= 5


def _preflight_playbook(site):
    """site.yml's first play (the inventory checks), alone in a playbook."""
    plays = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text(encoding="utf-8"))
    assert plays[0]["name"] == PREFLIGHT_PLAY, "site.yml's first play is no longer %r" % PREFLIGHT_PLAY
    path = site["tmp"] / "preflight.yml"
    path.write_text(yaml.safe_dump([plays[0]], sort_keys=False), encoding="utf-8")
    return path


def test_preflight_check(site):
    argv = [TOOLS["ansible-playbook"], "-i", "hosts.yml", "--check", "-e", "ansible_connection=local",
            "--vault-id", "site@%s" % VAULT_PASSWORD, str(_preflight_playbook(site))]
    out = _run(site, argv).stdout
    assert re.search(r"ok=\d+\s+changed=0\s+unreachable=0\s+failed=0", out), out
    assert "Check the inventory groups" in out
    if site["lsf"]:
        # A --limit without the LSF master is refused before any host is touched.
        limited = _run(site, argv + ["--limit", "gpu001"], check=False)
        assert limited.returncode != 0
        assert "leaves out the LSF master" in limited.stdout, limited.stdout[-3000:]
