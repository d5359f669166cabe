#!/usr/bin/env bash
# The VM tests under load: starts two CPU-bound loops (one per core of the 2-core CI machine), runs
# `cargo test -p system-tests --test vm` N times (default 20) and prints "VM under load: K/N passed". The loops are
# always killed on exit (trap), whatever happens. Each run's output is kept in target/vm-cache/soak/run-I.log.
# Usage: bash tests/vm/load-soak.sh [N] [LOOPS]   (root; exit 0 only when all N passed)
set -uo pipefail
cd "$(dirname "$0")/../.."
n=${1:-20}
loops=${2:-2}
logs=${VMTEST_CACHE:-target/vm-cache}/soak
mkdir -p "$logs"
# Built once, before the load starts: the runs measure the VM tests, not the compiler.
cargo test -p system-tests --test vm --no-run -q || exit 1

# Job control: each background job gets its own process group (to kill a run with all its children), while
# everything stays in this session. Not setsid: with sched_autogroup a new session is a scheduling group of its own,
# which would shield the run from the loops (it got ~60 % of a CPU with 12 loops that way).
set -m
pids=()
job=
stop_loops() {
    # The run in progress (its own process group: cargo, the test binary, the harness, QEMU), then the loops.
    [ -n "$job" ] && kill -- "-$job" 2>/dev/null
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
}
trap stop_loops EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$loops"); do
    sh -c 'while :; do :; done' &
    pids+=($!)
done
echo "load: $loops CPU-bound loops (pids ${pids[*]}) on $(nproc) CPUs"

pass=0
for i in $(seq "$n"); do
    t0=$(date +%s)
    # In the background with `wait`: a signal to this script then runs its traps at once (kills the loops).
    VM_TESTS_REQUIRED=1 cargo test -p system-tests --test vm -q -- --nocapture >"$logs/run-$i.log" 2>&1 &
    job=$!
    if wait $job; then
        pass=$((pass + 1))
        verdict="pass: $(grep -m1 -o 'qemu ran .*' "$logs/run-$i.log")"
    else
        verdict="FAIL: $(grep -m3 -E '^VM TEST [^ ]+: FAIL|panicked|VM TEST SKIPPED' "$logs/run-$i.log" | tr '\n' ' ')"
    fi
    job=
    echo "run $i/$n: $verdict ($(($(date +%s) - t0)) s, load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "VM under load: $pass/$n passed"
[ "$pass" = "$n" ]
