#!/usr/bin/env bash
# Run molecule scenarios (and make targets) in lanes: the steps of one lane one after another,
# the lanes side by side.
#
#   tools/molecule-lanes.sh "make:lint make:unit" "default registry_insecure" "slurm rolling rootless"
#
# A step named make:<target> runs `make <target>` (`make test` puts its checks, lint to units-oldest,
# in a lane of their own beside the scenarios: they use the CPU the scenarios leave while their nodes
# wait on apt and systemd); any other step is a molecule scenario.
#
# A scenario runs under the ansible-core of the venv on PATH (.venv, the newest core the
# collection supports); <scenario>@oldest runs it under the oldest one (meta/runtime.yml), with
# .venv/oldest/bin first on PATH (`make venv-oldest` builds it) and an ANSIBLE_HOME of its own.
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

oldest_venv="$PWD/.venv/oldest"

run_lane() {
    local n=$1 scenarios=$2 log="molecule-lane-$1.log" scenario start rc label prefix
    local -a env cmd
    : >"$log"
    for scenario in $scenarios; do
        start=$(date +%s)
        case "$scenario" in
        make:*)
            label=$scenario prefix=${scenario#make:}
            cmd=("${MAKE:-make}" --no-print-directory "${scenario#make:}")
            echo "### $label (lane $n) started $(date -u +%H:%M:%S)" >>"$log"
            ;;
        *)
            case "$scenario" in
            *@oldest)
                env=(PATH="$oldest_venv/bin:$PATH" VIRTUAL_ENV="$oldest_venv" ANSIBLE_HOME="$ansible_home_base-$n-oldest")
                [ -x "$oldest_venv/bin/molecule" ] ||
                    echo "molecule-lanes: no $oldest_venv/bin/molecule (make venv-oldest)" | tee -a "$log" >&2
                ;;
            *) env=(ANSIBLE_HOME="$ansible_home_base-$n") ;;
            esac
            label="molecule $scenario" prefix=$scenario
            cmd=(env "${env[@]}" molecule test -s "${scenario%@*}")
            echo "### $label (lane $n) started $(date -u +%H:%M:%S) under" \
                "$(env "${env[@]}" ansible --version 2>/dev/null | head -n 1)" >>"$log"
            ;;
        esac
        "${cmd[@]}" 2>&1 | tee -a "$log" | sed -u "s/^/[$prefix] /"
        rc=${PIPESTATUS[0]}
        echo "### $label (lane $n) exited $rc after $(( $(date +%s) - start ))s" >>"$log"
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

# The lines that say why an Ansible run or a test failed.
failure_lines='fatal:|FAILED!|^E  |AssertionError|ERROR  |assert '
echo "molecule lanes: $# lane(s), $(( $(date +%s) - started ))s in all"
while read -r scenario rc seconds log; do
    if [ "${scenario#make:}" != "$scenario" ]; then
        # The target's own "make: <step> took/FAILED" lines, from its part of the lane's log.
        sed -n "/^### $scenario (lane/,/^### $scenario (lane.*exited/p" "$log" | grep -E '^make: .*(took|FAILED)'
        [ "$rc" -eq 0 ] || {
            echo "make: ${scenario#make:} FAILED (exit $rc) after ${seconds}s; why, from $log:"
            # Its failure lines with a little context (a clean-up step after the failure, such as
            # demo-down, would otherwise fill the tail), then the end of its output.
            sed -n "/^### $scenario (lane/,\$p" "$log" | grep -E -B2 -A12 "$failure_lines" | tail -n 80 | sed 's/^/    /'
            echo "    [the end of its output]"
            sed -n "/^### $scenario (lane/,\$p" "$log" | tail -n 20 | sed 's/^/    /'
        }
    elif [ "$rc" -eq 0 ]; then
        echo "make: molecule $scenario took ${seconds}s"
    else
        echo "make: molecule $scenario FAILED (exit $rc) after ${seconds}s; why, from $log:"
        # The scenario's own part of the lane's log, its failure lines with a little context.
        sed -n "/^### molecule $scenario (lane/,\$p" "$log" |
            grep -E -B2 -A12 "$failure_lines" | tail -n 80 | sed 's/^/    /'
    fi
done <"$results"
# A scenario that never started (its lane stopped earlier) is named too.
for lane in "$@"; do
    for scenario in $lane; do
        if ! grep -q "^$scenario " "$results"; then
            case "$scenario" in
            make:*) echo "make: ${scenario#make:} NOT RUN (an earlier step of its lane failed)" ;;
            *) echo "make: molecule $scenario NOT RUN (an earlier scenario of its lane failed)" ;;
            esac
            status=1
        fi
    done
done
exit "$status"
