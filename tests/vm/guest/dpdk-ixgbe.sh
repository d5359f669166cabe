#!/bin/sh
# DPDK's own ixgbe PMD on our X540 (00:06.0) and 82599 (00:07.0) models, io forwarding between them, beside
# Linux's ixgbe (ixgbe-x540, ixgbe-82599).
. /tests/dpdk.sh
dpdk_judge dpdk-ixgbe net_ixgbe pmd.net.ixgbe x540 0000:00:06.0 82599 0000:00:07.0
