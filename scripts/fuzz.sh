#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ (not part of the default test run).
# Usage: bash scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 600 s each, every target, one after another)
#   FUZZ_JOBS=N runs N targets at once.
# Each target keeps its corpus in fuzz/corpus/TARGET (committed, minimised at the end of a run); a crash is written
# to fuzz/artifacts/TARGET/ and the script exits non-zero naming it. Turn every crash into a regression test in the
# crate that owns the parser (see fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-600}
shift || true
if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz: needs a nightly toolchain: rustup toolchain install nightly" >&2
  exit 1
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
cargo +nightly fuzz build -O "${targets[@]/#/}" >/dev/null 2>&1 || cargo +nightly fuzz build -O
run_one() {
  local t=$1 log
  log=$(mktemp)
  mkdir -p "corpus/$t" "seeds/$t"
  if cargo +nightly fuzz run -O "$t" "corpus/$t" "seeds/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 \
      -max_len=4096 -print_final_stats=1 >"$log" 2>&1; then
    local runs
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz $t: ${secs}s, $runs runs, no crash"
    # Keep the committed corpus small: only inputs that add coverage.
    local tmp
    tmp=$(mktemp -d)
    cargo +nightly fuzz cmin -O "$t" "corpus/$t" >/dev/null 2>&1 || true
    rm -rf "$tmp"
  else
    echo "fuzz $t: CRASH (see fuzz/artifacts/$t/); last lines:"
    tail -30 "$log"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}
jobs=${FUZZ_JOBS:-1}
status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status
