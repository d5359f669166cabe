#!/usr/bin/env bash
# Instructions per packet of the ixgbe driver (callgrind): bench/driver-callgrind.sh ixgbe [burst...].
exec bash "$(dirname "$0")/driver-callgrind.sh" ixgbe "$@"
