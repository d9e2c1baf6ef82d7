#!/usr/bin/env bash
# Run `ansible-test sanity` or `ansible-test units` on the working tree, offline.
#
#   tools/ansible_test.sh sanity [extra ansible-test args...]
#   tools/ansible_test.sh units  [extra ansible-test args...]
#
# ansible-test insists on running inside .../ansible_collections/<ns>/<name>/ and
# resolves symlinks, so the working tree (tracked files plus untracked files git
# does not ignore) is copied to a build tree that lives outside the checkout:
#   ${HPC_ANSIBLE_TEST_ROOT:-~/.cache/hpc.gpu_containers/ansible-test/<checkout-id>}/ansible_collections/hpc/gpu_containers
# (<checkout-id> is a hash of the checkout's path, so two checkouts never share a copy).
# Outside any git repository ansible-test lists every file there, which is why the
# copy must not sit inside the checkout (it would pick up the parent .git).
# The copy's tests/output/ is kept between runs: ansible-test keeps its --venv
# interpreter there, and the per-test sanity venvs in ~/.ansible/test/venv, so a
# rerun creates no virtual environment.
#
# Offline: ansible-test bootstraps pip from a URL on ci-files.testing.ansible.com
# unless ~/.ansible/test/cache/get_pip_<version>.py exists.  We put a stand-in
# there that uses the interpreter's own ensurepip and then installs from PyPI
# (reachable) or a configured mirror.
#
# Environment:
#   ANSIBLE_CORE        newest (default): the ansible-core of .venv; oldest: the oldest ansible-core the
#                       collection supports (meta/runtime.yml), from .venv/oldest (`make venv-oldest`).
#                       Each core gets its own copy of the tree (its own cached --venv interpreter).
#   ANSIBLE_TEST        ansible-test to run (default: the one of ANSIBLE_CORE's venv)
#   ANSIBLE_TEST_PYTHON Python version for --python (default 3.11)
#   SANITY_TESTS        space-separated sanity tests to run (default: all)
set -euo pipefail

cmd="${1:?usage: $0 sanity|units [ansible-test args...]}"
shift

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python_version="${ANSIBLE_TEST_PYTHON:-3.11}"
case "${ANSIBLE_CORE:-newest}" in
newest) venv="$here/.venv" suffix="" ;;
oldest) venv="$here/.venv/oldest" suffix="-oldest" ;;
*) printf 'ansible-test.sh: ANSIBLE_CORE=%s: want newest or oldest\n' "$ANSIBLE_CORE" >&2; exit 2 ;;
esac
ansible_test="${ANSIBLE_TEST:-$venv/bin/ansible-test}"
[ -x "$ansible_test" ] || { printf 'ansible-test.sh: no %s (make venv%s)\n' "$ansible_test" "$suffix" >&2; exit 2; }
checkout_id="$(printf '%s' "$here" | sha256sum | cut -c1-12)"
root="${HPC_ANSIBLE_TEST_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/hpc.gpu_containers/ansible-test/$checkout_id}$suffix"

log() { printf 'ansible-test.sh: %s\n' "$*" >&2; }

read -r namespace name < <(
    awk -F': *' '$1=="namespace"{ns=$2} $1=="name"{n=$2} END{print ns, n}' "$here/galaxy.yml")
copy="$root/ansible_collections/$namespace/$name"

install_get_pip_standin() {
    # ansible-test names the file after the pip version it wants (get_pip_24_2.py
    # for 2.19); ask it rather than hard-coding the name.
    local cache="$HOME/.ansible/test/cache" version
    version="$("$(dirname "$ansible_test")/python" - <<'PY'
import pathlib
import re

import ansible_test

src = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
print(re.search(r"pip='([0-9.]+)'", src.read_text()).group(1))
PY
)" || version=24.2
    local file="$cache/get_pip_${version//./_}.py"
    [ -s "$file" ] && grep -q 'hpc.gpu_containers get-pip stand-in' "$file" && return 0
    mkdir -p "$cache"
    cat >"$file" <<'EOF'
# hpc.gpu_containers get-pip stand-in: ansible-test runs this as
# `python get_pip.py <pip install args> --no-setuptools --no-wheel`.
# Bootstrap pip from the interpreter's bundled wheel, then install what was asked.
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", *args]))
EOF
    log "installed get-pip stand-in: $file"
}

sync_copy() {
    # Keep tests/output (cached --venv interpreter, results), replace the rest.
    mkdir -p "$copy"
    find "$copy" -mindepth 1 -maxdepth 1 ! -name tests -exec rm -rf {} +
    if [ -d "$copy/tests" ]; then
        find "$copy/tests" -mindepth 1 -maxdepth 1 ! -name output -exec rm -rf {} +
    fi
    if git -C "$here" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked and untracked-but-not-ignored files that exist right now.
        (cd "$here" && git ls-files -z --cached --others --exclude-standard \
            | while IFS= read -r -d '' f; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done \
            | tar --null -T - -cf -) | tar -xf - -C "$copy"
    else
        (cd "$here" && tar -cf - --exclude=./.venv --exclude=./.ansible --exclude=./.cache \
            --exclude=./tests/output --exclude=./build --exclude='*.pyc' --exclude=__pycache__ .) \
            | tar -xf - -C "$copy"
    fi
}

install_get_pip_standin
sync_copy
cd "$copy"
log "running ansible-test $cmd ($("$ansible_test" --version)) in $copy"

case "$cmd" in
sanity)
    tests=()
    for t in ${SANITY_TESTS:-}; do tests+=(--test "$t"); done  # a word list on purpose
    "$ansible_test" sanity --venv --python "$python_version" "${tests[@]}" "$@"
    ;;
units)
    log_file="$copy/tests/output/units.log"
    mkdir -p "$(dirname "$log_file")"
    set +e
    "$ansible_test" units --venv --python "$python_version" "$@" 2>&1 | tee "$log_file"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" -eq 0 ] || exit "$rc"
    # ansible-test units can exit 0 having run nothing (a stray root conftest makes
    # every worker crash quietly): insist on a pytest summary with passed tests.
    if ! grep -Eq '[0-9]+ passed' "$log_file"; then
        log "FAIL: ansible-test units ran no tests (no 'N passed' in $log_file)"
        exit 1
    fi
    grep -E '[0-9]+ passed' "$log_file" | tail -n 1 >&2
    ;;
*)
    log "unknown command: $cmd (want sanity or units)"
    exit 2
    ;;
esac
