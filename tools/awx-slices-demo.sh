#!/usr/bin/env bash
# AWX's job slicing on the demo cluster (make demo; docs/scale.md, "AWX's job slicing"):
#
# 1. out of band, on gpu01 a key deleted from /etc/docker/daemon.json (docker_engine's), on gpu02 the registry login
#    taken away (/root/.docker/config.json deleted: container_registry's, whose registry host is not in gpu02's
#    slice);
# 2. the drift check of the whole inventory (examples/inventory): exit code 3, gpu01 and gpu02 the hosts with drift;
# 3. tools/awx-slices.py: the LSF master and registry job on the whole inventory and the GPU nodes' job in two
#    slices (hosts by name: [gpu01, head] and [gpu02]), each run with ansible-runner on the inventory AWX gives
#    it, all at once; their reports joined (drift_join.yml) and compared with step 2's: the same hosts, changes,
#    diffs, fast-path verdicts and summary;
# 4. the LSF master (head) is in one job's report only, and each GPU node's drift in its slice's;
# 5. a slice's own inventory run without the job template's limit (the LSF master in it) or without
#    hpc_site_sliced is refused by the pre-flight, with the message that says why;
# 6. the same jobs run site.yml (tools/awx-slices.py --converge): each exits 0, and gpu01 and gpu02 are repaired in
#    their slices (gpu01 closed in LSF, Docker restarted, verified, reopened);
# 7. the drift check of the whole inventory is clean, every host cleared by the fast path: the fingerprints the
#    slices recorded hold for the whole inventory.
#
# Environment: AWX_SLICES_KEEP=1 keeps the work directory (reports, ansible-runner's artifacts).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
log() { printf 'awx-slices: %s\n' "$*" >&2; }
for node in head gpu01 gpu02; do
    if [ "$(docker container inspect -f '{{.State.Running}}' "demo-$node" 2>/dev/null)" != true ]; then
        log "FAILED: the demo node demo-$node is not running: run make demo first"; exit 1
    fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/awx-slices.XXXXXX")"
if [ "${AWX_SLICES_KEEP:-0}" = 1 ]; then log "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

# The controller of tools/demo.sh: the collection under its FQCN from the checkout, the demo's settings.
export ANSIBLE_COLLECTIONS_PATH="$root/.cache/demo/collections" ANSIBLE_PIPELINING=1 \
    ANSIBLE_INTERPRETER_PYTHON=/usr/bin/python3
inventory="$root/examples/inventory"

# drift_check <name> <expected exit code> <ansible-playbook arguments...>: the drift check, its report in
# $work/<name>, its output in $work/<name>.log; fails with the output's tail when it exits otherwise.
drift_check() {
    local name="$1" expected="$2" rc=0
    shift 2
    ANSIBLE_CALLBACKS_ENABLED=hpc.gpu_containers.drift_report HPC_DRIFT_REPORT_DIR="$work/$name" \
        ansible-playbook playbooks/drift.yml --check --diff "$@" >"$work/$name.log" 2>&1 || rc=$?
    if [ "$rc" -ne "$expected" ]; then
        tail -n 40 "$work/$name.log" >&2
        log "FAILED: $name: the drift check exited $rc, not $expected"; return 1
    fi
}

log "out of band on gpu01: log-driver deleted from /etc/docker/daemon.json"
docker exec demo-gpu01 python3 -c '
import json
path = "/etc/docker/daemon.json"
with open(path) as handle:
    settings = json.load(handle)
del settings["log-driver"]
with open(path, "w") as handle:
    json.dump(settings, handle, indent=4)
    handle.write("\n")
'
log "out of band on gpu02: /root/.docker/config.json deleted"
docker exec demo-gpu02 rm /root/.docker/config.json

log "the drift check of the whole inventory: drift found (exit code 3)"
drift_check unsliced 3 -i "$inventory"

log "the same check as AWX's sliced jobs run it"
rc=0
python3 tools/awx-slices.py -i "$inventory" --slices 2 --out "$work/awx" --compare "$work/unsliced/drift.json" || rc=$?
[ "$rc" -eq 0 ] || { log "FAILED: tools/awx-slices.py exited $rc (reports under $work/awx)"; exit 1; }

python3 - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
unsliced = json.load(open(os.path.join(work, "unsliced", "drift.json")))
drifted = sorted(host for host, entry in unsliced["hosts"].items() if entry["changed"])
problems = []
if drifted != ["gpu01", "gpu02"]:
    problems.append("the unsliced check found drift on %s, not on gpu01 and gpu02" % drifted)
jobs = {job["job"]: job for job in json.load(open(os.path.join(work, "awx", "jobs.json")))}
with_head = sorted(name for name, job in jobs.items() if "head" in job["hosts"])
if with_head != ["lsf-master"]:
    problems.append("the LSF master is in the reports of %s, not of the lsf-master job alone" % with_head)
for name, host in (("slice1of2", "gpu01"), ("slice2of2", "gpu02")):
    if jobs.get(name, {}).get("drifted") != [host]:
        problems.append("%s's report has drift on %s, not on %s" % (name, jobs.get(name, {}).get("drifted"), host))
for problem in problems:
    print("awx-slices: FAILED: %s" % problem, file=sys.stderr)
for name, job in sorted(jobs.items()):
    print("awx-slices: %s checked %s" % (name, ", ".join(job["hosts"])))
sys.exit(1 if problems else 0)
EOF
# The pre-flight on the slices' own inventories: the one with the LSF master and the registry host, run without the
# limit that leaves them out, is refused and names them; the other, run without hpc_site_sliced, is refused for its
# missing LSF master. Nothing of either reaches a node's roles.
refused() {  # refused <name> <text the message must hold> <ansible-playbook arguments...>
    local name="$1" text="$2"
    shift 2
    drift_check "$name" 2 "$@"
    grep -q -F -- "$text" "$work/$name.log" || { log "FAILED: $name: no message with: $text"; return 1; }
    log "$name: refused (exit code 2): ...$text..."
}
refused slice-with-the-master "runs head (the LSF master or the registry host)" \
    -i "$work/awx/slice1of2/inventory/hosts" -e hpc_site_sliced=true
refused slice-not-said "exactly one lsf_master host" \
    -i "$work/awx/slice2of2/inventory/hosts" --limit 'all:!lsf_master:!registry'

log "the converge as AWX's sliced jobs run it"
python3 tools/awx-slices.py -i "$inventory" --slices 2 --out "$work/converge" --converge || {
    log "FAILED: the sliced converge (ansible-runner's artifacts under $work/converge)"; exit 1; }
log "the drift check of the whole inventory after it: clean (exit code 0), every host by the fast path"
drift_check after 0 -i "$inventory"
python3 - "$work/after/drift.json" <<'EOF'
import json, sys
summary = json.load(open(sys.argv[1]))["summary"]
if summary["changes"] or summary["hosts_clean_by_fast_path"] != summary["hosts_checked"]:
    sys.exit("awx-slices: FAILED: after the sliced converge: %s" % summary)
print("awx-slices: after the sliced converge: %s" % summary)
EOF
log "passed: the joined report of the sliced jobs equals the unsliced one; slices that do not say so are refused;"
log "the sliced converge repaired both nodes and its records clear the whole inventory's check"
