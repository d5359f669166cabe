#!/bin/sh
# testpmd-rs io-forwards between the two virtio-net NICs (probed with -a through the EAL's PCI table, VFIO and
# the emulated IOMMU). The host injects N frames on vnet0's TAP and expects all N on vnet1's TAP; the port counters
# must agree (port 0 RX-packets = port 1 TX-packets = N) and the pool must be full after quit.
N=300
B0=0000:00:03.0
B1=0000:00:04.0
out=/tmp/testpmd-fwd.out
[ -x /bin/testpmd-rs ] || { echo "testpmd-rs is not in the initramfs"; exit 1; }
{
    echo "start"
    sleep 2
    echo "@@vmtest inject vnet0 $N tpmd" > /dev/console
    sleep 2
    echo "show port stats all"
    echo "stop"
    echo "quit"
} | testpmd-rs -l 0 -a $B0 -a $B1 -- -i --forward-mode=io --total-num-mbufs 2048 --rxd 256 --txd 256 > $out 2>&1
rc=$?
cat $out
echo "@@vmtest expect vnet1 $N tpmd"
[ $rc = 0 ] || { echo "testpmd-rs exited with $rc"; exit 1; }
# The NIC statistics blocks of `show port stats all`: port 0 RX-packets, port 1 TX-packets.
rx0=$(awk '/NIC statistics for port 0/{p=1} /NIC statistics for port 1/{p=0} p && /RX-packets:/{print $2; exit}' $out)
tx1=$(awk '/NIC statistics for port 1/{p=1} p && /TX-packets:/{print $2; exit}' $out)
echo "testpmd-fwd: port 0 RX-packets=$rx0, port 1 TX-packets=$tx1, expected $N"
[ "$rx0" = "$N" ] && [ "$tx1" = "$N" ] || exit 1
grep -q "mb_pool_0: \([0-9]*\)/\1 available" $out || { echo "pool not full after quit"; exit 1; }
exit 0
