#!/usr/bin/env bash
# Instructions per packet of the hinic3 driver (callgrind): bench/driver-callgrind.sh hinic3 [burst...].
exec bash "$(dirname "$0")/driver-callgrind.sh" hinic3 "$@"
