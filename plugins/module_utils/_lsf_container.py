# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The CONTAINER and EXEC_DRIVER value grammars of lsb.applications / lsb.queues.

Pure Python, no Ansible.  Text in, structure out, and back.

CONTAINER (IBM LSF 10.1 "Configuring containers with LSF")::

    container := runtime '[' clause* ']'
    runtime   := docker | nvidia-docker | shifter | singularity | podman | enroot | <word>
    clause    := keyword '(' balanced-text ')'
    keyword   := image | options | starter | container_io | job_pre_post | <word>

``options(...)`` holds raw ``docker run`` options, whitespace separated; a token
``@/path/script`` names a script whose output LSF splices in at run time.
Parentheses nest inside a clause (the argument is read with a depth counter);
when reading, quotes group blanks into one token.  What is written never relies
on that: LSF splits options() at blanks and documents no quoting, so
:func:`container_from_params` refuses a blank inside one docker argument.

EXEC_DRIVER::

    exec_driver := section*        (each section once)
    section     := context '[' ('user' '(' name ')')? ']'
                 | (starter | controller | monitor) '[' path ']'

A value that does not follow the grammar (real files have them: the PowerAI
runbook's profile has bare options and an unbalanced ``)`` inside ``docker[...]``)
raises :class:`ValueSyntaxError`; callers keep such a value opaque and byte-identical.

Rendering produces *tokens*: pieces the value may be broken between with a
``' \\'`` continuation without changing what LSF reads (a break is always at a
blank that separates two tokens, outside quotes).
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_lexer import excerpt

__all__ = [
    "ValueSyntaxError", "ContainerSpec", "ExecDriverSpec",
    "parse_container", "render_container_tokens", "render_container",
    "container_from_params", "parse_exec_driver", "render_exec_driver_tokens",
    "render_exec_driver", "exec_driver_from_params", "check_value_text",
    "split_option_tokens", "RESERVED_DOCKER_OPTIONS", "KNOWN_RUNTIMES",
]

KNOWN_RUNTIMES = ("docker", "nvidia-docker", "shifter", "singularity", "podman", "enroot")

# docker run options LSF sets itself or forbids in options() (IBM "Configuring LSF
# to run Docker jobs"): using them is allowed by the parser but worth a warning.
RESERVED_DOCKER_OPTIONS = ("--cgroup-parent", "--user", "-u", "--name", "-w", "--workdir", "--ulimit")

# --ulimit limits that are not warned about.  LSF passes the job's limits to the
# container with --ulimit, and an explicit one overrides LSF's; that matters for
# the limits LSF enforces for jobs (CPULIMIT, FILELIMIT, DATALIMIT, STACKLIMIT,
# CORELIMIT, MEMLIMIT... and any it may pass through).  LSF has no job limit for
# locked memory, and RDMA/GPUDirect need it raised (the PowerAI runbook sets
# --ulimit memlock=N:N), so memlock is not risky in that sense.
ULIMITS_NOT_WARNED = ("memlock",)

EXEC_DRIVER_SCRIPTS = ("starter", "controller", "monitor")

_BLANKS = " \t"
_WORD_RE = re.compile(r"[A-Za-z0-9_-]*")
_SPECIAL_RE = re.compile(r"[\"'()\[\]]")
_BLANK_RUN_RE = re.compile(r"[ \t]+")
# NUL ends the text for LSF's C reader; \v, \f and the other control
# characters are blanks to it or invisible in the file.  A tab is a blank.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class ValueSyntaxError(ValueError):
    """The value does not follow the grammar; ``offset`` is where reading stopped."""

    def __init__(self, msg, offset=None):
        self.offset = offset
        super().__init__(msg if offset is None else "%s (at character %d)" % (msg, offset + 1))


def check_value_text(text, what="value"):
    """Refuse text LSF's lsb reader would cut or split: '#', line breaks, a
    trailing '\\', NUL and other control characters.

    lsb.* readers end the line at any '#' (quotes do not protect it), so a '#'
    would silently truncate the value.  Raises ValueError with a readable reason.
    """
    if "#" in text:
        raise ValueError("%s %s contains '#': lsb.* files end a line at any '#', "
                         "so LSF would cut the value there" % (what, excerpt(text)))
    if "\n" in text or "\r" in text:
        raise ValueError("%s %s contains a line break" % (what, excerpt(text)))
    if text.rstrip(_BLANKS).endswith("\\"):
        raise ValueError("%s %s ends with '\\', which LSF reads as a line continuation" % (what, excerpt(text)))
    bad = _CONTROL_RE.search(text)
    if bad:
        raise ValueError("%s %s contains the control character %r, which LSF does not read as written"
                         % (what, excerpt(text), bad.group()))


class _Reader:
    """A cursor over one logical value with the few scanning steps the grammars need."""

    def __init__(self, text):
        self.text = text
        self.pos = 0

    def skip_blanks(self):
        while self.pos < len(self.text) and self.text[self.pos] in _BLANKS:
            self.pos += 1

    def at_end(self):
        return self.pos >= len(self.text)

    def peek(self):
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def word(self):
        match = _WORD_RE.match(self.text, self.pos)
        self.pos = match.end()
        return match.group()

    def expect(self, char):
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "end of value"
            raise ValueSyntaxError("expected %r, found %s" % (char, found), self.pos)
        self.pos += 1

    def balanced(self, close):
        """Read up to the ``close`` that matches an already consumed opener.

        Parentheses nest; quotes hide brackets and parentheses; a bracket of the
        other kind inside is an error (LSF's own reader would pair it differently).
        """
        start = self.pos
        text = self.text
        # fast path: nothing nests or quotes before the closing character
        end = text.find(close, start)
        if end >= 0 and not _SPECIAL_RE.search(text, start, end):
            self.pos = end + 1
            return text[start:end]
        depth = 0
        quote = None
        while self.pos < len(text):
            char = text[self.pos]
            if quote:
                if char == quote:
                    quote = None
            elif char in "\"'":
                quote = char
            elif char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    if close == ")":
                        self.pos += 1
                        return text[start:self.pos - 1]
                    raise ValueSyntaxError("unbalanced ')'", self.pos)
                depth -= 1
            elif char == "]":
                if close == "]" and depth == 0:
                    self.pos += 1
                    return text[start:self.pos - 1]
                raise ValueSyntaxError("unexpected ']'", self.pos)
            elif char == "[":
                raise ValueSyntaxError("unexpected '['", self.pos)
            self.pos += 1
        if quote:
            raise ValueSyntaxError("unterminated quote %s" % quote, start)
        raise ValueSyntaxError("missing %r" % close, start)


def split_option_tokens(text):
    """Split docker options text into tokens: blanks separate, quotes and parentheses group.

    ``--env "A=b c"`` gives ``['--env', '"A=b c"']``; quotes are kept, LSF hands
    the text to docker as written.  Raises ValueSyntaxError for an unterminated
    quote or unbalanced parentheses.
    """
    if not _SPECIAL_RE.search(text):
        return [token for token in _BLANK_RUN_RE.split(text) if token]
    tokens = []
    current = []
    depth = 0
    quote = None
    for index, char in enumerate(text):
        if quote:
            current.append(char)
            if char == quote:
                quote = None
            continue
        if char in _BLANKS and depth == 0:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        if char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                raise ValueSyntaxError("unbalanced ')'", index)
            depth -= 1
        elif char in "[]":
            raise ValueSyntaxError("%r inside options" % char, index)
        current.append(char)
    if quote:
        raise ValueSyntaxError("unterminated quote %s" % quote)
    if depth:
        raise ValueSyntaxError("unbalanced '('")
    if current:
        tokens.append("".join(current))
    return tokens


class ContainerSpec:
    """A parsed CONTAINER value.

    ``options`` are the docker options in order without the ``@script`` tokens,
    ``options_scripts`` the script paths (without ``@``) in order, ``clauses`` the
    other ``keyword(arg)`` clauses (``starter(root)``...) in order.  ``image`` and
    ``options`` are None when the clause is absent.
    """

    __slots__ = ("runtime", "image", "options", "options_scripts", "clauses")

    def __init__(self, runtime, image=None, options=None, options_scripts=None, clauses=None):
        self.runtime = runtime
        self.image = image
        self.options = list(options or [])
        self.options_scripts = list(options_scripts or [])
        self.clauses = list(clauses or [])

    def key(self):
        """What LSF acts on: equal keys mean the values run the same containers.

        The @script tokens are compared as a separate list: their output is
        spliced between options, and docker run options are order-free.
        """
        return (self.runtime, self.image, tuple(self.options), tuple(self.options_scripts),
                tuple(self.clauses))

    def __eq__(self, other):
        return isinstance(other, ContainerSpec) and self.key() == other.key()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return "ContainerSpec(%r, image=%r, options=%r, options_scripts=%r, clauses=%r)" % self.key()

    def to_dict(self):
        return {
            "runtime": self.runtime,
            "image": self.image,
            "options": list(self.options),
            "options_scripts": list(self.options_scripts),
            "clauses": dict(self.clauses),
        }

    def warnings(self):
        """Options LSF reserves for itself (IBM: do not use them in options()).

        ``--ulimit`` is warned about unless it sets a limit in
        :data:`ULIMITS_NOT_WARNED` (``memlock``: no LSF job limit to override).
        """
        found = []
        options = self.options
        for index, token in enumerate(options):
            flag, eq, value = token.partition("=")
            if flag not in RESERVED_DOCKER_OPTIONS:
                continue
            if flag == "--ulimit":
                if not eq and index + 1 < len(options) and not options[index + 1].startswith("-"):
                    value = options[index + 1]
                limit = value.split("=", 1)[0].strip("\"'")
                if limit in ULIMITS_NOT_WARNED:
                    continue
                found.append("docker option --ulimit %s overrides the limit LSF sets for the job; IBM advises "
                             "against --ulimit in options()" % (limit or "(no limit named)"))
                continue
            found.append("docker option %s is set by LSF itself; IBM advises against it in options()" % flag)
        return found


def parse_container(text):
    """Parse a CONTAINER value (already joined across continuations) into a ContainerSpec."""
    reader = _Reader(text)
    reader.skip_blanks()
    runtime = reader.word()
    if not runtime:
        raise ValueSyntaxError("expected a container runtime name", reader.pos)
    reader.skip_blanks()
    reader.expect("[")
    spec = ContainerSpec(runtime)
    seen = set()
    while True:
        reader.skip_blanks()
        if reader.peek() == "]":
            reader.pos += 1
            break
        start = reader.pos
        keyword = reader.word()
        if not keyword:
            found = repr(reader.peek()) if reader.peek() else "end of value"
            raise ValueSyntaxError("expected keyword(...) or ']', found %s" % found, reader.pos)
        reader.skip_blanks()
        reader.expect("(")
        arg = reader.balanced(")")
        lowered = keyword.lower()
        if lowered in seen:
            raise ValueSyntaxError("%s() appears twice" % keyword, start)
        seen.add(lowered)
        if lowered == "image":
            image = arg.strip(_BLANKS)
            if not image or any(c in image for c in _BLANKS):
                raise ValueSyntaxError("image() must hold exactly one image name", start)
            spec.image = image
        elif lowered == "options":
            for token in split_option_tokens(arg):
                if token.startswith("@") and len(token) > 1:
                    spec.options_scripts.append(token[1:])
                else:
                    spec.options.append(token)
        else:
            spec.clauses.append((keyword, " ".join(split_option_tokens(arg))))
    reader.skip_blanks()
    if not reader.at_end():
        raise ValueSyntaxError("text after the closing ']'", reader.pos)
    return spec


def _check_token(token, what):
    check_value_text(token, what)
    if any(c in token for c in "[]"):
        raise ValueError("%s %r contains '[' or ']', which would end the CONTAINER value early" % (what, token))


def _pair_flags(tokens):
    """Keep ``--flag value`` together so a line break never separates them (cosmetic)."""
    out = []
    for token in tokens:
        if (out and not token.startswith(("-", "@")) and out[-1].startswith("-")
                and "=" not in out[-1] and " " not in out[-1]):
            out[-1] = out[-1] + " " + token
        else:
            out.append(token)
    return out


def render_container_tokens(spec):
    """Tokens of the CONTAINER text; joined by single blanks they are the value.

    A line may be broken between two tokens; an option and its argument
    (``--volume /a:/b``) form one token so they stay on one line.

    Raises ValueError for content that cannot be written safely (see check_value_text).
    """
    if not spec.runtime or not all(c.isalnum() or c in "_-" for c in spec.runtime):
        raise ValueError("container runtime %r is not a plain name" % (spec.runtime,))
    pieces = []
    if spec.image is not None:
        _check_token(spec.image, "container image")
        if not spec.image or any(c in spec.image for c in _BLANKS + "()"):
            raise ValueError("container image %r must be one name without blanks or parentheses" % spec.image)
        pieces.append(["image(%s)" % spec.image])
    option_tokens = list(spec.options) + ["@" + script for script in spec.options_scripts]
    if option_tokens:
        for token in option_tokens:
            _check_token(token, "container option")
        joined = _pair_flags(split_option_tokens(" ".join(option_tokens)))
        joined[0] = "options(" + joined[0]
        joined[-1] = joined[-1] + ")"
        pieces.append(joined)
    for keyword, arg in spec.clauses:
        if not keyword or not all(c.isalnum() or c in "_-" for c in keyword):
            raise ValueError("container clause name %r is not a plain word" % (keyword,))
        if keyword.lower() in ("image", "options"):
            raise ValueError("container clause %r duplicates image/options" % keyword)
        _check_token(arg, "container clause %s()" % keyword)
        words = split_option_tokens(arg) or [""]
        words[0] = "%s(%s" % (keyword, words[0])
        words[-1] = words[-1] + ")"
        pieces.append(words)
    tokens = [token for piece in pieces for token in piece]
    if not tokens:
        return ["%s[]" % spec.runtime]
    tokens[0] = "%s[%s" % (spec.runtime, tokens[0])
    tokens[-1] = tokens[-1] + "]"
    return tokens


def render_container(spec):
    return " ".join(render_container_tokens(spec))


def _as_list(items, what):
    """Lists stay lists; one string is one item (list items in a module's list of dicts are not type-checked)."""
    if items is None:
        return []
    if isinstance(items, str):
        return [items]
    if not isinstance(items, (list, tuple)):
        raise ValueError("%s must be a list of strings, not %s" % (what, type(items).__name__))
    return list(items)


def _normalise_options(items, what):
    """Option tokens of the items; refuse a blank inside one docker argument.

    LSF splits options() at blanks and documents no quoting, so a mount path
    with a blank would reach docker as several arguments (the part after the
    blank even read as the image).  Each bare word must be the value of the
    flag just before it (``--volume /a:/b``), an ``@script`` or a ``$VARIABLE``;
    another bare word, or a word grouped by quotes or parentheses around a
    blank, is refused.
    """
    tokens = []
    wants_value = False  # the previous token is a flag without "=value"
    for item in _as_list(items, what):
        item = str(item)
        check_value_text(item, what)
        try:
            parts = split_option_tokens(item)
        except ValueSyntaxError as exc:
            raise ValueError("%s %r: %s" % (what, item, exc))
        for part in parts:
            if any(c in part for c in _BLANKS):
                raise ValueError("%s %r has a blank inside one docker argument (%r): LSF splits options() at "
                                 "blanks and has no documented quoting; use a path without blanks"
                                 % (what, item, part))
            if part.startswith("-"):
                wants_value = "=" not in part
            elif part.startswith(("@", "$")):  # an options script, or a variable that may stand for options
                wants_value = False
            elif wants_value:
                wants_value = False
            else:
                raise ValueError("%s %r has a blank inside a value: %r would reach docker as a separate "
                                 "argument (LSF splits options() at blanks and has no documented quoting); "
                                 "use a path without blanks" % (what, item, part))
        tokens.extend(parts)
    return tokens


def container_from_params(params):
    """Build a ContainerSpec from the module's structured ``container`` option.

    ``options`` items may hold several words (``--volume /a:/b``); they are split
    into tokens so that comparison with a parsed value is structural.  Options that
    start with ``@`` are moved to ``options_scripts``.
    """
    runtime = params.get("runtime") or "docker"
    options = []
    scripts = []
    for token in _normalise_options(params.get("options"), "container option"):
        if token.startswith("@") and len(token) > 1:
            scripts.append(token[1:])
        else:
            options.append(token)
    for script in _as_list(params.get("options_scripts"), "options_scripts"):
        script = str(script)
        check_value_text(script, "options script")
        script = script[1:] if script.startswith("@") else script
        if not script or any(c in script for c in _BLANKS + "()[]\"'"):
            raise ValueError("options script %r must be one path without blanks, quotes or brackets" % script)
        scripts.append(script)
    clauses = []
    if not isinstance(params.get("clauses") or {}, dict):
        raise ValueError("container clauses must be a mapping of keyword to argument")
    for keyword, arg in (params.get("clauses") or {}).items():
        arg = "" if arg is None else str(arg)
        check_value_text(arg, "container clause %s()" % keyword)
        try:
            clauses.append((str(keyword), " ".join(split_option_tokens(arg))))
        except ValueSyntaxError as exc:
            raise ValueError("container clause %s(%s): %s" % (keyword, arg, exc))
    image = params.get("image")
    spec = ContainerSpec(runtime, image=None if image is None else str(image), options=options,
                         options_scripts=scripts, clauses=clauses)
    render_container_tokens(spec)  # refuse what cannot be written, before any file is read
    return spec


class ExecDriverSpec:
    """A parsed EXEC_DRIVER value: the context user and the three driver scripts."""

    __slots__ = ("user", "starter", "controller", "monitor", "has_context")

    def __init__(self, user=None, starter=None, controller=None, monitor=None, has_context=None):
        self.user = user
        self.starter = starter
        self.controller = controller
        self.monitor = monitor
        self.has_context = (user is not None) if has_context is None else has_context

    def key(self):
        return (self.user, self.starter, self.controller, self.monitor)

    def __eq__(self, other):
        return isinstance(other, ExecDriverSpec) and self.key() == other.key()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self.key())

    def __repr__(self):
        return "ExecDriverSpec(user=%r, starter=%r, controller=%r, monitor=%r)" % self.key()

    def to_dict(self):
        return {"user": self.user, "starter": self.starter, "controller": self.controller,
                "monitor": self.monitor}


def parse_exec_driver(text):
    """Parse an EXEC_DRIVER value into an ExecDriverSpec."""
    reader = _Reader(text)
    spec = ExecDriverSpec()
    seen = set()
    while True:
        reader.skip_blanks()
        if reader.at_end():
            break
        start = reader.pos
        section = reader.word()
        if not section:
            raise ValueSyntaxError("expected context[...], starter[...], controller[...] or monitor[...]",
                                   reader.pos)
        lowered = section.lower()
        if lowered not in ("context",) + EXEC_DRIVER_SCRIPTS:
            raise ValueSyntaxError("unknown EXEC_DRIVER section %r" % section, start)
        if lowered in seen:
            raise ValueSyntaxError("%s[...] appears twice" % section, start)
        seen.add(lowered)
        reader.skip_blanks()
        reader.expect("[")
        if lowered == "context":
            spec.has_context = True
            while True:
                reader.skip_blanks()
                if reader.peek() == "]":
                    reader.pos += 1
                    break
                clause_start = reader.pos
                keyword = reader.word()
                if keyword.lower() != "user" or spec.user is not None:
                    raise ValueSyntaxError("context[] holds one user(name) clause", clause_start)
                reader.skip_blanks()
                reader.expect("(")
                user = reader.balanced(")").strip(_BLANKS)
                if not user or any(c in user for c in _BLANKS + "()"):
                    raise ValueSyntaxError("user() must hold one user name", clause_start)
                spec.user = user
        else:
            path = reader.balanced("]").strip(_BLANKS)
            if not path or any(c in path for c in _BLANKS + "()"):
                raise ValueSyntaxError("%s[] must hold one path" % section, start)
            setattr(spec, lowered, path)
    if not seen:
        raise ValueSyntaxError("empty EXEC_DRIVER value", 0)
    return spec


def render_exec_driver_tokens(spec):
    """One token per section, in LSF's documented order (context, starter, controller, monitor)."""
    tokens = []
    if spec.user is not None or spec.has_context:
        if spec.user is not None:
            _check_word(spec.user, "exec_driver user")
            tokens.append("context[user(%s)]" % spec.user)
        else:
            tokens.append("context[]")
    for name in EXEC_DRIVER_SCRIPTS:
        path = getattr(spec, name)
        if path is not None:
            _check_word(path, "exec_driver %s" % name)
            tokens.append("%s[%s]" % (name, path))
    if not tokens:
        raise ValueError("exec_driver needs at least one of user, starter, controller, monitor")
    return tokens


def _check_word(value, what):
    check_value_text(value, what)
    if not value or any(c in value for c in _BLANKS + "()[]"):
        raise ValueError("%s %r must be one word without blanks, brackets or parentheses" % (what, value))


def render_exec_driver(spec):
    return " ".join(render_exec_driver_tokens(spec))


def exec_driver_from_params(params):
    """Build an ExecDriverSpec from the module's structured ``exec_driver`` option."""
    values = {}
    for name in ("user",) + EXEC_DRIVER_SCRIPTS:
        value = params.get(name)
        values[name] = None if value is None else str(value)
    spec = ExecDriverSpec(**values)
    render_exec_driver_tokens(spec)  # refuse what cannot be written
    return spec
