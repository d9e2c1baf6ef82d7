# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adversarial tests of the container_registry role's secrets, accounts and download.

The role's own tasks are run with ansible-playbook against localhost: the htpasswd task
is lifted out of tasks/server.yml as it is written there, tls.yml and binary.yml are
included as files.  Hostile passwords (quotes, newlines, colons, shell and YAML syntax,
non-ASCII) go in; nothing of them may come out at -vvv, in --diff or in the drift report,
and the accounts file must hold exactly the listed accounts.  Bad account lists and bad
checksums must be refused with a message that names the problem.

Run with `.venv/bin/pytest tests/adversarial`.
"""

import datetime
import grp
import hashlib
import io
import json
import os
import pwd
import re
import stat
import subprocess
import sys
import tarfile
from pathlib import Path

import bcrypt
import pytest
import yaml
from ansible.module_utils import _internal as module_utils_internal
from ansible.module_utils.common import warnings as module_warnings

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _htpasswd
from ansible_collections.hpc.gpu_containers.plugins.modules import registry_htpasswd
from ansible_collections.hpc.gpu_containers.tests.unit.roles import playbook as role_playbook
from ansible_collections.hpc.gpu_containers.tests.unit.plugins.modules import module_runner

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "container_registry"

# Every password carries this token and nothing else in the runs does: if it shows, a password leaked.
TOKEN = "Zq7"
HOSTILE_USERS = [
    {"name": "alice", "password": "Zq7-quote'\"both\"'-end"},
    {"name": "bob", "password": "Zq7-colon:and:more:colons"},
    {"name": "carol", "password": "Zq7-new\nline-two\r\nthree"},
    {"name": "dave", "password": "Zq7-back\\slash\ttab"},
    {"name": "erin", "password": "Zq7-ünïcødé-€-🔑"},
    {"name": "frank", "password": "  Zq7-leading-and-trailing-spaces  "},
    {"name": "grace", "password": "$2b$12$Zq7-looks-like-a-hash"},
    {"name": "heidi", "password": "Zq7-shell $(id) `id`; rm -rf / #"},
    {"name": "ivan", "password": "Zq7-yaml: [a, {b: c}] - &anchor *alias"},
    {"name": "svc.ci-runner_01@head", "password": "Zq7-name-with-dots-and-at"},
    {"name": "mallory", "password": "Zq7-to-be-revoked"},
]
REVOKED = "mallory"
CHANGED = "alice"
CHANGED_PASSWORD = "Zq7-alice's new:password\n2"
BCRYPT_HASH = re.compile(r"\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}")


# -- running the role's tasks ---------------------------------------------------------


def run_playbook(workdir, plays, *args, report_dir=None, vars_files=None):
    """Run ``plays`` (a list of dicts) with ansible-playbook on localhost; return the process."""
    playbook = Path(workdir) / ("play-%d.yml" % len(list(Path(workdir).glob("play-*.yml"))))
    playbook.write_text(yaml.safe_dump(plays, sort_keys=False, allow_unicode=True))
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": os.environ["ANSIBLE_COLLECTIONS_PATH"],
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
    })
    env.pop("HPC_DRIFT_REPORT_JSON", None)
    if report_dir is not None:
        env.update({"ANSIBLE_CALLBACKS_ENABLED": "hpc.gpu_containers.drift_report", "HPC_DRIFT_REPORT_DIR": str(report_dir)})
    cmd = [sys.executable, "-m", "ansible.cli.playbook", "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable]
    for path in vars_files or []:
        cmd += ["-e", "@%s" % path]
    cmd += [str(playbook), *args]
    return subprocess.run(cmd, env=env, cwd=str(workdir), capture_output=True, text=True, timeout=300, check=False)


def recap_changed(proc):
    match = re.search(r"localhost\s+:\s+ok=\d+\s+changed=(\d+)", proc.stdout)
    assert match, proc.stdout + proc.stderr
    return int(match.group(1))


def role_task(tasks_file, name):
    """The task called ``name`` in the role's ``tasks_file``, blocks searched."""
    return role_playbook.role_task("container_registry", tasks_file, name)


def role_tasks(tasks_file):
    """Every task of the role's ``tasks_file``, blocks flattened."""
    out = []

    def walk(tasks):
        for task in tasks or []:
            if any(key in task for key in ("block", "rescue", "always")):
                for key in ("block", "rescue", "always"):
                    walk(task.get(key))
            else:
                out.append(task)
    walk(yaml.safe_load((ROLE / "tasks" / tasks_file).read_text()))
    return out


def as_this_user(task):
    """The role writes as root; off root, own the files as the user running the tests."""
    if os.geteuid() != 0:
        args = next(value for key, value in task.items() if "." in key and isinstance(value, dict))
        if args.get("owner") == "root":
            args["owner"] = pwd.getpwuid(os.geteuid()).pw_name
    return task


HANDLERS = [{"name": "Restart registry", "ansible.builtin.debug": {"msg": "the registry would restart"}}]
GROUP = grp.getgrgid(os.getgid()).gr_name


def leaked(text, password):
    """The forms in which ``password`` could show up in ``text``."""
    forms = {password, password.strip(), json.dumps(password)[1:-1], json.dumps(password, ensure_ascii=True)[1:-1]}
    forms.update(line.strip() for line in password.splitlines() if len(line.strip()) >= 5)
    return sorted(form for form in forms if form and form in text)


# -- the htpasswd task of server.yml, run four times ----------------------------------


@pytest.fixture(scope="module")
def accounts_runs(tmp_path_factory):
    """Create every hostile account; check-run and run a revocation plus a password change; rerun."""
    work = tmp_path_factory.mktemp("htpasswd")
    (work / "registry").mkdir()
    task = as_this_user(role_task("server.yml", "Write the htpasswd accounts (bcrypt; accounts not listed are removed)"))

    def play(users):
        users_file = work / ("users-%d.yml" % len(list(work.glob("users-*.yml"))))
        users_file.write_text(yaml.safe_dump({"container_registry_users": users}, allow_unicode=True))
        return [{
            "name": "Registry accounts", "hosts": "all", "gather_facts": False,
            "vars": {"__container_registry_config_dir": str(work / "registry"), "container_registry_auth": True,
                     "__container_registry_service_group": GROUP},
            "vars_files": [str(users_file)],
            "tasks": [task], "handlers": HANDLERS,
        }]

    later = [dict(user, password=CHANGED_PASSWORD) if user["name"] == CHANGED else user
             for user in HOSTILE_USERS if user["name"] != REVOKED]
    path = work / "registry" / "htpasswd"
    runs = {"create": run_playbook(work, play(HOSTILE_USERS), "-vvv", "--diff")}
    runs["created_text"] = path.read_text()
    runs["check"] = run_playbook(work, play(later), "-vvv", "--check", "--diff", report_dir=work / "report")
    runs["after_check_text"] = path.read_text()
    runs["apply"] = run_playbook(work, play(later), "-vvv", "--diff")
    runs["applied_text"] = path.read_text()
    runs["rerun"] = run_playbook(work, play(later), "-vvv", "--check", "--diff")
    runs["path"] = path
    runs["report"] = (work / "report" / "drift.json").read_text() + (work / "report" / "drift.md").read_text()
    return runs


def parsed_hashes(text):
    return {name: entry.hash for name, entry in _htpasswd.parse(text).entries.items()}


RUN_NAMES = ["create", "check", "apply", "rerun"]


@pytest.mark.parametrize("run", RUN_NAMES)
def test_accounts_run_succeeds(accounts_runs, run):
    proc = accounts_runs[run]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("run", RUN_NAMES)
def test_no_password_at_vvv_or_in_diff(accounts_runs, run):
    output = accounts_runs[run].stdout + accounts_runs[run].stderr
    assert TOKEN not in output
    for user in HOSTILE_USERS + [{"name": CHANGED, "password": CHANGED_PASSWORD}]:
        assert leaked(output, user["password"]) == []


@pytest.mark.parametrize("run", RUN_NAMES)
def test_no_hash_at_vvv_or_in_diff(accounts_runs, run):
    output = accounts_runs[run].stdout + accounts_runs[run].stderr
    assert not BCRYPT_HASH.search(output)


def test_the_drift_report_names_accounts_but_holds_no_secret(accounts_runs):
    report = accounts_runs["report"]
    assert TOKEN not in report and not BCRYPT_HASH.search(report)
    assert "-%s" % REVOKED in report and "+%s (password changed)" % CHANGED in report


@pytest.mark.parametrize("user", HOSTILE_USERS, ids=[u["name"] for u in HOSTILE_USERS])
def test_every_hostile_password_verifies_after_creation(accounts_runs, user):
    hashes = parsed_hashes(accounts_runs["created_text"])
    assert bcrypt.checkpw(user["password"].encode("utf-8"), hashes[user["name"]].encode("ascii"))


def test_created_file_is_exactly_the_list_in_order(accounts_runs):
    assert list(parsed_hashes(accounts_runs["created_text"])) == [u["name"] for u in HOSTILE_USERS]
    assert accounts_runs["created_text"].count("\n") == len(HOSTILE_USERS)  # newlines in passwords stay inside hashes


def test_check_mode_writes_nothing_and_predicts_the_change(accounts_runs):
    assert accounts_runs["after_check_text"] == accounts_runs["created_text"]
    assert recap_changed(accounts_runs["check"]) == 1
    assert recap_changed(accounts_runs["apply"]) == 1


def test_a_removed_user_is_really_removed(accounts_runs):
    text = accounts_runs["applied_text"]
    assert REVOKED not in parsed_hashes(text)
    revoked_password = next(u["password"] for u in HOSTILE_USERS if u["name"] == REVOKED).encode()
    for hash_ in parsed_hashes(text).values():
        assert not bcrypt.checkpw(revoked_password, hash_.encode())


def test_a_changed_password_replaces_the_old_one(accounts_runs):
    hash_ = parsed_hashes(accounts_runs["applied_text"])[CHANGED].encode()
    assert bcrypt.checkpw(CHANGED_PASSWORD.encode(), hash_)
    assert not bcrypt.checkpw(HOSTILE_USERS[0]["password"].encode(), hash_)


KEPT = [u["name"] for u in HOSTILE_USERS if u["name"] not in (REVOKED, CHANGED)]


@pytest.mark.parametrize("name", KEPT)
def test_a_kept_users_hash_is_byte_for_byte_unchanged(accounts_runs, name):
    assert parsed_hashes(accounts_runs["applied_text"])[name] == parsed_hashes(accounts_runs["created_text"])[name]


def test_rerun_changes_nothing_and_file_mode_is_0640(accounts_runs):
    assert recap_changed(accounts_runs["rerun"]) == 0
    mode = stat.S_IMODE(accounts_runs["path"].stat().st_mode)
    assert mode == 0o640
    assert accounts_runs["path"].stat().st_gid == os.getgid()


# -- bad account lists, straight into the module ---------------------------------------


@pytest.fixture()
def module_side(monkeypatch):
    # As tests/unit/conftest.py does for module tests: module code, not controller code.
    monkeypatch.setattr(module_utils_internal, "is_controller", False)
    monkeypatch.setattr(module_warnings, "_global_warnings", {})
    monkeypatch.setattr(module_warnings, "_global_deprecations", {})
    monkeypatch.setattr(registry_htpasswd, "BCRYPT_ROUNDS", 4)


def run_module(capsys, **args):
    return module_runner.run_module(registry_htpasswd, capsys, with_output=True, **args)


GOOD = {"name": "keeper", "password": "Zq7-keeper-password"}
BAD_LISTS = [
    ("name-with-colon", [{"name": "eve:admin", "password": "Zq7-colon-name"}], "the name contains ':'"),
    ("name-with-newline", [{"name": "eve\nmallory", "password": "Zq7-newline-name"}], "white space or control characters"),
    ("name-with-space", [{"name": "eve admin", "password": "Zq7-space-name"}], "white space or control characters"),
    ("name-with-tab", [{"name": "eve\tadmin", "password": "Zq7-tab-name"}], "white space or control characters"),
    ("name-comment", [{"name": "#eve", "password": "Zq7-hash-name"}], "begins with '#'"),
    ("name-empty", [{"name": "", "password": "Zq7-empty-name"}], "the name is empty"),
    ("password-empty", [{"name": "eve", "password": ""}], "the password is empty"),
    ("password-nul", [{"name": "eve", "password": "Zq7-nul\x00byte"}], "NUL"),
    ("password-73-bytes", [{"name": "eve", "password": "Zq7-" + "x" * 69}], "longer than 72 bytes"),
    ("password-multibyte-over-72", [{"name": "eve", "password": "Zq7-" + "€" * 23}], "longer than 72 bytes"),
    ("duplicate-users", [GOOD, dict(GOOD, password="Zq7-second-keeper")], "listed twice"),
    ("duplicate-after-others", [GOOD, {"name": "x", "password": "Zq7-x"}, dict(GOOD, password="Zq7-third")], "users[2] (keeper)"),
]


@pytest.mark.parametrize("users, message", [case[1:] for case in BAD_LISTS], ids=[case[0] for case in BAD_LISTS])
def test_bad_account_lists_are_refused_and_leave_the_file_alone(tmp_path, capsys, module_side, users, message):
    path = tmp_path / "htpasswd"
    res, _out = run_module(capsys, path=str(path), users=[GOOD])
    assert res["changed"] is True
    before = path.read_bytes()
    for check_mode in (True, False):
        res, out = run_module(capsys, path=str(path), users=users, _ansible_check_mode=check_mode, _ansible_diff=True)
        assert res.get("failed") is True and message in res["msg"], res
        assert TOKEN not in out
        assert path.read_bytes() == before


@pytest.mark.parametrize("users, error", [
    ([{"name": "eve"}], "missing required arguments: password"),
    ([{"name": "eve", "password": "Zq7-extra", "admin": True}], "admin"),
    (["eve:Zq7-string-entry"], "dictionary requested"),
], ids=["missing-password", "unknown-key", "string-entry"])
def test_malformed_entries_are_refused_by_the_argument_spec(tmp_path, capsys, module_side, users, error):
    res, out = run_module(capsys, path=str(tmp_path / "htpasswd"), users=users)
    assert res.get("failed") is True and error in res["msg"]
    assert TOKEN not in out
    assert not (tmp_path / "htpasswd").exists()


def test_foreign_lines_in_the_file_are_dropped_without_printing_them(tmp_path, capsys, module_side):
    path = tmp_path / "htpasswd"
    secret_line = "intruder:$apr1$Zq7salt$abcdefghijklmnopqrstuv"
    path.write_text("# Zq7 note by hand\n%s\nnot an entry Zq7\n" % secret_line)
    res, out = run_module(capsys, path=str(path), users=[GOOD], _ansible_diff=True)
    assert res["changed"] is True and res["removed"] == ["intruder"]
    assert TOKEN not in out and "$apr1$" not in out
    assert list(parsed_hashes(path.read_text())) == ["keeper"]


# -- the role's task files: every secret-handling task is protected --------------------


def _args(task):
    return next((value for key, value in task.items() if "." in key and isinstance(value, dict)), {})


def _module(task):
    return next((key for key, value in task.items() if "." in key and isinstance(value, dict)), None)


def secret_tasks():
    """(file, task) for each task in the role's own files that writes or reads a secret."""
    out = []
    for tasks_file in ("main.yml", "server.yml", "tls.yml", "binary.yml", "client.yml"):
        for task in role_tasks(tasks_file):
            args = _args(task)
            values = json.dumps(list(args.values()))
            templated = " ".join(re.findall(r"{{(.*?)}}", values))
            if (".key" in values or "htpasswd" in values or "password" in templated
                    or any("password" in key for key in args)
                    or _module(task) in ("community.general.htpasswd", "hpc.gpu_containers.registry_htpasswd")):
                out.append((tasks_file, task))
    return out


SECRET_TASKS = secret_tasks()


def test_the_secret_handling_tasks_are_the_ones_expected():
    assert sorted(task["name"] for _f, task in SECRET_TASKS) == sorted([
        "Create the CA key", "Create the CA signing request", "Self-sign the CA certificate",
        "Create the server key", "Create the server signing request", "Sign the server certificate with the cluster CA",
        "Install the site private key", "Write the htpasswd accounts (bcrypt; accounts not listed are removed)",
        "Try the login account", "Log in to the registries"])


@pytest.mark.parametrize("tasks_file, task", SECRET_TASKS, ids=[t["name"] for _f, t in SECRET_TASKS])
def test_a_secret_task_cannot_print_its_secret(tasks_file, task):
    module = _module(task)
    args = _args(task)
    if module in ("ansible.builtin.copy", "ansible.builtin.template"):
        assert task.get("diff") is False and task.get("no_log") is True, "a copied secret would be its own diff"
    elif module.startswith("community.crypto."):
        # These modules read or write a key but return public data only, unless asked for content.
        assert not args.get("return_content", False)
    elif module == "hpc.gpu_containers.registry_htpasswd":
        # The module's password option is no_log and its diff names accounts: checked by the runs above.
        pass
    elif "url_password" in args or "password" in args:
        assert task.get("no_log") is True
    else:
        pytest.fail("%s: %s handles a secret in a way this test does not know" % (tasks_file, task["name"]))
    assert module != "community.general.htpasswd"  # one user per task: cannot revoke


# -- tls.yml in site mode: the private key in check, diff and -vvv ----------------------


def _site_pki(directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    (directory / "site.key").write_text(key_pem)
    (directory / "site.crt").write_text(cert_pem)
    (directory / "site-ca.crt").write_text(cert_pem)
    return key_pem


@pytest.fixture(scope="module")
def site_tls_runs(tmp_path_factory):
    work = tmp_path_factory.mktemp("tls")
    key_pem = _site_pki(work)
    tls_dir = work / "tls"
    play = [{
        "name": "Site TLS", "hosts": "all", "gather_facts": False,
        "vars": {
            "container_registry_tls_mode": "site", "container_registry_tls_dir": str(tls_dir),
            "container_registry_host": "localhost", "__container_registry_service_group": GROUP,
            "container_registry_tls_cert_src": str(work / "site.crt"),
            "container_registry_tls_key_src": str(work / "site.key"),
            "container_registry_tls_ca_src": str(work / "site-ca.crt"),
        },
        "tasks": [{"name": "The role's TLS tasks", "ansible.builtin.include_tasks": str(ROLE / "tasks" / "tls.yml")}],
        "handlers": HANDLERS,
    }]
    runs = {"key": key_pem, "tls_dir": tls_dir}
    runs["check"] = run_playbook(work, play, "-vvv", "--check", "--diff", report_dir=work / "report-check")
    runs["check_report"] = work / "report-check"
    if os.geteuid() == 0:  # the tasks chown to root
        runs["apply"] = run_playbook(work, play, "-vvv", "--diff")
        runs["recheck"] = run_playbook(work, play, "-vvv", "--check", "--diff", report_dir=work / "report-recheck")
    return runs


def key_material(key_pem):
    return [line for line in key_pem.splitlines() if line and not line.startswith("-----")]


@pytest.mark.parametrize("run", ["check", "apply", "recheck"])
def test_site_private_key_never_printed(site_tls_runs, run):
    if run not in site_tls_runs:
        pytest.skip("the real run chowns to root")
    proc = site_tls_runs[run]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    output = proc.stdout + proc.stderr
    for line in key_material(site_tls_runs["key"]):
        assert line not in output
    assert "PRIVATE KEY-----" not in output


def test_site_private_key_not_in_the_drift_report_but_its_change_is(site_tls_runs):
    report_dir = site_tls_runs["check_report"]
    text = (report_dir / "drift.json").read_text() + (report_dir / "drift.md").read_text()
    for line in key_material(site_tls_runs["key"]):
        assert line not in text
    tasks = [c["task"] for c in json.loads((report_dir / "drift.json").read_text())["hosts"]["localhost"]["changed"]]
    assert "Install the site private key" in tasks
    for name in ("drift.json", "drift.md"):
        assert stat.S_IMODE((report_dir / name).stat().st_mode) == 0o640


def test_site_private_key_installed_0640_and_no_drift_after(site_tls_runs):
    if "apply" not in site_tls_runs:
        pytest.skip("the real run chowns to root")
    key = site_tls_runs["tls_dir"] / "server.key"
    assert key.read_text() == site_tls_runs["key"]
    assert stat.S_IMODE(key.stat().st_mode) == 0o640
    assert recap_changed(site_tls_runs["recheck"]) == 0


# -- binary.yml: the download is checked against its digest ----------------------------


def checksum_pattern():
    return yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["__container_registry_binary_checksum_pattern"]


HEX = "0123456789abcdef" * 8


@pytest.mark.parametrize("checksum, accepted", [
    ("sha256:" + HEX[:64], True),
    ("sha256:" + HEX[:64].upper(), True),
    ("sha384:" + HEX[:96], True),
    ("sha512:" + HEX[:128], True),
    ("", False),
    ("sha256:" + HEX[:63], False),
    ("sha256:" + HEX[:65], False),
    ("sha256:" + HEX[:64] + "\n", False),
    ("sha256: " + HEX[:64], False),
    (HEX[:64], False),
    ("md5:" + HEX[:32], False),
    ("sha1:" + HEX[:40], False),
    ("sha256:https://mirror.example/registry.tar.gz.sha256", False),
    ("sha256:" + "g" * 64, False),
])
def test_checksum_pattern(checksum, accepted):
    # The Jinja `match` test the assert uses is re.match.
    assert bool(re.match(checksum_pattern(), checksum)) is accepted


def _release(directory):
    """A stand-in release tar.gz holding a `registry` file; returns (path, sha256)."""
    data = b"#!/bin/sh\necho stand-in registry\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("registry")
        info.size = len(data)
        info.mode = 0o755
        tar.addfile(info, io.BytesIO(data))
    path = directory / "registry_0.0.0_linux_amd64.tar.gz"
    path.write_bytes(buffer.getvalue())
    return path, hashlib.sha256(buffer.getvalue()).hexdigest()


def binary_play(work, url, checksum):
    # Included as a file, not through the role: the play's handler stands in for the restart, and the
    # role's templates are found beside the playbook.
    if not (work / "templates").exists():
        (work / "templates").symlink_to(ROLE / "templates")
    return [{
        "name": "Registry binary", "hosts": "all", "gather_facts": True, "gather_subset": ["!all", "min"],
        "vars": {
            "container_registry_binary_url": url, "container_registry_binary_checksum": checksum,
            "__container_registry_binary_archive": str(work / "cache" / "registry-release.tar.gz"),
            "__container_registry_binary_checksum_pattern": checksum_pattern(),
            "__container_registry_service": "hpc-test-registry-never-installed",
            "__container_registry_config_dir": str(work / "config"),
        },
        "tasks": [{"name": "The role's binary tasks", "ansible.builtin.include_tasks": str(ROLE / "tasks" / "binary.yml")}],
        "handlers": HANDLERS,
    }]


@pytest.mark.parametrize("checksum", ["", "sha256:https://mirror.example/registry.sha256"], ids=["missing", "url"])
def test_binary_path_without_a_literal_checksum_stops_with_a_clear_message(tmp_path, checksum):
    release, _digest = _release(tmp_path)
    proc = run_playbook(tmp_path, binary_play(tmp_path, release.as_uri(), checksum), "--check")
    assert proc.returncode == 2
    assert "container_registry_binary_checksum to its digest, 'sha256:' followed by 64 hex digits" in proc.stdout
    assert not (tmp_path / "cache").exists()


def test_binary_download_with_another_digest_is_refused_and_not_kept(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the download directory is chowned to root")
    release, digest = _release(tmp_path)
    wrong = "sha256:" + ("0" if digest[0] != "0" else "1") + digest[1:]
    existed = os.path.exists("/usr/local/bin/registry")
    proc = run_playbook(tmp_path, binary_play(tmp_path, release.as_uri(), wrong))
    assert proc.returncode == 2
    assert "checksum" in proc.stdout.lower() and "did not match" in proc.stdout
    assert not (tmp_path / "cache" / "registry-release.tar.gz").exists()
    assert os.path.exists("/usr/local/bin/registry") == existed


def test_binary_with_the_right_digest_passes_in_check_mode(tmp_path):
    release, digest = _release(tmp_path)
    proc = run_playbook(tmp_path, binary_play(tmp_path, release.as_uri(), "sha256:" + digest), "--check", "--diff")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not (tmp_path / "cache" / "registry-release.tar.gz").exists()  # check mode downloads nothing
