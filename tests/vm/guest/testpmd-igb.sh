#!/bin/sh
# testpmd-rs io-forwards between the igb (port 0, net_igb) and vnet0 (port 1, virtio), both probed with -a through
# the EAL's PCI table, VFIO and the emulated IOMMU. Once the igb link is up, the host injects N frames on igb0's TAP
# and N on vnet0's; it must get all N on the other TAP each way. The port counters must agree (RX = TX = N on both
# ports) and the pool must be full after quit.
# No fixed sleeps: it polls testpmd-rs's output for each state it needs (a loaded host slows the TCG guest down).
N=200
IGB=0000:00:05.0
VNET=0000:00:03.0
out=/tmp/testpmd-igb.out
[ -x /bin/testpmd-rs ] || { echo "testpmd-rs is not in the initramfs"; exit 1; }
. /tests/lib.sh
# These ask testpmd-rs (which reads this function's stdout) and check its last answer.
link_up() {
    echo "show port info 0"
    sleep 0.1
    grep -q "Link status: up" $out
}
all_received() {
    echo "show port stats all"
    sleep 0.2
    [ "$(stat 0 RX)" = "$N" ] && [ "$(stat 1 RX)" = "$N" ]
}
all_sent() {
    echo "show port stats all"
    sleep 0.2
    [ "$(stat 0 RX)" = "$N" ] && [ "$(stat 1 RX)" = "$N" ] && [ "$(stat 0 TX)" = "$N" ] && [ "$(stat 1 TX)" = "$N" ]
}
: > $out
{
    echo "start"
    # QEMU's igb brings the link up ~0.5 s (virtual time) after the PHY auto-negotiation restart of the probe, and
    # drops what arrives before: wait for it.
    poll 20 link_up || echo "testpmd-igb: igb link still down after 20 s" > /dev/console
    echo "@@vmtest inject igb0 $N tpmd-igb2vnet" > /dev/console
    echo "@@vmtest inject vnet0 $N tpmd-vnet2igb" > /dev/console
    poll 20 all_received || echo "testpmd-igb: not all $N received on both ports after 20 s" > /dev/console
    # RX is counted before the forwarding core hands the burst to the other port: wait for TX too.
    poll 10 all_sent || echo "testpmd-igb: not all $N sent on both ports after 10 s more" > /dev/console
    echo "show port stats all"
    echo "stop"
    echo "quit"
} | testpmd-rs -l 0 -a $IGB -a $VNET -- -i --forward-mode=io --total-num-mbufs 2048 --rxd 256 --txd 256 > $out 2>&1
rc=$?
# The output, without the link polls' port info blocks and the statistics the polls asked for (all but the last
# two blocks).
polls=$(grep -c "NIC statistics for port" $out)
awk -v n=$((polls - 2)) '
    /Infos for port/ {info = 1} /^testpmd>/ {info = 0}
    /NIC statistics for port/ {k++; skip = k <= n}
    !skip && !info {print}
    skip && /^ *#+ *$/ {skip = 0}' $out | grep -vE "^testpmd> show port (stats all|info 0)$"
echo "testpmd-igb: igb link up after $(grep -c 'Link status: down' $out) polls saw it down; $((polls / 2)) statistics polls"
echo "@@vmtest expect vnet0 $N tpmd-igb2vnet"
echo "@@vmtest expect igb0 $N tpmd-vnet2igb"
[ $rc = 0 ] || { echo "testpmd-rs exited with $rc"; exit 1; }
grep -q "Link status: up" $out || { echo "the igb link never came up"; exit 1; }
rx0=$(stat 0 RX) tx0=$(stat 0 TX) rx1=$(stat 1 RX) tx1=$(stat 1 TX)
echo "testpmd-igb: port 0 (igb) RX-packets=$rx0 TX-packets=$tx0, port 1 (virtio) RX-packets=$rx1 TX-packets=$tx1, expected $N each"
[ "$rx0" = "$N" ] && [ "$tx0" = "$N" ] && [ "$rx1" = "$N" ] && [ "$tx1" = "$N" ] || exit 1
grep -q "mb_pool_0: \([0-9]*\)/\1 available" $out || { echo "pool not full after quit"; exit 1; }
exit 0
