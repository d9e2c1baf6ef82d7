# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The commands of the user documentation, and the places where CI runs them.

``extract()`` reads one Markdown file: the commands of its ```` ```sh ```` blocks (continuation lines joined,
comments and blank lines dropped), the problems a reader would trip on (an indented code block, a fence
without a language or in ```` ```bash ````/```` ```console ````/```` ```shell ````, a ``$`` prompt, an unclosed
quote, a ``<placeholder>`` or ``...`` in a command), its headings with their GitHub anchors and its links.

``Corpus`` holds every command line that CI executes: the Makefile's recipes (its variables expanded, the
command of each ``$(call ...)``), .ci/run, the tools/*.sh scripts CI reaches, the command/shell/raw/argv
values of molecule's YAML files, and the string literals (not docstrings) and argv lists of tests/**/*.py and
molecule/**/*.py.
``Corpus.covers()`` says whether a documented command is one of them, as a whole command: the same shell
words (after ``shlex``), starting where a command starts (line start, after ``;``, ``&&``, ``||``, ``|``,
``then``, ``do``, environment assignments) and ending where it ends (line end, an operator or a
redirection). A ``make <target>`` is also covered when CI runs a make target that needs that target.
"""

import ast
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import yaml
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]

# Fence languages that must be written ```sh (one spelling, so one extractor finds every command).
OTHER_SHELL_FENCES = {"bash", "console", "shell", "shell-session", "sh-session", "zsh", "terminal"}
# A <placeholder> (not a redirection: no blank right after "<" or right before ">") or an ellipsis.
PLACEHOLDER = re.compile(r"<[A-Za-z_][^<>\s]*(?:\s[^<>\s]+)*>")
ELLIPSIS = re.compile(r"\.\.\.|\u2026")

OPERATORS = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&", "{", "}"}
REDIRECTS = {">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"}
# Words after which a new command starts (when they stand where a command starts).
COMMAND_PREFIXES = {"then", "do", "else", "elif", "if", "while", "until", "!", "exec", "time", "env"}
# This checker's own files: their sample commands are no test of the documentation.
SELF = {"test_docs_commands.py", Path(__file__).name}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Keys of molecule task arguments that hold a command line or an argv list.
COMMAND_KEYS = {"command", "shell", "raw", "cmd", "argv", "_raw_params",
                "ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.raw"}


@dataclass
class Command:
    path: str        # relative to the checkout
    line: int        # 1-based line of the command's first line
    text: str        # the command, continuations joined, whitespace normalised, trailing comment dropped
    sections: tuple  # the headings it stands under, outermost first

    def __str__(self):
        return "%s:%d: %s" % (self.path, self.line, self.text)


@dataclass
class Problem:
    path: str
    line: int
    message: str

    def __str__(self):
        return "%s:%d: %s" % (self.path, self.line, self.message)


@dataclass
class Link:
    path: str
    line: int
    target: str


@dataclass
class Document:
    path: str
    commands: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    anchors: set = field(default_factory=set)
    links: list = field(default_factory=list)


# --------------------------------------------------------------------------------------------------- Markdown


def words_as_written(text):
    """The shell words of ``text`` as written (quotes kept), up to a comment (a ``#`` that starts a word).

    Raises ValueError on an unclosed quote.
    """
    words, current, quote, escaped = [], "", None, False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char.isspace():
            if current:
                words.append(current)
            current = ""
            continue
        elif char == "#" and not current:
            break
        current += char
    if quote:
        raise ValueError("unclosed %s quote" % quote)
    if current:
        words.append(current)
    return words


def sh_block_commands(content, first_line):
    """(line, text) of each command of a ```sh block whose first content line is ``first_line``."""
    return [(first_line + number - 1, text.strip()) for number, text in _logical_lines(content)
            if text.strip() and not text.lstrip().startswith("#")]


def github_anchor(text, seen):
    """The anchor GitHub gives a heading with this text (``seen`` counts earlier ones for -1, -2...)."""
    slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return slug if count == 0 else "%s-%d" % (slug, count)


def _inline_text(token):
    return "".join(child.content for child in (token.children or []) if child.type in ("text", "code_inline"))


_MARKDOWN = MarkdownIt("commonmark").enable("table")


def extract(text, path):
    """The Document of Markdown ``text`` read from ``path`` (a name for messages)."""
    doc = Document(path)
    seen = {}
    headings = []  # (level, text)
    tokens = _MARKDOWN.parse(text)
    for index, token in enumerate(tokens):
        line = token.map[0] + 1 if token.map else 0
        if token.type == "heading_open":
            level = int(token.tag[1:])
            title = _inline_text(tokens[index + 1])
            headings = [h for h in headings if h[0] < level] + [(level, title)]
            doc.anchors.add(github_anchor(title, seen))
        elif token.type == "code_block":
            doc.problems.append(Problem(path, line, "indented code block: write it as a ```sh block (commands) "
                                                    "or a ```text block (output)"))
        elif token.type == "fence":
            _fence(doc, token, line, tuple(h[1] for h in headings))
        elif token.type == "inline":
            _inline_links(doc, token, line)
        elif token.type == "html_block":
            doc.anchors.update(re.findall(r"\sid=\"([^\"]+)\"", token.content))
    return doc


def _fence(doc, token, line, sections):
    """The commands of a fenced block starting on ``line``, or the problem with its language."""
    lang = (token.info.split() or [""])[0].lower()
    if lang in OTHER_SHELL_FENCES:
        doc.problems.append(Problem(doc.path, line, "```%s block: shell commands go in ```sh blocks" % lang))
    elif not lang:
        doc.problems.append(Problem(doc.path, line, "``` block without a language: ```sh for commands, ```text for "
                                                    "output, or the format it shows"))
    if lang != "sh":
        return
    for number, written in sh_block_commands(token.content, line + 1):
        if written.startswith("$ "):
            doc.problems.append(Problem(doc.path, number, "a prompt in a ```sh block: write the command alone: %s"
                                        % written))
            continue
        try:
            command = " ".join(words_as_written(written))
        except ValueError as error:
            doc.problems.append(Problem(doc.path, number, "%s: %s" % (error, written)))
            continue
        if command:
            doc.commands.append(Command(doc.path, number, command, sections))
        for mark in PLACEHOLDER.findall(command) + ELLIPSIS.findall(command):
            doc.problems.append(Problem(doc.path, number, "placeholder %r in a command: %s" % (mark, command)))


def _inline_links(doc, token, line):
    """The links of a paragraph (or heading, or table cell) starting on ``line``, each with its own line."""
    cursor = 0
    for child in _walk_inline(token.children or []):
        target = child.attrGet("href") if child.type == "link_open" else \
            child.attrGet("src") if child.type == "image" else None
        if target:
            found = token.content.find(target, cursor)
            if found >= 0:
                cursor = found + 1
            doc.links.append(Link(doc.path, line + token.content.count("\n", 0, max(found, 0)), target))
    for href in re.findall(r"<a\s[^>]*href=\"([^\"]+)\"", token.content):
        doc.links.append(Link(doc.path, line, href))


def _walk_inline(children):
    for child in children:
        yield child
        yield from _walk_inline(child.children or [])


def broken_links(doc, source, read):
    """Problems for each relative link of ``doc`` (read from file ``source``) that does not resolve.

    ``read(path)`` returns the Document of another Markdown file (for its anchors), or None.
    """
    problems = []
    for link in doc.links:
        target = link.target
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
            continue  # http:, https:, mailto:
        path_part, _hash, anchor = target.partition("#")
        path_part = unquote(path_part)
        if path_part:
            resolved = (source.parent / path_part).resolve()
            if not resolved.exists():
                problems.append(Problem(link.path, link.line, "link to %s: no such file" % target))
                continue
        else:
            resolved = source.resolve()
        if anchor:
            if resolved.suffix != ".md" or resolved.is_dir():
                continue
            other = doc if resolved == source.resolve() else read(resolved)
            if other is None or anchor not in other.anchors:
                problems.append(Problem(link.path, link.line, "link to %s: no heading with that anchor" % target))
    return problems


# ---------------------------------------------------------------------------------------------- shell words


def shell_words(text):
    """The shell words and operators of ``text`` (comments dropped), or None when it cannot be split."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return None


def boundaries(words):
    """(starts, ends): the indices where a command may start, and where one may end, in ``words``."""
    starts, ends = set(), set()
    at_start = True
    for index, word in enumerate(words):
        is_redirect = word in REDIRECTS or (word.isdigit() and index + 1 < len(words) and words[index + 1] in REDIRECTS)
        if word in OPERATORS or is_redirect:
            ends.add(index)
            at_start = word in OPERATORS
            continue
        if at_start:
            starts.add(index)
            if word in COMMAND_PREFIXES or ASSIGNMENT.match(word):
                continue  # the command proper may start after it
            at_start = False
    ends.add(len(words))
    return starts, ends


def contains_command(words, command):
    """Whether the word list ``command`` stands in ``words`` as a whole command."""
    if not command or len(command) > len(words):
        return False
    starts, ends = boundaries(words)
    size = len(command)
    return any(words[s:s + size] == command and s + size in ends for s in starts)


# ------------------------------------------------------------------------------------------------- CI corpus


@dataclass
class Entry:
    source: str   # path:line
    words: list
    argv: bool    # an argv list: it must equal the command as a whole


def _logical_lines(text):
    """(line, text) of each logical line of a shell script (backslash continuations joined)."""
    lines, pending, start = [], None, 0
    for number, raw in enumerate(text.splitlines(), 1):
        continued = raw.rstrip().endswith("\\")
        piece = raw.rstrip()[:-1] if continued else raw.rstrip()
        if pending is None:
            pending, start = piece, number
        else:
            pending += " " + piece.strip()
        if not continued:
            lines.append((start, pending))
            pending = None
    if pending is not None:
        lines.append((start, pending))
    return lines


class _AnyTagLoader(yaml.SafeLoader):
    pass


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None))


def _make_variables(text):
    variables = {}
    for _line, logical in _logical_lines(text):
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|\?=|=)\s*(.*)$", logical)
        if match and not logical.startswith("\t"):
            variables[match.group(1)] = match.group(2)
    return variables


def _split_call_args(text):
    """Arguments of a make function call body, split at top-level commas."""
    args, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            args.append(current)
            current = ""
        else:
            current += char
    args.append(current)
    return args


def expand_make(text, variables, depth=0):
    """``text`` with $(VAR) expanded, $$ made $, $(MAKE) made make; each $(call f,...,cmd) kept as its last arg."""
    if depth > 10:
        return text
    out, index = "", 0
    while index < len(text):
        if text.startswith("$$", index):
            out += "$"
            index += 2
        elif text.startswith("$(", index):
            depth_here, end = 0, index + 1
            while end < len(text):
                if text[end] == "(":
                    depth_here += 1
                elif text[end] == ")":
                    depth_here -= 1
                    if depth_here == 0:
                        break
                end += 1
            body = text[index + 2:end]
            name = body.split(None, 1)[0] if body.strip() else ""
            if name == "MAKE":
                out += "make"
            elif name == "call":
                out += expand_make(_split_call_args(body[len("call"):].lstrip())[-1], variables, depth + 1)
            elif name == "addprefix":
                prefix, _comma, words = body[len("addprefix"):].lstrip().partition(",")
                out += " ".join(prefix + word for word in expand_make(words, variables, depth + 1).split())
            elif body in variables:
                out += expand_make(variables[body], variables, depth + 1)
            else:
                out += "$(" + body + ")"
            index = end + 1
        else:
            out += text[index]
            index += 1
    return out


def make_rules(text):
    """(rules, recipes): target -> prerequisites, and target -> (line, recipe line) list."""
    rules, recipes, current = {}, {}, None
    for number, logical in _logical_lines(text):
        if logical.startswith("\t"):
            if current:
                recipes.setdefault(current, []).append((number, logical.strip().lstrip("@-+")))
            continue
        match = re.match(r"^([A-Za-z0-9_.%/$() -]+?)\s*:(?![=])\s*([^#=]*?)(?:\s*##.*)?$", logical)
        if match and not logical.startswith((".PHONY", "#")):
            targets = match.group(1).split()
            current = targets[0] if targets else None
            for target in targets:
                rules[target] = match.group(2).split()
        elif logical.strip() and not logical.startswith("#"):
            current = None
    return rules, recipes


def make_targets_in(words):
    """Targets named by each ``make`` command in ``words``, and by each make:<target> step handed to
    tools/molecule-lanes.sh (a lane such as "make:lint make:unit" is one quoted word)."""
    targets = [target for word in words for target in re.findall(r"(?<![\w-])make:([a-z0-9][a-z0-9-]*)", word)]
    starts, _ends = boundaries(words)
    for start in sorted(starts):
        if words[start] == "make":
            for word in words[start + 1:]:
                if word in OPERATORS or word in REDIRECTS:
                    break
                if word.startswith("-") or "=" in word or word.startswith("$"):
                    continue
                targets.append(word)
    return targets


def _python_entries(path, rel):
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError):
        return []
    docstrings = set()  # docstrings and the pieces of f-strings are no command lines
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            docstrings.update(id(value) for value in node.values)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    entries = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for offset, line in _logical_lines(node.value):
                words = shell_words(line)
                if words:
                    entries.append(Entry("%s:%d" % (rel, node.lineno + offset - 1), words, False))
        elif isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            argv = [_argv_word(element) for element in node.elts]
            if None not in argv:
                entries.append(Entry("%s:%d" % (rel, node.lineno), argv, True))
    return entries


def _argv_word(node):
    """A word of an argv list: a string constant, or a command named by TOOLS["name"] / _tool("name")."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    key = None
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        key = node.slice.value
    elif isinstance(node, ast.Call) and len(node.args) == 1 and isinstance(node.args[0], ast.Constant):
        key = node.args[0].value
    if isinstance(key, str) and re.fullmatch(r"(ansible|ansible-[a-z]+|make|molecule|git|docker)", key):
        return key
    return None


def _yaml_commands(value):
    """Command lines found under command keys anywhere in a loaded YAML document."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in COMMAND_KEYS:
                if isinstance(item, str):
                    yield item, False
                elif isinstance(item, list) and item and all(isinstance(w, (str, int, float)) for w in item):
                    yield [str(w) for w in item], True
            yield from _yaml_commands(item)
    elif isinstance(value, list):
        for item in value:
            yield from _yaml_commands(item)


class Corpus:
    """Every command line CI executes, and the make targets it runs."""

    def __init__(self, root=ROOT):
        self.root = root
        self.entries = []
        makefile = root / "Makefile"
        text = makefile.read_text(encoding="utf-8") if makefile.exists() else ""
        variables = _make_variables(text)
        self.rules, recipes = make_rules(text)
        self.make_recipe_words = {}
        for target, lines in recipes.items():
            for number, line in lines:
                words = shell_words(expand_make(line, variables))
                if words:
                    self.make_recipe_words.setdefault(target, []).append(("Makefile:%d" % number, words))

        # .ci/run, then every tools/*.sh that something CI runs names, to a fixed point.
        ci_words = []
        ci_run = root / ".ci" / "run"
        if ci_run.exists():
            ci_words += self._script(ci_run)
        molecule = []
        for path in sorted((root / "molecule").rglob("*.yml")) + sorted((root / "molecule").rglob("*.yaml")):
            molecule += self._yaml(path)
        tests = []  # tests/ and molecule's testinfra tests and helper scripts
        for path in sorted((root / "tests").rglob("*.py")) + sorted((root / "molecule").rglob("*.py")):
            if "output" in path.relative_to(root).parts[:2] or path.name in SELF:
                continue
            tests += _python_entries(path, str(path.relative_to(root)))
        self.entries = ci_words + molecule + tests
        roots = set()
        for entry in self.entries:
            if not entry.argv:
                roots.update(make_targets_in(entry.words))
            elif entry.words and entry.words[0] == "make":
                roots.update(w for w in entry.words[1:] if not w.startswith("-") and "=" not in w)
        self.tools = set()
        while True:
            self.ci_targets = self._reach(roots)
            texts = [" ".join(e.words) for e in self.entries]
            for target in self.ci_targets:
                texts += [" ".join(words) for _src, words in self.make_recipe_words.get(target, [])]
            blob = "\n".join(texts)
            new = {p for p in sorted((root / "tools").glob("*.sh"))
                   if p not in self.tools and ("tools/%s" % p.name) in blob}
            if not new:
                break
            self.tools |= new
            for path in new:
                words = self._script(path)
                self.entries += words
                for entry in words:
                    roots.update(make_targets_in(entry.words))
        for target in self.ci_targets:
            for source, words in self.make_recipe_words.get(target, []):
                self.entries.append(Entry(source, words, False))

    def _reach(self, roots):
        reached, todo = set(), [t for t in roots if t in self.rules]
        while todo:
            target = todo.pop()
            if target in reached:
                continue
            reached.add(target)
            todo += [t for t in self.rules.get(target, []) if t in self.rules]
            for _source, words in self.make_recipe_words.get(target, []):
                todo += [t for t in make_targets_in(words) if t in self.rules]
        return reached

    def _script(self, path):
        rel = str(path.relative_to(self.root))
        entries = []
        for number, line in _logical_lines(path.read_text(encoding="utf-8")):
            words = shell_words(line)
            if words:
                entries.append(Entry("%s:%d" % (rel, number), words, False))
        return entries

    def _yaml(self, path):
        rel = str(path.relative_to(self.root))
        try:
            documents = list(yaml.load_all(path.read_text(encoding="utf-8"), Loader=_AnyTagLoader))  # noqa: S506
        except yaml.YAMLError:
            return []
        entries = []
        for document in documents:
            for command, is_argv in _yaml_commands(document):
                if is_argv:
                    entries.append(Entry(rel, command, True))
                    continue
                for _number, line in _logical_lines(command):
                    words = shell_words(line)
                    if words:
                        entries.append(Entry(rel, words, False))
        return entries

    def covers(self, command):
        """Where CI runs ``command`` (a string): a source like 'Makefile:61', or None."""
        words = shell_words(command)
        if not words:
            return None
        if len(words) == 2 and words[0] == "make" and words[1] in self.ci_targets:
            return "make %s (run by CI's make targets)" % words[1]
        for entry in self.entries:
            if entry.argv:
                if entry.words == words:
                    return entry.source
            elif contains_command(entry.words, words):
                return entry.source
        return None


# -------------------------------------------------------------------------------------------- classification

FIRST_CLUSTER_HEADING = "Your first real cluster"
FIRST_CLUSTER_SCRIPT = "tools/first-cluster.sh"
# Commands this checker runs itself (read-only, or into a scratch copy), by their first words and a flag one
# of them must carry. Anything else a guide shows must be run by CI (Makefile, .ci/run, tools, molecule, tests).
RUNNABLE = (
    (("ansible-doc",), None),
    (("ansible-inventory",), ("--graph", "--list", "--host")),
    (("ansible-playbook",), ("--syntax-check", "--list-tasks", "--list-hosts", "--list-tags")),
    (("ansible-galaxy", "collection", "build"), None),
    (("ansible-vault", "encrypt_string"), None),
    (("make", "help"), None),
)
# Flags that would make an otherwise read-only command write outside its scratch directory.
NOT_RUNNABLE_FLAGS = ("--output", "-o", "--vault-password-file")


def in_first_cluster(command):
    return any(title.strip().lower().startswith(FIRST_CLUSTER_HEADING.lower()) for title in command.sections)


def first_cluster_script_problem(root=ROOT, corpus=None):
    """Why tools/first-cluster.sh does not run README.md's first-cluster section in CI, or None when it does."""
    script = root / FIRST_CLUSTER_SCRIPT
    if not script.is_file():
        return "%s does not exist" % FIRST_CLUSTER_SCRIPT
    text = script.read_text(encoding="utf-8")
    if "README.md" not in text:
        return "%s does not read README.md" % FIRST_CLUSTER_SCRIPT
    if FIRST_CLUSTER_HEADING not in text:
        return "%s does not name the section %r" % (FIRST_CLUSTER_SCRIPT, FIRST_CLUSTER_HEADING)
    if corpus is not None and script not in corpus.tools:
        return "CI does not run %s (no Makefile target CI reaches, nor .ci/run, names it)" % FIRST_CLUSTER_SCRIPT
    return None


def runnable_argv(text, vault_password_file):
    """The argv this checker runs for a documented command, or None when it is not one it may run.

    ``--vault-id <id>@<anything>`` and ``--ask-vault-pass`` read the test vault password file instead.
    """
    words = shell_words(text)
    if not words or any(w in OPERATORS or w in REDIRECTS for w in words):
        return None
    # The vault password a site keeps in a file of its own is the test password here.
    words = [re.sub(r"@.*", "@prompt", w) if i and words[i - 1] == "--vault-id" else w for i, w in enumerate(words)]
    if any(re.search(r"[$`~*?\[]", w) for w in words) or any(ASSIGNMENT.match(w) for w in words[:1]):
        return None  # needs a shell's expansions, or sets the environment: not run here
    if any(w in NOT_RUNNABLE_FLAGS or w.startswith("--output=") for w in words):
        return None
    for prefix, flags in RUNNABLE:
        if tuple(words[:len(prefix)]) == prefix and (flags is None or any(w in flags for w in words)):
            break
    else:
        return None
    argv = []
    for word in words:
        if word in ("--ask-vault-pass", "--ask-vault-password", "-J"):
            argv += ["--vault-password-file", str(vault_password_file)]
        elif argv and argv[-1] == "--vault-id" and word.endswith("@prompt"):
            argv.append(word[:-len("prompt")] + str(vault_password_file))
        elif word.startswith("--vault-id=") and word.endswith("@prompt"):
            argv.append(word[:-len("prompt")] + str(vault_password_file))
        else:
            argv.append(word)
    return argv


def classify(command, corpus, vault_password_file, root=ROOT, first_cluster=()):
    """(how, where) for a documented Command: how is 'ci', 'first-cluster', 'run' or None (not covered).

    ``first_cluster``: the commands of README.md's first-cluster section; a guide that repeats one of them
    word for word is covered by the same run of tools/first-cluster.sh.
    """
    where = corpus.covers(command.text)
    if where:
        return "ci", where
    if (command.path == "README.md" and in_first_cluster(command)) or command.text in first_cluster:
        problem = first_cluster_script_problem(root, corpus)
        if problem is None:
            return "first-cluster", FIRST_CLUSTER_SCRIPT
        return None, problem
    if runnable_argv(command.text, vault_password_file):
        return "run", "this test"
    return None, None
