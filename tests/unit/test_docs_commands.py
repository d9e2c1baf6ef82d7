# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every command the user documentation shows is run by a test, and every link in it resolves.

The documentation is README.md, docs/*.md, examples/sites/README.md and examples/sites/*/README.md. Its
commands stand in ```` ```sh ```` blocks, one complete command a line (tests/unit/_docs_commands.py reads
them). Each command must be covered one of three ways:

- CI runs it as written: the same shell words as a whole command in a Makefile recipe CI reaches,
  .ci/run, a tools/*.sh script CI runs, a command/shell/argv of molecule's YAML, or a string or argv list
  in tests/ or molecule's Python (``make <target>`` also when CI's make targets need that target);
- it is a step of README.md's "Your first real cluster", which tools/first-cluster.sh runs from README.md
  (or a guide repeats such a step word for word);
- this test runs it: the read-only commands in ``RUNNABLE`` (ansible-doc, ansible-inventory --graph,
  ansible-playbook --syntax-check, make help, ansible-galaxy collection build, ansible-vault
  encrypt_string), in a scratch copy of the checkout that a collections path names as the collection, with
  the site templates' test vault password where the command asks for one.

Anything else fails, listed as ``file:line: command``.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.hpc.gpu_containers.tests.unit import _docs_commands as dc

ROOT = dc.ROOT
VAULT_PASSWORD = Path(__file__).resolve().parent / "site-templates.vault-password"


def doc_files(root=ROOT):
    files = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    files += [root / "examples" / "sites" / "README.md"] + sorted((root / "examples" / "sites").glob("*/README.md"))
    return [f for f in files if f.is_file()]


def _read(path, root=ROOT):
    return dc.extract(path.read_text(encoding="utf-8"), str(path.relative_to(root)))


DOCS = {path: _read(path) for path in doc_files()}
COMMANDS = [command for doc in DOCS.values() for command in doc.commands]


@pytest.fixture(scope="module")
def corpus():
    return dc.Corpus(ROOT)


# ------------------------------------------------------------------------------------- the documentation


def test_documentation_found():
    assert ROOT / "README.md" in DOCS
    assert COMMANDS, "README.md and docs/ show no ```sh command at all"


def test_code_blocks_are_sh_fences_without_placeholders():
    problems = [str(p) for doc in DOCS.values() for p in doc.problems]
    assert not problems, "%d code block problem(s):\n%s" % (len(problems), "\n".join(problems))


def test_every_command_is_covered(corpus):
    uncovered = []
    first_cluster = {c.text for c in DOCS[ROOT / "README.md"].commands if dc.in_first_cluster(c)}
    for command in COMMANDS:
        how, why = dc.classify(command, corpus, VAULT_PASSWORD, first_cluster=first_cluster)
        if how is None:
            uncovered.append("%s%s" % (command, "  [%s]" % why if why else ""))
    assert not uncovered, (
        "%d of %d documented commands are run by no test: make a test run the same line (Makefile, .ci/run, "
        "tools/*.sh that CI runs, molecule, tests/), or drop the command:\n%s"
        % (len(uncovered), len(COMMANDS), "\n".join(uncovered)))


def test_links_resolve():
    cache = {}

    def read(path):
        if path not in cache:
            cache[path] = DOCS.get(path) or (_read(path) if path.is_file() else None)
        return cache[path]

    problems = [str(p) for path, doc in DOCS.items() for p in dc.broken_links(doc, path, read)]
    assert not problems, "%d broken link(s):\n%s" % (len(problems), "\n".join(problems))


def test_every_guide_is_linked_from_the_readme():
    readme = ROOT / "README.md"
    linked = set()
    for link in DOCS[readme].links:
        target = link.target.partition("#")[0]
        if target and "://" not in target:
            linked.add((readme.parent / target).resolve())
    unlinked = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not unlinked, "README.md links no guide %s" % ", ".join(unlinked)


# ------------------------------------------------------------------------- the commands this test runs


def _runnable():
    """The commands this test runs; the first-cluster steps run in their own order (tools/first-cluster.sh)."""
    return [c for c in COMMANDS
            if dc.runnable_argv(c.text, VAULT_PASSWORD) and not (c.path == "README.md" and dc.in_first_cluster(c))]


@pytest.fixture
def scratch(tmp_path):
    """A copy of the checkout, made visible as the collection by a collections path of its own."""
    base = tmp_path
    copy = base / "checkout"
    shutil.copytree(ROOT, copy, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".ansible", ".cache", "output", "__pycache__", ".pytest_cache", ".hypothesis",
        ".ruff_cache", "*.tar.gz", "dist"))
    namespace_dir = base / "collections" / "ansible_collections" / "hpc"
    namespace_dir.mkdir(parents=True)
    (namespace_dir / "gpu_containers").symlink_to(copy)
    home = base / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(HOME=str(home), ANSIBLE_HOME=str(home / ".ansible"), ANSIBLE_LOCAL_TEMP=str(base / "tmp"),
               ANSIBLE_COLLECTIONS_PATH=str(base / "collections"), ANSIBLE_NOCOLOR="1",
               PATH="%s%s%s" % (Path(sys.executable).parent, os.pathsep, os.environ.get("PATH", "")))
    return {"copy": copy, "env": env}


@pytest.mark.parametrize("command", _runnable(), ids=lambda c: "%s:%d" % (c.path, c.line))
def test_documented_command_runs(command, scratch):
    argv = dc.runnable_argv(command.text, VAULT_PASSWORD)
    # A site template's README is read from inside the template (its ansible.cfg applies there), the
    # rest from the top of the checkout.
    parts = Path(command.path).parts
    cwd = scratch["copy"].joinpath(*parts[:-1]) if parts[:2] == ("examples", "sites") and len(parts) == 4 \
        else scratch["copy"]
    if shutil.which(argv[0], path=scratch["env"]["PATH"]) is None:
        pytest.skip("%s is not installed here: %s cannot run" % (argv[0], command))
    stdin = "documentation-test-secret" if "--stdin-name" in argv else None
    proc = subprocess.run(argv, cwd=cwd, env=scratch["env"], input=stdin, capture_output=True, text=True,
                          timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, "%s\nexited %d:\n%s" % (command, proc.returncode, out[-4000:])
    assert proc.stdout.strip(), "%s printed nothing" % command
    # An inventory the command names must be there: a command run against nothing tests nothing.
    for sign in ("Unable to parse", "No inventory was parsed", "Could not match supplied host pattern"):
        assert sign not in out, "%s: %s\n%s" % (command, sign, out[-4000:])


# ----------------------------------------------------------------------------- the checker itself

SAMPLE = """# Guide

Text with [a link](#guide) and [another](other.md#part-two).

```sh
make covered   # a comment
ansible-playbook -i inventory \\
  site.yml --check
# a comment line

uncovered-command --flag
```

```text
<output> ...
```
"""


def _mini_repo(tmp_path):
    """A checkout with a Makefile, .ci/run, a tools script CI runs, a molecule task and a test."""
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run").write_text("set -e\nmake venv\nmake test 2>&1 | tee test.log\n")
    (tmp_path / "Makefile").write_text(
        "VENV := .venv\n"
        "test: unit ## all\n\t@$(call timed,unit,$(VENV)/bin/pytest -q tests/unit)\n"
        "\ttools/check.sh --all\n"
        "unit: venv\n\t$(MAKE) image\n"
        "venv:\n\tpython3 -m venv $(VENV)\n"
        "image:\n\ttrue\n"
        "demo:\n\ttools/demo.sh\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "check.sh").write_text("#!/bin/sh\nANSIBLE_X=1 ansible-inventory -i hosts.yml \\\n"
                                                 "  --graph >graph.txt\n")
    (tmp_path / "tools" / "demo.sh").write_text("#!/bin/sh\nansible-playbook demo.yml\n")
    (tmp_path / "molecule" / "default").mkdir(parents=True)
    (tmp_path / "molecule" / "default" / "verify.yml").write_text(
        "- hosts: all\n  tasks:\n    - ansible.builtin.command:\n        argv: [bhosts, -R, docker]\n"
        "    - ansible.builtin.shell: |\n        set -e\n        sbatch --wait job.sbatch && echo ok\n"
        "    - ansible.builtin.command: !unsafe 'echo {{ x }}'\n")
    (tmp_path / "molecule" / "default" / "tests").mkdir()
    (tmp_path / "molecule" / "default" / "tests" / "test_lsf.py").write_text(
        'def test_profile(host):\n    assert host.run("bsub -app gpujobs -I nvidia-smi -L").rc == 0\n')
    (tmp_path / "tests" / "unit").mkdir(parents=True)
    (tmp_path / "tests" / "unit" / "test_x.py").write_text(
        '"""Runs ansible-doc -l, says the docstring."""\n'
        'TOOLS = {}\n'
        'def test_x():\n'
        '    """make demo"""\n'
        '    run([TOOLS["ansible-playbook"], "-i", "hosts.yml", "--syntax-check", "site.yml"])\n'
        '    run("docker info")\n'
        '    run(f"make demo {x}")\n')
    return dc.Corpus(tmp_path)


def test_extract_sample():
    doc = dc.extract(SAMPLE, "guide.md")
    assert [(c.line, c.text) for c in doc.commands] == [
        (6, "make covered"), (7, "ansible-playbook -i inventory site.yml --check"), (11, "uncovered-command --flag")]
    assert doc.commands[0].sections == ("Guide",)
    assert doc.problems == []  # a ```text block may show <output> and ...
    assert doc.anchors == {"guide"}
    assert [link.target for link in doc.links] == ["#guide", "other.md#part-two"]


@pytest.mark.parametrize("text, line, message", [
    ("# T\n\nSome text:\n\n    make demo\n", 5, "indented code block"),
    ("```bash\nmake demo\n```\n", 1, "```bash block"),
    ("```console\n$ make demo\n```\n", 1, "```console block"),
    ("```shell\nmake demo\n```\n", 1, "```shell block"),
    ("Text\n\n```\nmake demo\n```\n", 3, "``` block without a language"),
    ("```sh\n$ make demo\n```\n", 2, "a prompt in a ```sh block"),
    ("```sh\nansible-vault encrypt_string '<password>' --name password\n```\n", 2, "placeholder '<password>'"),
    ("```sh\nmake demo\nansible-playbook -i inventory site.yml ...\n```\n", 3, "placeholder '...'"),
    ("```sh\nmake demo\nansible-vault encrypt_string 'secret --name password\n```\n", 3, "unclosed ' quote"),
])
def test_extract_rejects(text, line, message):
    problems = dc.extract(text, "bad.md").problems
    assert len(problems) == 1 and message in problems[0].message, problems
    assert str(problems[0]).startswith("bad.md:%d: " % line)


def test_extract_accepts_list_continuations_and_redirections():
    text = ("- item one\n  continued\n\n    a second paragraph of the item\n\n"
            "```sh\nmake demo >demo.log 2>&1   # keeps <placeholders> in comments\n```\n")
    doc = dc.extract(text, "ok.md")
    assert doc.problems == []
    assert [c.text for c in doc.commands] == ["make demo >demo.log 2>&1"]


def test_matcher(tmp_path):
    corpus = _mini_repo(tmp_path)
    assert corpus.ci_targets == {"test", "unit", "venv", "image"}
    assert [p.name for p in corpus.tools] == ["check.sh"]
    covered = [
        "make test", "make unit", "make image",                        # run by CI, or needed by what CI runs
        ".venv/bin/pytest -q tests/unit",                              # $(call timed,...) with $(VENV) expanded
        "ansible-inventory -i hosts.yml --graph",                      # continuation joined, env and redirect cut
        "bhosts -R docker",                                            # molecule argv list
        "sbatch --wait job.sbatch",                                    # one command of a shell task's line
        "ansible-playbook -i hosts.yml --syntax-check site.yml",       # a test's argv list, TOOLS["..."] named
        "docker info",                                                 # a test's string
        "bsub -app gpujobs -I nvidia-smi -L",                          # a testinfra test's string
        "make venv",
    ]
    for command in covered:
        assert corpus.covers(command), command
    uncovered = [
        "make demo",                                   # a target CI never reaches (only a docstring names it)
        "ansible-playbook demo.yml",                   # in tools/demo.sh, which CI does not run
        "ansible-doc -l",                              # a docstring is no test
        "ansible-inventory -i hosts.yml",              # a part of a command is not the command
        "ansible-inventory -i hosts.yml --graph --yaml",
        "-i hosts.yml --graph",                        # does not start where a command starts
        "bhosts -R",                                   # argv lists match whole
        "make demo x",                                 # an f-string piece is no command
        "sbatch --wait job.sbatch && echo",
        "make",
    ]
    for command in uncovered:
        assert not corpus.covers(command), command


def test_classify(tmp_path):
    corpus = _mini_repo(tmp_path)
    readme = "# Tool\n\n## Your first real cluster\n\n```sh\ncp -r a b\n```\n\n## Other\n\n```sh\ncp -r c d\n```\n"
    first, other = dc.extract(readme, "README.md").commands
    assert dc.classify(first, corpus, VAULT_PASSWORD, tmp_path) == (None, "tools/first-cluster.sh does not exist")
    (tmp_path / "tools" / "first-cluster.sh").write_text("#!/bin/sh\ngrep -q x docs/other.md\n")
    assert "does not read README.md" in dc.classify(first, corpus, VAULT_PASSWORD, tmp_path)[1]
    (tmp_path / "tools" / "first-cluster.sh").write_text("#!/bin/sh\nsed -n '/## Your first real cluster/,$p' "
                                                         "README.md\n")
    assert "CI does not run tools/first-cluster.sh" in dc.classify(first, corpus, VAULT_PASSWORD, tmp_path)[1]
    with (tmp_path / ".ci" / "run").open("a") as ci_run:
        ci_run.write("tools/first-cluster.sh\n")
    corpus = dc.Corpus(tmp_path)
    assert dc.classify(first, corpus, VAULT_PASSWORD, tmp_path) == ("first-cluster", "tools/first-cluster.sh")
    assert dc.classify(other, corpus, VAULT_PASSWORD, tmp_path) == (None, None)
    # A guide that repeats a first-cluster step word for word runs with it.
    assert dc.classify(other, corpus, VAULT_PASSWORD, tmp_path, first_cluster={"cp -r c d"})[0] == "first-cluster"
    runs = dc.extract("```sh\nansible-doc -t module hpc.gpu_containers.lsf_queue\nmake help\n"
                      "ansible-playbook hpc.gpu_containers.site --syntax-check --vault-id site@prompt\n"
                      "ansible-playbook hpc.gpu_containers.site --check\nmake test\n```\n", "docs/x.md").commands
    assert [dc.classify(c, corpus, VAULT_PASSWORD, tmp_path)[0] for c in runs] == ["run", "run", "run", None, "ci"]
    assert dc.runnable_argv(runs[2].text, VAULT_PASSWORD)[-1] == "site@%s" % VAULT_PASSWORD
    assert dc.runnable_argv('ansible-vault encrypt_string --vault-id "site@$HOME/.vault" --stdin-name password',
                            VAULT_PASSWORD)[3] == "site@%s" % VAULT_PASSWORD
    for text in ("ansible-inventory --graph > g.txt", "ansible-doc $MODULE", "ansible-inventory --list --output x",
                 "rm -rf / --graph", "ANSIBLE_X=1 ansible-doc -l"):
        assert dc.runnable_argv(text, VAULT_PASSWORD) is None, text


def test_links(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Part two\n\n[back](../README.md#tool)\n")
    readme = tmp_path / "README.md"
    readme.write_text("# Tool\n\n[ok](docs/guide.md) [ok](docs/guide.md#part-two) [ok](#tool) "
                      "[web](https://example.org/x)\n\n[gone](docs/missing.md) [bad anchor](docs/guide.md#part-3)\n"
                      "[bad local](#nowhere)\n")
    docs = {p: dc.extract(p.read_text(), p.name) for p in (readme, tmp_path / "docs" / "guide.md")}
    problems = dc.broken_links(docs[readme], readme, docs.get)
    assert [(p.line, p.message) for p in problems] == [
        (5, "link to docs/missing.md: no such file"),
        (5, "link to docs/guide.md#part-3: no heading with that anchor"),
        (6, "link to #nowhere: no heading with that anchor")]
    guide = tmp_path / "docs" / "guide.md"
    assert dc.broken_links(docs[guide], guide, docs.get) == []


def test_github_anchors():
    seen = {}
    assert [dc.github_anchor(t, seen) for t in ("Install", "LSF: `bsub` and jobs", "Install", "Step 2. Copy")] == [
        "install", "lsf-bsub-and-jobs", "install-1", "step-2-copy"]
