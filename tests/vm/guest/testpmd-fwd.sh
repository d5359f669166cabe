#!/bin/sh
# testpmd-rs io-forwards between the two virtio-net NICs (probed with -a through the EAL's PCI table, VFIO and
# the emulated IOMMU). The host injects N frames on vnet0's TAP and expects all N on vnet1's TAP; the port counters
# must agree (port 0 RX-packets = port 1 TX-packets = N) and the pool must be full after quit.
# No fixed sleeps: it polls testpmd-rs's output for each state it needs (a loaded host slows the TCG guest down).
N=300
B0=0000:00:03.0
B1=0000:00:04.0
out=/tmp/testpmd-fwd.out
[ -x /bin/testpmd-rs ] || { echo "testpmd-rs is not in the initramfs"; exit 1; }
. /tests/lib.sh
forwarding() { grep -q "packet forwarding - ports=" $out; }
# Asks for the port statistics (testpmd-rs reads its stdin, this function's stdout) and checks the last answer.
all_forwarded() {
    echo "show port stats all"
    sleep 0.2
    [ "$(stat 0 RX)" = "$N" ] && [ "$(stat 1 TX)" = "$N" ]
}
: > $out
{
    echo "start"
    poll 20 forwarding || echo "testpmd-fwd: forwarding not started after 20 s" > /dev/console
    echo "@@vmtest inject vnet0 $N tpmd" > /dev/console
    poll 25 all_forwarded || echo "testpmd-fwd: not all $N forwarded after 25 s" > /dev/console
    echo "show port stats all"
    echo "stop"
    echo "quit"
} | testpmd-rs -l 0 -a $B0 -a $B1 -- -i --forward-mode=io --total-num-mbufs 2048 --rxd 256 --txd 256 > $out 2>&1
rc=$?
# The output, without the statistics the polls asked for (all but the last two blocks).
polls=$(grep -c "NIC statistics for port" $out)
awk -v n=$((polls - 2)) '/NIC statistics for port/ {k++; skip = k <= n} !skip {print} skip && /^ *#+ *$/ {skip = 0}' $out |
    grep -v "^testpmd> show port stats all$"
echo "testpmd-fwd: $((polls / 2)) statistics polls"
echo "@@vmtest expect vnet1 $N tpmd"
[ $rc = 0 ] || { echo "testpmd-rs exited with $rc"; exit 1; }
rx0=$(stat 0 RX) tx1=$(stat 1 TX)
echo "testpmd-fwd: port 0 RX-packets=$rx0, port 1 TX-packets=$tx1, expected $N"
[ "$rx0" = "$N" ] && [ "$tx1" = "$N" ] || exit 1
grep -q "mb_pool_0: \([0-9]*\)/\1 available" $out || { echo "pool not full after quit"; exit 1; }
exit 0
