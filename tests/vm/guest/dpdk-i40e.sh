#!/bin/sh
# DPDK's own i40e PMD on our X710 model (00:08.0), beside Linux's i40e (i40e-x710). One port: io forwarding sends
# what arrives back out of it.
. /tests/dpdk.sh
dpdk_judge dpdk-i40e net_i40e pmd.net.i40e x710 0000:00:08.0
