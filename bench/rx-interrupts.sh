#!/usr/bin/env bash
# RX interrupts against polling, in-process (not a timed test): l3fwd's forwarding loop on two X540 model ports
# wired back to back (net_sim_x540: the real ixgbe driver, the model's MSI-X vectors delivered as eventfds), in
# l3fwd's polling mode and l3fwd-power's two sleeping modes. See bench/src/bin/rx-interrupts.rs for what is timed.
#
# Usage: bash bench/rx-interrupts.sh        (no root, no hugepages, no NIC)
# Knobs: BENCH_SECONDS=3 (each idle and load run), BENCH_SAMPLES=300 (wake-up round trips), BENCH_LOG_DIR.
#
# The model threads are part of the path (a frame crosses two of them each way) and the host's other load shares
# the cores: the latencies are the whole round trip through the models, and what is the interrupt's is the
# difference between the polling and the sleeping rows.
set -eu
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG=${BENCH_LOG_DIR:-$ROOT/target/bench-logs}
mkdir -p "$LOG"
cargo build --release -p bench --bin rx-interrupts --quiet
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/rx-interrupts
OUT=$LOG/rx-interrupts.txt
"$BIN" | tee "$OUT" >/dev/null
v() { sed -n "s/^$1=//p" "$OUT"; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
printf '%-44s %14s %14s %14s\n' "" "l3fwd (poll)" "l3fwd-power" "--interrupt-only"
printf '%-44s %13s%% %13s%% %13s%%\n' "idle: lcore thread CPU" \
  "$(v idle_poll_lcore_cpu_pct)" "$(v idle_power_lcore_cpu_pct)" "$(v idle_intr_only_lcore_cpu_pct)"
printf '%-44s %13s%% %13s%% %13s%%\n' "idle: process CPU (with 2 model threads)" \
  "$(v idle_poll_process_cpu_pct)" "$(v idle_power_process_cpu_pct)" "$(v idle_intr_only_process_cpu_pct)"
printf '%-44s %14s %14s %14s\n' "idle: sleeps on the interrupt" \
  "$(v idle_poll_sleeps)" "$(v idle_power_sleeps)" "$(v idle_intr_only_sleeps)"
printf '%-44s %14s %14s %14s\n' "round trip p50 / p99 (us)" \
  "$(v latency_poll_p50_us) / $(v latency_poll_p99_us)" "-" \
  "$(v latency_intr_only_p50_us) / $(v latency_intr_only_p99_us)"
printf '%-44s %14s %14s %14s\n' "round trips woken by the interrupt" "$(v latency_poll_wakeups)" "-" \
  "$(v latency_intr_only_wakeups)"
printf '%-44s %14s %14s %14s\n' "frame on the wire to app p50 / p99 (us)" \
  "$(v wake_spin_p50_us) / $(v wake_spin_p99_us)" "-" "$(v wake_intr_p50_us) / $(v wake_intr_p99_us)"
printf '%-44s %14s %14s %14s\n' "under load: forwarded (kpps)" "$(v load_poll_kpps)" "$(v load_power_kpps)" "-"
printf '%-44s %14s %14s %14s\n' "under load: sleeps" "$(v load_poll_sleeps)" "$(v load_power_sleeps)" "-"
