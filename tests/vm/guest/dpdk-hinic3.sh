#!/bin/sh
# DPDK's own hinic3 PMD (net_hinic3, Huawei's PF driver) on our SP670 model (00:09.0): the SP670's first judge
# nobody here wrote. One port: io forwarding sends what arrives back out of it.
. /tests/dpdk.sh
dpdk_judge dpdk-hinic3 net_hinic3 pmd.net.hinic3 sp670 0000:00:09.0
