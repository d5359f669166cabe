#!/usr/bin/env bash
# Instructions per packet of the i40e driver (callgrind): bench/driver-callgrind.sh i40e [burst...].
exec bash "$(dirname "$0")/driver-callgrind.sh" i40e "$@"
