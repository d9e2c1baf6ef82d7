#!/usr/bin/env bash
# Bring up a three-node demo cluster (head, gpu01, gpu02) in Docker, converge
# it with playbooks/site.yml, run playbooks/verify.yml and print a per-node
# summary. tools/demo-down.sh removes it.
#
# The nodes are the test bed's (tools/node-image.sh, molecule/README.md) but
# under their own names: containers demo-head, demo-gpu01, demo-gpu02 on the
# network hpc-gpu-demo, so a demo and `molecule test` can run side by side.
# Inside, the nodes are called head, gpu01, gpu02, as the LSF cluster file
# names them.
#
# Environment: DEMO_IMAGE (default: what tools/node-image.sh builds),
# DEMO_SKIP_VERIFY=1 to stop after site.yml.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
state="$root/.cache/demo"
network=hpc-gpu-demo
prefix=demo-
nodes=(head gpu01 gpu02)
declare -A node_groups=(
    [head]="lsf_master registry docker_hosts"
    [gpu01]="gpu_nodes docker_hosts"
    [gpu02]="gpu_nodes docker_hosts"
)

say() { printf '\n=== %s\n' "$*"; }
started=$(date +%s)

say "Python environment (make venv)"
make --no-print-directory venv
export PATH="$root/.venv/bin:$PATH" VIRTUAL_ENV="$root/.venv"

say "Node image"
image="${DEMO_IMAGE:-$(tools/node-image.sh | tail -n1)}"
echo "image: $image"

# The collection, seen by ansible under its FQCN without installing a copy.
mkdir -p "$state/collections/ansible_collections/hpc"
ln -sfn "$root" "$state/collections/ansible_collections/hpc/gpu_containers"
export ANSIBLE_COLLECTIONS_PATH="$state/collections"
export ANSIBLE_PIPELINING=1 ANSIBLE_INTERPRETER_PYTHON=/usr/bin/python3
# prepare.yml stages its tarballs here (molecule's ephemeral directory).
export MOLECULE_EPHEMERAL_DIRECTORY="$state"

say "Nodes"
docker network inspect "$network" >/dev/null 2>&1 || docker network create "$network" >/dev/null
# The test bed's node container options, one per line (molecule/README.md).
mapfile -t node_options < <(grep -v -E '^(#|$)' "$root/molecule/resources/node-container.options")
for node in "${nodes[@]}"; do
    if docker container inspect "$prefix$node" >/dev/null 2>&1; then
        echo "$prefix$node: already there"
        docker start "$prefix$node" >/dev/null
        continue
    fi
    # The options every molecule scenario's nodes get.
    docker run -d --name "$prefix$node" --hostname "$node" \
        --network "$network" --network-alias "$node" \
        "${node_options[@]}" \
        -v "$prefix$node-docker:/var/lib/docker" \
        --label hpc.gpu_containers.demo=1 \
        "$image" /lib/systemd/systemd >/dev/null
    echo "$prefix$node: started"
done

# The README's example inventory is the demo's: its hosts.yml names the
# containers (ansible_host), its group_vars are what a site edits.
inventory="$root/examples/inventory"

say "Prepare: LSF 10.1 tree, lsfadmin, LSF command stubs"
ansible-playbook -i "$inventory" molecule/default/prepare.yml

say "Converge: playbooks/site.yml"
ansible-playbook -i "$inventory" --diff playbooks/site.yml || site_failed=1

if [ -z "${site_failed:-}" ] && [ "${DEMO_SKIP_VERIFY:-0}" != 1 ] && [ -f playbooks/verify.yml ]; then
    say "Verify: playbooks/verify.yml"
    ansible-playbook -i "$inventory" playbooks/verify.yml \
        -e verify_report_path="$state/verify-report.json" || verify_failed=1
fi

say "Summary"
printf '%-7s %-8s %-16s %-34s %-5s %s\n' NODE ARCH DOCKER GROUPS GPUS "LSF FILES CHANGED"
for node in "${nodes[@]}"; do
    container="$prefix$node"
    arch=$(docker exec "$container" uname -m)
    engine=$(docker exec "$container" sh -c "docker version --format '{{.Server.Version}}' 2>/dev/null" || true)
    gpus=$(docker exec "$container" sh -c 'nvidia-smi -L 2>/dev/null | grep -c "^GPU"' || true)
    changed=()
    while IFS= read -r -d '' file; do
        relative="${file#tests/fixtures/lsf10.1/conf/}"
        if ! docker exec "$container" cat "/usr/share/lsf/conf/$relative" 2>/dev/null | cmp -s - "$file"; then
            changed+=("$(basename "$relative")")
        fi
    done < <(find tests/fixtures/lsf10.1/conf -type f -print0 | sort -z)
    groups="${node_groups[$node]// /,}"
    printf '%-7s %-8s %-16s %-34s %-5s %s\n' "$node" "$arch" "${engine:-none}" "$groups" "${gpus:-0}" \
        "$( [ ${#changed[@]} -gt 0 ] && echo "${changed[*]}" || echo -)"
done
calls=$(docker exec "${prefix}head" sh -c 'wc -l < /var/log/lsf-stub/calls.jsonl' 2>/dev/null || echo 0)
echo
echo "LSF command calls recorded on head: $calls (/var/log/lsf-stub/calls.jsonl)"
echo "Inventory: $inventory    remove with: tools/demo-down.sh"
echo "Wall time: $(( $(date +%s) - started )) s"
[ -n "${site_failed:-}" ] && echo "site.yml FAILED (see above)"
[ -n "${verify_failed:-}" ] && echo "verify.yml FAILED (see above)"
[ -z "${site_failed:-}${verify_failed:-}" ]
