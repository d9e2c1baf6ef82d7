#!/usr/bin/env bash
# By-hand proof of the EL package path on a stand-in userland (STAND-IN FOR TESTS; README.md here).
#
# Builds (or finds cached) the EL node image and the stand-in repositories, starts ONE node container
# the way the molecule scenarios start theirs (no --privileged: every capability but SYS_RESOURCE,
# seccomp/apparmor unconfined, host cgroupns with /sys/fs/cgroup rw, tmpfs /run /run/lock /tmp, a volume
# on /var/lib/docker), puts the repositories on it at /srv/el-standin (read-only), gives it what the
# site would have before the collection runs (its base repository mirror in /etc/yum.repos.d, and the
# stand-in NVIDIA driver of gpu01: 2x V100), then runs check.yml in check mode, then twice (converge,
# idempotence), and check-verify.yml once, with
# ansible-playbook from ${EL_ANSIBLE_VENV:-<project>/.venv} (make venv). Prints the EL tasks that ran with their
# status, both recaps and the verification. The node is removed at the end unless EL_KEEP_NODE=1.
#
# Environment: EL_NODE (container name, default el-node), EL_ANSIBLE_VENV, EL_KEEP_NODE=1,
#   EL_GPU_VALUES (a file of ../nvidia-standin/gpus, default gpu01).
# Exit status: 0 when the check-mode run, both converges and the verification pass and the second
# converge has changed=0. Logs: EL_LOG_DIR (kept) or a temporary directory (removed).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
node="${EL_NODE:-el-node}"
venv="${EL_ANSIBLE_VENV:-$top/.venv}"
gpu_values="${EL_GPU_VALUES:-gpu01}"
log() { printf 'el-check: %s\n' "$*" >&2; }
case "$node" in el-*) ;; *) log "EL_NODE must start with el-"; exit 2 ;; esac

image="$("$here/image.sh" | tail -n 1)"
repo="$("$here/build.sh" | tail -n 1)"
run="$(mktemp -d "${TMPDIR:-/tmp}/el-check.XXXXXX")"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    if [ "${EL_KEEP_NODE:-0}" != 1 ]; then
        docker rm -f "$node" >/dev/null 2>&1 || true
        docker volume rm "$node-docker" >/dev/null 2>&1 || true
    fi
    rm -rf "$run"
}
trap cleanup EXIT

# ---- the node ----
docker rm -f "$node" >/dev/null 2>&1 || true
docker volume rm "$node-docker" >/dev/null 2>&1 || true
log "starting $node from $image"
docker run -d --name "$node" --hostname "$node" \
    --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    --cgroupns=host -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
    --tmpfs /run --tmpfs /run/lock --tmpfs /tmp \
    -v "$node-docker:/var/lib/docker" \
    -v "$repo:/srv/el-standin:ro" \
    --stop-signal SIGRTMIN+3 \
    "$image" >/dev/null
for _ in $(seq 60); do
    state="$(docker exec "$node" systemctl is-system-running --wait 2>/dev/null || true)"
    case "$state" in running|degraded) break ;; esac
    sleep 1
done
log "$node: systemd $state"

# ---- what the site has before the collection runs ----
# Its base repository mirror, as its EL base image configures it.
docker exec "$node" cp /srv/el-standin/el-base/el-base.repo /etc/yum.repos.d/el-base.repo
# A GPU node's driver: the test bed's stand-in (molecule/resources/nvidia-standin/README.md), as
# prepare.yml installs it on the Debian GPU nodes.
sh "$top/molecule/resources/nvidia-standin/nvml/build.sh" "$run/driver" >/dev/null
docker exec "$node" mkdir -p /var/lib/nvidia-standin
for f in libnvidia-ml.so.1 libcuda.so.1 nvidia-smi; do docker cp "$run/driver/$f" "$node:/var/lib/nvidia-standin/$f"; done
docker cp "$top/molecule/resources/nvidia-standin/install-node.sh" "$node:/var/lib/nvidia-standin/install-node.sh"
docker cp "$top/molecule/resources/nvidia-standin/gpus/$gpu_values.conf" "$node:/var/lib/nvidia-standin/nvml.conf"
docker exec "$node" /var/lib/nvidia-standin/install-node.sh /var/lib/nvidia-standin /var/lib/nvidia-standin/nvml.conf \
    | tail -n 1 >&2

# ---- the controller side: this checkout as hpc.gpu_containers, an inventory, the site's data ----
mkdir -p "$run/collections/ansible_collections/hpc"
ln -s "$top" "$run/collections/ansible_collections/hpc/gpu_containers"
tarball="$(cd "$repo/distribution" && ls registry_*_linux_amd64.tar.gz)"
digest="$(cut -d' ' -f1 "$repo/distribution/$tarball.sha256")"
cat > "$run/hosts.yml" <<EOF
all:
  children:
    el_nodes:
      hosts:
        $node:
    registry:
      hosts:
        $node:
  vars:
    ansible_connection: community.docker.docker
    ansible_python_interpreter: /usr/bin/python3
EOF
cat > "$run/site.yml" <<EOF
# What an air-gapped EL site gives: its mirrors (file:// here, at /srv/el-standin on the node) and an account.
docker_engine_rpm_repo_url: file:///srv/el-standin/download.docker.com/linux/centos
nvidia_container_runtime_repo_base_url: file:///srv/el-standin/nvidia.github.io/libnvidia-container
container_registry_binary_url: file:///srv/el-standin/distribution/$tarball
container_registry_binary_checksum: sha256:$digest
container_registry_users:
  - name: hpcadmin
    password: testbed-registry-pw
EOF
export ANSIBLE_COLLECTIONS_PATH="$run/collections"
export ANSIBLE_HOST_KEY_CHECKING=false ANSIBLE_RETRY_FILES_ENABLED=false ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
export ANSIBLE_DISPLAY_SKIPPED_HOSTS=true ANSIBLE_CALLBACK_RESULT_FORMAT=yaml ANSIBLE_PIPELINING=true

# The EL task files: which of their tasks ran, and how.
el_files=("$top/roles/docker_engine/tasks/setup-RedHat.yml" "$top/roles/nvidia_container_runtime/tasks/install-RedHat.yml"
          "$top/roles/container_registry/tasks/binary.yml")
el_tasks="$run/el-tasks"
sed -n 's/^- name: \(.*\)$/\1/p' "${el_files[@]}" > "$el_tasks"
report_el_tasks() {  # the status of each EL task in a playbook log
    awk -v list="$el_tasks" '
        BEGIN { while ((getline l < list) > 0) want[l] = 1 }
        /^TASK \[/ { t = $0; sub(/^TASK \[[^:]*: /, "", t); sub(/\] \**$/, "", t); name = t; next }
        /^(ok|changed|skipping|failed|fatal): / && (name in want) { split($0, s, ":"); print "  " s[1] ": " name; name = "" }
    ' "$1"
}

status=0
converge() {  # converge N
    local out="$run/converge-$1.log" rc=0
    log "converge $1: ansible-playbook check.yml"
    local t0=$SECONDS
    "$venv/bin/ansible-playbook" -i "$run/hosts.yml" -e "@$run/site.yml" "$here/check.yml" > "$out" 2>&1 || rc=$?
    echo "== converge $1 (exit $rc, $((SECONDS - t0)) s): EL tasks"
    report_el_tasks "$out"
    grep -E '^(fatal|failed):|^ERROR|FAILED!' -A 12 "$out" | head -n 60 || true
    echo "== converge $1: recap"
    sed -n '/^PLAY RECAP/,$p' "$out" | grep -E "^$node"
    cp "$out" "${EL_LOG_DIR:-$run}/" 2>/dev/null || true
    [ "$rc" -eq 0 ] || status=1
    if [ "$1" = 2 ] && ! sed -n '/^PLAY RECAP/,$p' "$out" | grep -qE "^$node .* changed=0 "; then
        echo "== converge 2 changed something:"
        grep -E '^changed: ' -B 3 "$out" | grep -E '^TASK|^changed' || true
        status=1
    fi
}
# molecule's sequence: check (on the pristine node), converge, idempotence.
out="$run/check-mode.log"
rc=0
log "check mode: ansible-playbook check.yml --check"
"$venv/bin/ansible-playbook" -i "$run/hosts.yml" -e "@$run/site.yml" "$here/check.yml" --check > "$out" 2>&1 || rc=$?
echo "== check mode on the pristine node (exit $rc): EL tasks"
report_el_tasks "$out"
grep -E '^(fatal|failed):' -A 12 "$out" | head -n 40 || true
sed -n '/^PLAY RECAP/,$p' "$out" | grep -E "^$node"
cp "$out" "${EL_LOG_DIR:-$run}/" 2>/dev/null || true
[ "$rc" -eq 0 ] || status=1

converge 1
converge 2

log "verify: ansible-playbook check-verify.yml"
out="$run/verify.log"
rc=0
ANSIBLE_CALLBACK_RESULT_FORMAT=json "$venv/bin/ansible-playbook" -i "$run/hosts.yml" "$here/check-verify.yml" \
    > "$out" 2>&1 || rc=$?
echo "== verify (exit $rc)"
sed -n -e 's/^ *"msg": "\(.*\)",\{0,1\}$/  \1/p' -e 's/^ *"\(tini .*\|nvidia runtime .*\)",\{0,1\}$/  \1/p' "$out" \
    | grep -v 'All assertions passed' | cut -c1-220 || true
grep -E '^(fatal|failed):' -A 12 "$out" | head -n 40 || true
sed -n '/^PLAY RECAP/,$p' "$out" | grep -E "^$node"
cp "$out" "${EL_LOG_DIR:-$run}/" 2>/dev/null || true
[ "$rc" -eq 0 ] || status=1
echo "== node: $(docker exec "$node" cat /etc/redhat-release), docker $(docker exec "$node" systemctl is-active docker)"
exit "$status"
