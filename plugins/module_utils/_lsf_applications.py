# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""lsb.applications: application profiles, read and edited without losing a byte.

Pure Python, no Ansible.  Built on the shared section model (``_lsf_sections``)
read the way mbatchd reads lsb.* files: a ``#`` anywhere ends the line (quotes do
not protect it) and a final ``\\`` joins the next line with nothing in between.

Grammar (IBM LSF 10.1 lsb.applications(5))::

    file        := (comment | blank | directive | application)*
    application := 'Begin Application' entry* 'End Application'
    entry       := KEY '=' value          (blanks around '=' optional)

NAME identifies a profile; a key set twice in one profile: the last one wins
(warned).  CONTAINER and EXEC_DRIVER values are read with ``_lsf_container``;
one that does not follow that grammar is kept opaque and byte-identical
(warned with its line) and can still be replaced as a whole.  A key set
between ``#if`` and ``#endif`` (time-based configuration) belongs to one branch;
such keys are refused (error naming the line) rather than collapsed.  A profile
defined twice cannot be edited (which one LSF uses is undocumented).

Edits touch only the lines of the entries they change; a new entry goes after
the profile's last entry in the style of the profile's first one (indentation,
``=`` column, blanks after ``=``); a new profile goes after the last
``End Application`` (before any trailing comments) in the style of the last
profile.  Values longer than the line width are broken between tokens with
``' \\'`` continuations.  Values are compared structurally (token lists, parsed
CONTAINER/EXEC_DRIVER), so a value LSF reads the same way is never rewritten.

API for scripts and benchmarks (text in, text out)::

    new_text, changed, warnings = apply_profiles(text, [
        {"name": "dockerapp", "state": "present", "description": "Docker jobs",
         "container": {"runtime": "docker", "image": "repo/img:tag",
                       "options": ["--rm", "--net=host"], "options_scripts": ["/sh/opts.sh"]},
         "exec_driver": {"user": "lsfadmin", "starter": "/lsf/etc/docker-starter.py"},
         "parameters": {"RES_REQ": "select[docker]", "RUNLIMIT": None}},   # None removes
    ])
    doc = ApplicationsFile(text); doc.profile("dockerapp").value("CONTAINER"); doc.render()

``changed`` lists the profile names whose text changed, in request order.
For a "1k profiles parse + edit + render" benchmark: build the file once with
``apply_profiles("", requests)``, then time ``apply_profiles(text, requests)``
with some requests altered (one parse, one render for all profiles).
Errors are :class:`LsfSyntaxError` (``.msg``, ``.line``) for malformed files and
``ValueError`` for requests that cannot be written.
"""

from __future__ import annotations

import re

from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_container import (
    ValueSyntaxError,
    check_value_text,
    container_from_params,
    exec_driver_from_params,
    parse_container,
    parse_exec_driver,
    render_container_tokens,
    render_exec_driver_tokens,
)
from ansible_collections.hpc.gpu_containers.plugins.module_utils._lsf_sections import (
    LsfSyntaxError,
    parse_document,
)

__all__ = ["ApplicationsFile", "Profile", "apply_profiles", "LsfSyntaxError", "LINE_WIDTH",
           "value_tokens", "desired_entries"]

# Lines are broken with ' \' continuations beyond this width.
LINE_WIDTH = 80

_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FIRST_KEYS = ("NAME", "DESCRIPTION", "CONTAINER", "EXEC_DRIVER")


def value_tokens(text):
    """Blank-separated tokens of a plain value; quoted text stays one token.

    Two values with equal token lists read the same for LSF's keyword parsers;
    a break between tokens with a continuation does not change them.
    """
    tokens = []
    current = []
    quote = None
    for char in text:
        if quote:
            current.append(char)
            if char == quote:
                quote = None
        elif char in " \t":
            if current:
                tokens.append("".join(current))
                current = []
        else:
            if char in "\"'":
                quote = char
            current.append(char)
    if current:
        tokens.append("".join(current))
    return tokens


_IF_RE = re.compile(r"[ \t]*#if\b", re.IGNORECASE)
_ENDIF_RE = re.compile(r"[ \t]*#endif\b", re.IGNORECASE)


class Profile:
    """One ``Begin Application`` ... ``End Application`` block."""

    def __init__(self, section, lines):
        self.section = section
        name = section.get("NAME")
        self.name = name.value if name is not None else None
        # Entries between #if and #endif (time-based configuration): each branch
        # may set the key, so they are not duplicates and are not edited here.
        self.conditional = set()
        depth = 0
        for line in section.body:
            if line.kind == "directive":
                text = lines[line.start]
                if _IF_RE.match(text):
                    depth += 1
                elif _ENDIF_RE.match(text) and depth:
                    depth -= 1
            elif line.kind == "code" and depth:
                self.conditional.add(line.start)
        self.has_conditionals = bool(self.conditional)

    def is_conditional(self, entry):
        return entry.line.start in self.conditional

    @property
    def lineno(self):
        return self.section.lineno

    def entry(self, key):
        """The entry LSF uses for ``key`` (the last one), or None."""
        return self.section.get(key)

    def value(self, key):
        entry = self.section.get(key)
        return None if entry is None else entry.value

    def container(self):
        """The parsed CONTAINER value; None when absent; raises ValueSyntaxError when opaque."""
        value = self.value("CONTAINER")
        return None if value is None else parse_container(value)

    def exec_driver(self):
        value = self.value("EXEC_DRIVER")
        return None if value is None else parse_exec_driver(value)


def _same(key, current, wanted, parsed=None):
    """True when LSF reads ``current`` (text from the file) as ``wanted`` (a spec or text).

    ``parsed`` maps (KEY, text) to the spec already parsed from the file (or the
    ValueSyntaxError it raised), so a drift check parses each value once.
    """
    if current is None:
        return False
    upper = key.upper()
    if upper in ("CONTAINER", "EXEC_DRIVER") and not isinstance(wanted, str):
        spec = (parsed or {}).get((upper, current))
        if spec is None:
            try:
                spec = (parse_container if upper == "CONTAINER" else parse_exec_driver)(current)
            except ValueSyntaxError as exc:
                spec = exc
        return not isinstance(spec, ValueSyntaxError) and spec == wanted  # opaque: replace it
    return value_tokens(current) == value_tokens(wanted)


def _render_tokens(key, wanted):
    upper = key.upper()
    if upper == "CONTAINER" and not isinstance(wanted, str):
        return render_container_tokens(wanted)
    if upper == "EXEC_DRIVER" and not isinstance(wanted, str):
        return render_exec_driver_tokens(wanted)
    return value_tokens(wanted)


def _wrap(prefix, tokens, width=LINE_WIDTH):
    """Line bodies for ``prefix`` + tokens, broken with ' \\' between tokens.

    Continuation lines are indented to the value column.  The lsb reader drops
    the ``\\`` and keeps the blank before it, so tokens stay separated.
    """
    if not tokens:
        return [prefix.rstrip(" \t")]
    indent = " " * len(prefix.expandtabs(8))
    lines = []
    current = prefix + tokens[0]
    for token in tokens[1:]:
        if len((current + " " + token).expandtabs(8)) + 2 > width:
            lines.append(current + " \\")
            current = indent + token
        else:
            current = current + " " + token
    lines.append(current)
    return lines


class _Style:
    """How a profile writes its entries: indentation and the ``=`` layout."""

    def __init__(self, indent="", eq_column=None, before="", after=" ", begin_indent=""):
        self.indent = indent
        self.eq_column = eq_column  # width of key + blanks before '=' when keys are padded
        self.before = before
        self.after = after
        self.begin_indent = begin_indent

    @classmethod
    def of(cls, section, lines):
        begin_body = lines[section.begin.start]
        begin_indent = begin_body[:len(begin_body) - len(begin_body.lstrip(" \t"))]
        if not section.entries:
            return cls(indent=begin_indent, eq_column=12, before=" ", after=" ", begin_indent=begin_indent)
        first = section.entries[0]
        eq = first.sep.find("=")
        before, after = first.sep[:eq], first.sep[eq + 1:]
        eq_column = None
        if len(before) > 1 and before.strip(" ") == "":
            eq_column = len(first.key) + len(before)
        return cls(indent=first.indent, eq_column=eq_column, before=before or "",
                   after=after, begin_indent=begin_indent)

    def prefix(self, key):
        if self.eq_column is not None and len(key) < self.eq_column:
            return self.indent + key.ljust(self.eq_column) + "=" + self.after
        if self.before and self.before.strip(" \t") == "":
            return self.indent + key + " =" + self.after
        return self.indent + key + self.before + "=" + self.after


def desired_entries(request):
    """Map one profile request (the module's structured form) to ``[(KEY, wanted)]``.

    ``wanted`` is a ContainerSpec, an ExecDriverSpec, text, or None (remove the
    key).  Raises ValueError for what cannot be written, before any file is
    touched; the message names the profile and the key
    (``application powerai: DESCRIPTION: value 'x\\ny' contains a line break``).
    """
    name = request.get("name")
    if not name or not isinstance(name, str):
        raise ValueError("a profile needs a name")
    check_value_text(name, "profile name")
    if len(value_tokens(name)) != 1 or any(c in name for c in "\"'()[]="):
        raise ValueError("profile name %r must be one word" % name)
    where = "application %s: " % name
    out = [("NAME", name)]
    parameters = dict(request.get("parameters") or {})
    taken = {}
    for key in parameters:
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(where + "parameter name %r is not a valid lsb.applications key" % (key,))
        if key.lower() in ("begin", "end"):
            raise ValueError(where + "parameter name %r would be read as %s line and break the file"
                             % (key, "an End" if key.lower() == "end" else "a Begin"))
        if key.upper() in taken:
            raise ValueError(where + "parameter %s is given twice (as %s and %s)"
                             % (key.upper(), taken[key.upper()], key))
        taken[key.upper()] = key
    if "NAME" in taken:
        raise ValueError(where + "set the profile name with name, not parameters.NAME")
    for option, key in (("description", "DESCRIPTION"), ("container", "CONTAINER"),
                        ("exec_driver", "EXEC_DRIVER")):
        if request.get(option) is not None and key in taken:
            raise ValueError(where + "%s and parameters.%s both set %s" % (option, taken[key], key))
    try:
        key = "DESCRIPTION"
        if request.get("description") is not None:
            description = str(request["description"])
            check_value_text(description)
            out.append((key, description))
        key = "CONTAINER"
        if request.get("container") is not None:
            out.append((key, container_from_params(request["container"])))
        key = "EXEC_DRIVER"
        if request.get("exec_driver") is not None:
            out.append((key, exec_driver_from_params(request["exec_driver"])))
        for param, value in parameters.items():
            key = param.upper()
            if value is None:
                out.append((key, None))
                continue
            if isinstance(value, bool):
                value = "Y" if value else "N"
            value = str(value)
            check_value_text(value)
            out.append((key, value))
    except ValueError as exc:
        raise ValueError("%s%s: %s" % (where, key, exc))
    return out


class ApplicationsFile:
    """A parsed lsb.applications file with queued edits."""

    def __init__(self, text):
        self.doc = parse_document(text or "", default_shape="horizontal", quote_aware=False, join="drop")
        self._parse_warnings = list(self.doc.warnings)
        self._edit_warnings = []
        # values that do not follow their grammar: (entry, key, profile, error);
        # what happens to them is told by the warnings property
        self._opaque = []
        self._fate = {}  # first physical line of an entry -> "replaced" / "removed"
        self.profiles = []
        self._parsed = {}
        by_name = {}
        self._count = {}
        for section in self.doc.sections:
            if section.key != "application":
                raise LsfSyntaxError("section %s does not belong in lsb.applications" % section.name,
                                     section.lineno)
            profile = Profile(section, self.doc.lines)
            self.profiles.append(profile)
            self._count[profile.name] = self._count.get(profile.name, 0) + 1
            if profile.name is None:
                self._parse_warnings.append("line %d: application profile without NAME; LSF ignores it"
                                            % profile.lineno)
                continue
            if profile.name in by_name:
                self._parse_warnings.append("line %d: profile %s is also defined on line %d"
                                            % (profile.lineno, profile.name, by_name[profile.name].lineno))
            by_name[profile.name] = profile
            for key, parse in (("CONTAINER", parse_container), ("EXEC_DRIVER", parse_exec_driver)):
                entry = profile.entry(key)
                if entry is None:
                    continue
                try:
                    spec = parse(entry.value)
                except ValueSyntaxError as exc:
                    self._parsed[(key, entry.value)] = exc
                    self._opaque.append((entry, key, profile, exc))
                    continue
                self._parsed[(key, entry.value)] = spec
        self._by_name = by_name
        self._touched = set()
        self._removed = set()

    @property
    def warnings(self):
        """Parse warnings, then one per value that does not follow its grammar
        saying what this edit does with it (kept, replaced or removed), then
        the edit's own warnings."""
        out = list(self._parse_warnings)
        for entry, key, profile, exc in self._opaque:
            if id(profile) in self._removed:
                continue  # the whole profile goes
            fate = self._fate.get(entry.line.start)
            outcome = {"replaced": "replaced by the value requested",
                       "removed": "removed"}.get(fate, "kept as it is")
            out.append("line %d: %s of profile %s does not follow the %s grammar (%s); %s"
                       % (entry.lineno, key, profile.name, key, exc, outcome))
        out.extend(self._edit_warnings)
        return out

    def warn(self, message):
        self._edit_warnings.append(message)

    def profile(self, name):
        return self._by_name.get(name)

    def names(self):
        return [p.name for p in self.profiles if p.name is not None]

    def _style_for_new(self):
        if self.profiles:
            return _Style.of(self.profiles[-1].section, self.doc.lines)
        return _Style(eq_column=12, before=" ")

    def _check_unique(self, name):
        if name in self._touched:
            raise ValueError("profile %s is requested twice" % name)
        self._touched.add(name)
        if self._count.get(name, 0) > 1:
            dups = [p for p in self.profiles if p.name == name]
            raise LsfSyntaxError("profile %s is defined more than once (lines %s); remove the duplicates first"
                                 % (name, ", ".join(str(p.lineno) for p in dups)), dups[-1].lineno)

    def remove(self, name):
        """Queue removal of profile ``name``; True when it existed."""
        self._check_unique(name)
        profile = self._by_name.get(name)
        if profile is None:
            return False
        section = profile.section
        start, end = section.begin.start, section.end.end
        lines = self.doc.lines
        # take one separating blank line along so no double blank is left behind;
        # a last profile takes the blank before it (the one adding it put there)
        if end < len(lines) and not lines[end].strip() and (start == 0 or not lines[start - 1].strip()):
            end += 1
        elif end == len(lines) and start > 0 and not lines[start - 1].strip():
            start -= 1
        self.doc.delete_lines(start, end)
        self._removed.add(id(profile))
        return True

    def set(self, request):
        """Queue the edits that make profile ``request['name']`` hold the request. True when changed."""
        wanted = desired_entries(request)
        name = wanted[0][1]
        self._check_unique(name)
        profile = self._by_name.get(name)
        if profile is None:
            return self._append(wanted)
        section = profile.section
        lines = self.doc.lines
        style = _Style.of(section, lines)
        eol = self.doc.eol
        changed = False
        additions = []
        for key, value in wanted[1:]:
            entries = section.entries_for(key)
            for entry in entries:
                if profile.is_conditional(entry):
                    raise LsfSyntaxError("%s of profile %s is set under #if (time-based configuration); "
                                         "edit it by hand" % (key, name), entry.lineno)
            if value is None:
                for entry in entries:
                    self.doc.delete_entry(entry)
                    self._fate[entry.line.start] = "removed"
                    changed = True
                continue
            if entries and _same(key, entries[-1].value, value, self._parsed):
                continue
            changed = True
            tokens = _render_tokens(key, value)
            if not entries:
                additions.extend(_wrap(style.prefix(key), tokens))
                continue
            for entry in entries[:-1]:  # the earlier duplicates LSF ignores
                self.doc.delete_entry(entry)
                self._fate[entry.line.start] = "removed"
            entry = entries[-1]
            self._fate[entry.line.start] = "replaced"
            line = entry.line
            prefix = entry.indent + entry.key + entry.sep
            new = _wrap(prefix, tokens)
            if line.comment is not None:
                last = lines[line.end - 1].rstrip("\r\n")
                gap = last[:last.index(line.comment)]
                gap = gap[len(gap.rstrip(" \t")):] or " "
                new[-1] = new[-1] + gap + line.comment
            line_eol = lines[line.end - 1][len(lines[line.end - 1].rstrip("\r\n")):] or eol
            self.doc.replace_lines(line.start, line.end, [text + line_eol for text in new])
        if request.get("exclusive"):
            named = set(key for key, _value in wanted)
            for entry in list(section.entries):
                if entry.key.upper() in named:
                    continue
                if profile.is_conditional(entry):
                    self.warn("line %d: %s of profile %s is set under #if (time-based "
                              "configuration); kept although the profile is exclusive"
                              % (entry.lineno, entry.key, name))
                    continue
                self.doc.delete_entry(entry)
                self._fate[entry.line.start] = "removed"
                changed = True
        if additions:
            # after the last entry, unless that would put the new ones inside an #if block
            index = section.end.start if profile.has_conditionals else section.insert_index
            self.doc.insert_lines(index, [text + eol for text in additions])
        return changed

    def _append(self, wanted):
        style = self._style_for_new()
        eol = self.doc.eol
        body = [style.begin_indent + "Begin Application"]
        for key, value in wanted:
            if value is None:
                continue
            body.extend(_wrap(style.prefix(key), _render_tokens(key, value)))
        body.append(style.begin_indent + "End Application")
        lines = self.doc.lines
        kept = [p for p in self.profiles if id(p) not in self._removed]
        index = kept[-1].section.end.end if kept else len(lines)
        new = [text + eol for text in body]
        if index > 0 and lines[index - 1].strip():
            new.insert(0, eol)  # a blank line between profiles
        if index < len(lines) and lines[index].strip():
            new.append(eol)
        self.doc.insert_lines(index, new)
        return True

    def render(self):
        return self.doc.render()


def apply_profiles(text, requests):
    """Apply profile requests to lsb.applications text.

    Each request: ``name``, ``state`` (present/absent, default present),
    ``description``, ``container``, ``exec_driver``, ``parameters`` and
    ``exclusive`` (remove the profile's keys the request does not name).  Returns
    ``(new_text, changed_names, warnings)``; ``new_text == text`` when nothing
    changes.
    """
    doc = ApplicationsFile(text)
    changed = []
    for request in requests:
        if request.get("state", "present") == "absent":
            name = request.get("name")
            if not name:
                raise ValueError("a profile needs a name")
            if doc.remove(name):
                changed.append(name)
        else:
            if doc.set(request):
                changed.append(request["name"])
            if request.get("container") is not None:
                spec = container_from_params(request["container"])
                for warning in spec.warnings():
                    doc.warn("profile %s: %s" % (request["name"], warning))
    new_text = doc.render() if changed else (text or "")
    return new_text, changed, doc.warnings
