#!/usr/bin/env bash
# Run molecule scenarios in lanes: the scenarios of one lane one after another,
# the lanes side by side.
#
#   tools/molecule-lanes.sh "default registry_insecure" "slurm rolling rootless"
#
# Every scenario has its own node names, network and volumes, so scenarios of
# different lanes never touch each other's nodes; each lane gets its own
# ANSIBLE_HOME (.venv/.ansible-lane-<n>: molecule installs the collection and
# keeps its ephemeral state there) and its own log, molecule-lane-<n>.log.
# Lines go to stdout as they come, prefixed with the scenario's name. A lane
# stops at its first failed scenario; the others run to their end. At the end
# a summary: each scenario's result and wall time, and for a failed one the
# lines of its log that say why (fatal:, FAILED!, ERROR, assertion messages).
#
# Runs from the project root with the venv on PATH (the Makefile's `molecule`
# target calls it that way). Exit status: 0 when every scenario passed.
set -uo pipefail

[ "$#" -gt 0 ] || { echo "usage: $0 LANE... (a lane: scenario names separated by spaces)" >&2; exit 2; }

ansible_home_base="${MOLECULE_LANES_HOME:-$PWD/.venv/.ansible-lane}"
results=$(mktemp)
trap 'rm -f "$results"' EXIT

run_lane() {
    local n=$1 scenarios=$2 log="molecule-lane-$1.log" scenario start rc
    : >"$log"
    for scenario in $scenarios; do
        start=$(date +%s)
        echo "### molecule $scenario (lane $n) started $(date -u +%H:%M:%S)" >>"$log"
        ANSIBLE_HOME="$ansible_home_base-$n" molecule test -s "$scenario" 2>&1 |
            tee -a "$log" | sed -u "s/^/[$scenario] /"
        rc=${PIPESTATUS[0]}
        echo "### molecule $scenario (lane $n) exited $rc after $(( $(date +%s) - start ))s" >>"$log"
        printf '%s %s %s %s\n' "$scenario" "$rc" "$(( $(date +%s) - start ))" "$log" >>"$results"
        [ "$rc" -eq 0 ] || return "$rc"
    done
}

started=$(date +%s)
pids=()
n=0
for lane in "$@"; do
    n=$((n + 1))
    run_lane "$n" "$lane" &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
    wait "$pid" || status=1
done

echo "molecule lanes: $# lane(s), $(( $(date +%s) - started ))s in all"
while read -r scenario rc seconds log; do
    if [ "$rc" -eq 0 ]; then
        echo "make: molecule $scenario took ${seconds}s"
    else
        echo "make: molecule $scenario FAILED (exit $rc) after ${seconds}s; why, from $log:"
        # The scenario's own part of the lane's log, its failure lines with a little context.
        sed -n "/^### molecule $scenario (lane/,\$p" "$log" |
            grep -E -B2 -A12 'fatal:|FAILED!|^E  |AssertionError|ERROR  |assert ' | tail -n 80 | sed 's/^/    /'
    fi
done <"$results"
# A scenario that never started (its lane stopped earlier) is named too.
for lane in "$@"; do
    for scenario in $lane; do
        grep -q "^$scenario " "$results" || { echo "make: molecule $scenario NOT RUN (an earlier scenario of its lane failed)"; status=1; }
    done
done
exit "$status"
