# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The htpasswd model: the registry's grammar, the account list, owned-whole rendering.

Hashing is faked ("$2b$12$H(<password>)#<n>", a fresh n each time, like a fresh salt), so
the rules are tested without bcrypt; the module tests use the real thing.
"""

import itertools

import pytest

from ansible_collections.hpc.gpu_containers.plugins.module_utils import _htpasswd as ht


class FakeHasher:
    def __init__(self):
        self.counter = itertools.count(1)
        self.verified = []

    def make_hash(self, password):
        return "$2b$12$H(%s)#%d" % (password, next(self.counter))

    def verify(self, password, hash_):
        self.verified.append(hash_)
        return hash_.startswith("$2b$12$H(%s)#" % password)


def compute(text, users, hasher=None):
    hasher = hasher or FakeHasher()
    return ht.compute(text, users, hasher.verify, hasher.make_hash)


def test_parse_follows_the_registry_grammar():
    text = "# comment\n\n  alice:$2b$12$a  \nbroken line\nbob:$2y$10$b:with:colons\nalice:$2b$12$c\n"
    parsed = ht.parse(text)
    assert {name: entry.hash for name, entry in parsed.entries.items()} == {"alice": "$2b$12$c", "bob": "$2y$10$b:with:colons"}
    assert parsed.lines == [
        "(line 1: comment)", "(line 2: blank)", "alice (line 3, replaced by line 6)",
        "(line 4: not an account entry)", "bob", "alice"]


def test_absent_file_gets_every_account_in_list_order():
    new_text, changes, before, after = compute(None, [{"name": "b", "password": "x"}, {"name": "a", "password": "y"}])
    assert new_text == "b:$2b$12$H(x)#1\na:$2b$12$H(y)#2\n"
    assert changes.added == ["b", "a"] and changes.removed == [] and changes.updated == {}
    assert before == "" and after == "b\na\n"


def test_same_list_again_returns_the_text_unchanged():
    users = [{"name": "alice", "password": "pw1"}, {"name": "bob", "password": "pw2"}]
    first, _c, _b, _a = compute(None, users)
    again, changes, before, after = compute(first, users)
    assert again == first
    assert changes.kept == ["alice", "bob"] and not changes.added and not changes.removed
    assert before == after


def test_unlisted_accounts_are_removed_and_kept_hashes_stay():
    text = "alice:$2b$12$H(pw1)#7\nmallory:$2b$12$H(evil)#8\n"
    new_text, changes, before, after = compute(text, [{"name": "alice", "password": "pw1"}])
    assert new_text == "alice:$2b$12$H(pw1)#7\n"
    assert changes.removed == ["mallory"] and changes.kept == ["alice"]
    assert before == "alice\nmallory\n" and after == "alice\n"


def test_a_changed_password_gets_a_new_hash_and_says_so_without_the_hash():
    text = "alice:$2b$12$H(old)#7\n"
    new_text, changes, before, after = compute(text, [{"name": "alice", "password": "new"}])
    assert new_text == "alice:$2b$12$H(new)#1\n"
    assert changes.updated == {"alice": "password changed"}
    assert after == "alice (password changed)\n"
    assert "$2" not in before + after


@pytest.mark.parametrize("old_hash, why", [
    ("$apr1$salt$abcdefghijklmnopqrstuv", "new bcrypt hash: the old one is not bcrypt"),
    ("{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=", "new bcrypt hash: the old one is not bcrypt"),
    ("$2b$31$H(pw)#1", "new bcrypt hash: the old one cannot be checked"),
])
def test_hashes_the_registry_cannot_use_or_we_cannot_check_are_replaced(old_hash, why):
    hasher = FakeHasher()
    _text, changes, _b, _a = compute("alice:%s\n" % old_hash, [{"name": "alice", "password": "pw"}], hasher)
    assert changes.updated == {"alice": why}
    assert hasher.verified == []  # never handed to the verifier


@pytest.mark.parametrize("text, note", [
    ("alice:$2b$12$H(pw)#1", "(no newline at end of file)"),
    ("alice:$2b$12$H(pw)#1\r\n", "(file rewritten in canonical form)"),
    ("  alice:$2b$12$H(pw)#1\n", "(file rewritten in canonical form)"),
])
def test_layout_only_changes_still_show_in_the_description(text, note):
    new_text, changes, before, after = compute(text, [{"name": "alice", "password": "pw"}])
    assert new_text == "alice:$2b$12$H(pw)#1\n" and changes.kept == ["alice"]
    assert before != after and note in before + after


@pytest.mark.parametrize("users, message", [
    ([{"name": "", "password": "x"}], "users[0] (no name): the name is empty"),
    ([{"name": "a:b", "password": "x"}], "users[0] (a:b): the name contains ':'"),
    ([{"name": "#root", "password": "x"}], "begins with '#'"),
    ([{"name": "al ice", "password": "x"}], "white space or control characters"),
    ([{"name": "alice\n", "password": "x"}], "white space or control characters"),
    ([{"name": "alice", "password": ""}], "users[0] (alice): the password is empty"),
    ([{"name": "alice", "password": "a\x00b"}], "NUL"),
    ([{"name": "alice", "password": "x" * 73}], "longer than 72 bytes"),
    ([{"name": "alice", "password": "é" * 37}], "longer than 72 bytes"),  # 74 bytes in UTF-8
    ([{"name": "alice", "password": "x"}, {"name": "alice", "password": "y"}], "users[1] (alice): the name is listed twice (also users[0])"),
    (["alice:pw"], "users[0]: not a {name, password} mapping"),
])
def test_bad_account_lists_are_refused_naming_the_account_not_the_password(users, message):
    with pytest.raises(ht.AccountError) as err:
        ht.check_users(users)
    assert message in str(err.value)
    for user in users:
        if isinstance(user, dict) and len(user.get("password", "")) > 2:
            assert user["password"] not in str(err.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(ht.AccountError) as err:
        ht.check_users([{"name": "a:b", "password": ""}, {"name": "c", "password": "ok"}, {"name": "c", "password": "ok"}])
    assert str(err.value).count("; ") == 2


def test_a_hash_that_would_break_the_file_is_refused():
    # The fake hasher embeds the password: a newline in it must not reach the file.
    with pytest.raises(ValueError, match="unusable hash"):
        compute(None, [{"name": "alice", "password": "a'b\"c:d\ne f"}])


def test_an_empty_list_revokes_everyone():
    new_text, changes, _b, after = compute("alice:$2b$12$H(pw)#1\n", [])
    assert new_text == "" and changes.removed == ["alice"] and after == ""


def test_names_that_cannot_be_printed_are_quoted_in_descriptions():
    parsed = ht.parse("ev il:$2b$12$x\n")
    assert parsed.lines == ["'ev il'"]
