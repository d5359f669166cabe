#!/usr/bin/env bash
# The main job: testpmd-rs forwarding between two software ports, no hardware needed.
# Runs for RUN_SECONDS (default 5) printing port statistics every second, then stops as Ctrl-C would and prints
# testpmd's forward statistics. Pass your own testpmd-rs arguments to replace the defaults:
#   bash scripts/run.sh -l 0-1 --no-huge --vdev net_null0 --vdev net_null1 -- --forward-mode=macswap
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
cargo build --release -q -p testpmd-rs
bin="${CARGO_TARGET_DIR:-target}/release/testpmd-rs"
lcores="0-1"
[ "$(nproc)" -lt 2 ] && lcores="0"
if [ $# -eq 0 ]; then
  set -- -l "$lcores" --no-huge --vdev net_null0 --vdev net_null1 -- --forward-mode=io --stats-period 1
fi
# testpmd-rs stops on SIGINT like dpdk-testpmd (and prints its statistics); stdin at EOF is not a stop request.
timeout -s INT --kill-after=10 "${RUN_SECONDS:-5}" "$bin" "$@" </dev/null || [ $? -eq 124 ]
