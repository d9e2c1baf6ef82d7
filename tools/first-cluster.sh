#!/usr/bin/env bash
# Run the README's "Your first real cluster" steps, as written, against the
# demo nodes of tools/demo.sh (make demo), the way a newcomer would:
#
# - from a fresh copy of the checkout (tracked files and untracked files git
#   does not ignore) in a temporary directory, with an empty HOME, so the
#   collection is installed from its built tarball into an empty collections
#   path and nothing of this checkout's .ansible or ~/.ansible is seen;
# - every command of the section's ```sh blocks, in order, taken from
#   README.md itself (a line ending in a backslash goes on on the next one),
#   in one shell, so a `cd` holds for the steps after it;
# - with only the edits the steps tell a user to make: the vaulted registry
#   password pasted into the site's group_vars/all.yml, and the try-out edits
#   for the demo nodes (the demo's hosts.yml and gpu_nodes.yml, the engine
#   from the distribution).
#
# Any command that exits non-zero fails the run, naming the command.
# Environment: FIRST_CLUSTER_KEEP=1 keeps the temporary directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readme="$root/README.md"
section='## Your first real cluster'
site_dir=hpc-site          # the directory the steps copy the template to, under HOME
started=$(date +%s)
log() { printf 'first-cluster: %s\n' "$*" >&2; }

for node in head gpu01 gpu02; do
    if [ "$(docker container inspect -f '{{.State.Running}}' "demo-$node" 2>/dev/null)" != true ]; then
        log "FAILED: the demo node demo-$node is not running: run make demo first"; exit 1
    fi
done

# The try-out edits the README names; if the text stops naming them, this
# script must be changed with it.
# grep reads to the end (no -q), so awk never writes into a closed pipe (SIGPIPE under pipefail).
for phrase in examples/inventory/hosts.yml examples/inventory/group_vars/gpu_nodes.yml \
              'docker_engine_source: distro' demo-registry-pw "cp -r examples/sites/lsf-ssh ~/$site_dir"; do  # shellcheck disable=SC2088
    if ! awk -v s="$section" '$0 == s {on=1; next} /^## / {on=0} on' "$readme" | grep -F -- "$phrase" >/dev/null; then
        log "FAILED: README.md's \"${section#\#\# }\" no longer names $phrase: update tools/first-cluster.sh"; exit 1
    fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/first-cluster.XXXXXX")"
if [ "${FIRST_CLUSTER_KEEP:-0}" = 1 ]; then log "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

# A fresh clone of the working tree.
clone="$work/hpc.gpu_containers"
mkdir -p "$clone" "$work/home"
git -C "$root" ls-files -z --cached --others --exclude-standard |
    tar -C "$root" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$clone" -xf -

# The commands, one per line (NUL-separated), comments and blank lines left out.
"$root/.venv/bin/python" - "$readme" "$section" >"$work/commands" <<'EOF'
import sys
path, heading = sys.argv[1], sys.argv[2]
lines = open(path, encoding="utf-8").read().splitlines()
try:
    start = lines.index(heading) + 1
except ValueError:
    sys.exit("first-cluster: README.md has no line %r" % heading)
commands, fence, indent, pending = [], None, 0, ""
for number, line in enumerate(lines[start:], start + 1):
    if line.startswith("## ") and fence is None:
        break
    stripped = line.lstrip(" ")
    if fence is None:
        if stripped.startswith("```"):
            # A block inside a list item is indented: its lines lose that indentation.
            fence, indent = stripped[3:].strip(), len(line) - len(stripped)
        continue
    if stripped.startswith("```"):
        if pending:
            sys.exit("first-cluster: README.md:%d: a command ends in a backslash at the end of its block" % number)
        fence = None
        continue
    if fence != "sh":
        continue
    line = line[min(indent, len(line) - len(stripped)):]
    if pending:
        pending += "\n" + line
    elif not line.strip() or line.lstrip().startswith("#"):
        continue
    else:
        pending = line
    if not pending.endswith("\\"):
        commands.append(pending)
        pending = ""
if not commands:
    sys.exit("first-cluster: README.md: no ```sh command under %r" % heading)
sys.stdout.write("".join(c + "\0" for c in commands))
EOF

# A newcomer's controller: the Install section's ansible-core (the project
# venv's), nothing of this machine's Ansible settings, an empty HOME.
while IFS= read -r name; do unset "$name"; done < <(env | sed -n 's/^\(ANSIBLE_[A-Z0-9_]*\)=.*/\1/p')
unset MOLECULE_EPHEMERAL_DIRECTORY VIRTUAL_ENV
export HOME="$work/home" PATH="$root/.venv/bin:$PATH"

# The registry password a user types into ansible-vault encrypt_string: for a try-out on the demo
# nodes, the password their registry already has (the demo inventory's), as the README says.
registry_password="$(sed -n 's/^ *password: \(demo-[a-z-]*\)$/\1/p' "$clone/examples/inventory/group_vars/all.yml")"
[ -n "$registry_password" ] || { log "FAILED: no demo registry password in examples/inventory/group_vars/all.yml"; exit 1; }

tryout_edits() {
    # Step "Name the hosts", for a try-out on the demo nodes: the demo's
    # hosts file (head, gpu01, gpu02 over the docker connection), its
    # gpu_nodes.yml (the stand-in NVIDIA repository; gpu01's stand-in driver
    # is older than the template's minimum) and the engine from the
    # distribution (the demo nodes reach Debian's archive, not Docker's).
    local site="$HOME/$site_dir"
    log "try-out edits in $site"
    cp "$clone/examples/inventory/hosts.yml" "$site/hosts.yml"
    cp "$clone/examples/inventory/group_vars/gpu_nodes.yml" "$site/group_vars/gpu_nodes.yml"
    grep -q '^docker_engine_source: docker$' "$site/group_vars/all.yml" || {
        log "FAILED: $site/group_vars/all.yml has no line docker_engine_source: docker"; return 1; }
    sed -i 's/^docker_engine_source: docker$/docker_engine_source: distro/' "$site/group_vars/all.yml"
}

paste_vaulted() {
    # Step "Vault the secrets": the output of encrypt_string replaces the
    # template's vaulted registry password (the one `password: !vault |`).
    "$root/.venv/bin/python" - "$HOME/$site_dir/group_vars/all.yml" "$work/vaulted" <<'EOF'
import re, sys
target, vaulted = sys.argv[1], open(sys.argv[2], encoding="utf-8").read().rstrip("\n")
text = open(target, encoding="utf-8").read()
pattern = re.compile(r"^( *)password: !vault \|\n(?:\1 +\S.*\n)+", re.M)
found = pattern.findall(text)
if len(found) != 1:
    sys.exit("first-cluster: %s: expected one vaulted password, found %d" % (target, len(found)))
indent = pattern.search(text).group(1)
new = "".join(indent + line + "\n" for line in vaulted.splitlines())
open(target, "w", encoding="utf-8").write(pattern.sub(lambda m: new, text))
EOF
}

cd "$clone"
count=0
while IFS= read -r -d '' command <&3; do
    count=$((count + 1))
    printf '\n=== first-cluster step command %d: %s\n' "$count" "$command" >&2
    rc=0
    case "$command" in
        "ansible-vault encrypt_string "*)
            printf '%s' "$registry_password" >"$work/password-typed"
            eval "$command" <"$work/password-typed" >"$work/vaulted" || rc=$?
            [ "$rc" -ne 0 ] || paste_vaulted || rc=$?
            ;;
        *)
            eval "$command" </dev/null || rc=$?
            ;;
    esac
    if [ "$rc" -ne 0 ]; then
        log "FAILED (exit $rc) at command $count: $command"; exit "$rc"
    fi
    case "$command" in
        "cp -r examples/sites/"*) tryout_edits ;;
    esac
done 3<"$work/commands"

# What the steps must have left behind.
grep -q "password: !vault |" "$HOME/$site_dir/group_vars/all.yml"
if grep -qF "$registry_password" "$HOME/$site_dir/group_vars/all.yml"; then
    log "FAILED: the registry password is in group_vars/all.yml in clear"; exit 1
fi
log "all $count commands of \"${section#\#\# }\" passed against the demo nodes in $(( $(date +%s) - started ))s"
