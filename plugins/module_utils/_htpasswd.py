# -*- coding: utf-8 -*-
# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# PRIVATE to hpc.gpu_containers: used by this collection's own plugins only. Its interface can change in
# any release, minor or patch; other collections and playbooks must not import it.
"""The registry's htpasswd file, owned whole: exactly the listed accounts.

Grammar, as the distribution registry (``registry/auth/htpasswd``) reads the file:
one entry per line, ``name:hash``; each line is trimmed of white space first; blank
lines and lines that begin with ``#`` are skipped; the name ends at the first ``:``;
a later entry for a name replaces an earlier one; a non-blank line without ``:``
makes the registry refuse the whole file.  Only bcrypt hashes (``$2a$``, ``$2b$``,
``$2y$``) are accepted.

What this model writes: one ``name:hash`` line per listed account, in list order,
nothing else.  Accounts in the file but not in the list are dropped (revoked).  An
account keeps its hash when its password still verifies against it, so a rerun with
the same list returns the text unchanged; otherwise it gets a new bcrypt hash.

Pure Python: hashing and checking are handed in (``make_hash(password) -> str``,
``verify(password, hash) -> bool``), so the model runs without bcrypt in tests.
Nothing here ever puts a password or a hash into a message or a description.
"""

from __future__ import annotations

import re

__all__ = [
    "AccountError",
    "BCRYPT_PREFIXES",
    "Changes",
    "MAX_PASSWORD_BYTES",
    "check_users",
    "compute",
    "describe_file",
    "parse",
    "render",
]

BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
# bcrypt reads at most 72 bytes of a password; a longer one would be cut silently
# (two passwords sharing 72 bytes would be the same password), so it is refused.
MAX_PASSWORD_BYTES = 72
# A hash whose cost is higher than this is not checked (cost 17 already takes
# seconds); the account gets a new hash instead of hanging the run.
MAX_VERIFY_COST = 16

_BCRYPT_COST = re.compile(r"^\$2[aby]\$(\d\d)\$")


class AccountError(ValueError):
    """The account list is not usable; the message names accounts, never passwords."""


class Entry:
    """One ``name:hash`` line of the file (1-based ``line``)."""

    __slots__ = ("name", "hash", "line")

    def __init__(self, name, hash_, line):
        self.name = name
        self.hash = hash_
        self.line = line


class Parsed:
    """A parsed file: ``entries`` maps each name to its effective (last) entry;
    ``lines`` describes every line in order, for the account-level diff."""

    def __init__(self):
        self.entries = {}
        self.lines = []


class Changes:
    """What one computation changes, by account name."""

    def __init__(self):
        self.added = []
        self.removed = []
        self.updated = {}  # name -> why the hash is new
        self.kept = []


def parse(text):
    """Parse htpasswd ``text`` (``None``: no file) the way the registry reads it."""
    parsed = Parsed()
    if not text:
        return parsed
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not open one
    for number, raw in enumerate(lines, 1):
        stripped = raw.strip()
        if not stripped:
            parsed.lines.append("(line %d: blank)" % number)
            continue
        if stripped.startswith("#"):
            parsed.lines.append("(line %d: comment)" % number)
            continue
        name, sep, hash_ = stripped.partition(":")
        if not sep:
            parsed.lines.append("(line %d: not an account entry)" % number)
            continue
        if name in parsed.entries:
            # Every line has one description, so line N is described at index N - 1.
            earlier = parsed.entries[name].line
            parsed.lines[earlier - 1] = "%s (line %d, replaced by line %d)" % (_shown(name), earlier, number)
        parsed.lines.append(_shown(name))
        parsed.entries[name] = Entry(name, hash_, number)
    if not text.endswith("\n"):
        parsed.lines.append("(no newline at end of file)")
    return parsed


def _shown(name):
    """A name as it may appear in a description: printable, one line."""
    if name and all(ch.isprintable() and not ch.isspace() for ch in name):
        return name
    return repr(name)


def _name_problem(name):
    if not isinstance(name, str) or not name:
        return "the name is empty"
    if ":" in name:
        return "the name contains ':' (htpasswd ends a name at the first ':')"
    if name.startswith("#"):
        return "the name begins with '#' (the registry skips such lines as comments)"
    if any(ch.isspace() or not ch.isprintable() for ch in name):
        return "the name contains white space or control characters"
    return None


def _password_problem(password):
    if not isinstance(password, str) or password == "":
        return "the password is empty"
    if "\x00" in password:
        return "the password contains a NUL character"
    try:
        size = len(password.encode("utf-8"))
    except UnicodeEncodeError:
        return "the password cannot be encoded as UTF-8"
    if size > MAX_PASSWORD_BYTES:
        return "the password is longer than %d bytes (bcrypt would silently ignore the rest)" % MAX_PASSWORD_BYTES
    return None


def check_users(users):
    """Validate the account list; return ``[(name, password), ...]``.

    Raises :class:`AccountError` naming every bad entry by position and name.
    """
    if not isinstance(users, (list, tuple)):
        raise AccountError("users must be a list of {name, password}")
    problems = []
    seen = {}
    checked = []
    for index, user in enumerate(users):
        if not isinstance(user, dict):
            problems.append("users[%d]: not a {name, password} mapping" % index)
            continue
        name, password = user.get("name"), user.get("password")
        where = "users[%d] (%s)" % (index, _shown(name) if isinstance(name, str) and name else "no name")
        problem = _name_problem(name)
        if problem:
            problems.append("%s: %s" % (where, problem))
        elif name in seen:
            problems.append("%s: the name is listed twice (also users[%d])" % (where, seen[name]))
        else:
            seen[name] = index
        problem = _password_problem(password)
        if problem:
            problems.append("%s: %s" % (where, problem))
        checked.append((name, password))
    if problems:
        raise AccountError("; ".join(problems))
    return checked


def _verifiable(hash_):
    match = _BCRYPT_COST.match(hash_)
    return match is not None and int(match.group(1)) <= MAX_VERIFY_COST


def _new_hash(make_hash, password):
    hash_ = make_hash(password)
    if not isinstance(hash_, str) or not hash_.startswith(BCRYPT_PREFIXES) or any(ch.isspace() for ch in hash_):
        raise ValueError("the hasher returned an unusable hash")  # never written: it would break the file
    return hash_


def render(accounts):
    """``[(name, hash), ...]`` -> file text, one ``name:hash`` line each."""
    return "".join("%s:%s\n" % (name, hash_) for name, hash_ in accounts)


def compute(text, users, verify, make_hash):
    """The new file text for ``users`` given the current ``text``.

    Returns ``(new_text, changes, before_description, after_description)``; the
    descriptions name accounts (one per line) and never carry a hash, so they are
    what a diff may show.
    """
    checked = check_users(users)
    parsed = parse(text)
    changes = Changes()
    accounts = []
    after_lines = []
    for name, password in checked:
        entry = parsed.entries.get(name)
        if entry is None:
            accounts.append((name, _new_hash(make_hash, password)))
            changes.added.append(name)
            after_lines.append(name)
            continue
        if entry.hash.startswith(BCRYPT_PREFIXES) and _verifiable(entry.hash) and verify(password, entry.hash):
            accounts.append((name, entry.hash))
            changes.kept.append(name)
            after_lines.append(name)
            continue
        if not entry.hash.startswith(BCRYPT_PREFIXES):
            why = "new bcrypt hash: the old one is not bcrypt"
        elif not _verifiable(entry.hash):
            why = "new bcrypt hash: the old one cannot be checked"
        else:
            why = "password changed"
        accounts.append((name, _new_hash(make_hash, password)))
        changes.updated[name] = why
        after_lines.append("%s (%s)" % (name, why))
    listed = {name for name, _password in checked}
    changes.removed = [name for name in parsed.entries if name not in listed]
    new_text = render(accounts)
    before_lines = list(parsed.lines)
    if new_text != (text or "") and before_lines == after_lines:
        # Same accounts, same hashes, different bytes (white space, line ends).
        after_lines.append("(file rewritten in canonical form)")
    return new_text, changes, describe_file(before_lines), describe_file(after_lines)


def describe_file(lines):
    """Join description lines into diff text."""
    return "".join(line + "\n" for line in lines)
