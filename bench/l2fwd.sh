#!/usr/bin/env bash
# l2fwd (this project's) against DPDK 22.11's l2fwd: bench/l3fwd.sh with L2L3_APPS=l2fwd (see there for the method
# and knobs). Usage (as root): bash bench/l2fwd.sh
set -eu
L2L3_APPS=l2fwd exec bash "$(dirname "$0")/l3fwd.sh" "$@"
