#!/bin/sh
# Shell helpers of the model-pair tests (sourced, not a test itself): two nicsim models served over vfio-user
# behind the vIOMMU (harness.py --models), bound to vfio-pci by /init, driven by the project's own PMDs through
# testpmd-rs's EAL probe.
. /tests/lib.sh

# model_pair NAME BDF0 NIC0 DRV0 BDF1 NIC1 DRV1: `testpmd-rs -a BDF0 -a BDF1 -- -i --forward-mode=io`; both ports
# probed with their driver, links up (polled through `show port info`); N 60-byte and L full-size frames injected
# on each model's TAP arrive on the other's byte for byte, exact port counters; forwarding and the ports stopped
# and started again, the same traffic once more; the models' own counters agree and they recorded no fault; the
# pool is full after quit.
model_pair() {
    name=$1 bdf0=$2 nic0=$3 drv0=$4 bdf1=$5 nic1=$6 drv1=$7
    N=64 L=4
    out=/tmp/$name.out
    [ -x /bin/testpmd-rs ] || { echo "testpmd-rs is not in the initramfs"; exit 1; }
    # The last "Link status" of port $1's last `show port info` block.
    link_of() {
        awk -v p="Infos for port $1 " '/Infos for port/ {f = index($0, p) > 0} f && /Link status:/ {v = $3} END {print v}' $out
    }
    links_up() {
        echo "show port info 0"
        echo "show port info 1"
        sleep 0.2
        [ "$(link_of 0)" = up ] && [ "$(link_of 1)" = up ]
    }
    want=$((N + L))
    counted() {
        echo "show port stats all"
        sleep 0.2
        [ "$(stat 0 RX)" = "$want" ] && [ "$(stat 1 RX)" = "$want" ] && [ "$(stat 0 TX)" = "$want" ] &&
            [ "$(stat 1 TX)" = "$want" ]
    }
    say() { echo "$name: $*" > /dev/console; }
    # One round of traffic: TAG prefix $1.
    traffic() {
        echo "@@vmtest inject $nic0 $N $1a 60" > /dev/console
        echo "@@vmtest inject $nic0 $L $1A 1514" > /dev/console
        echo "@@vmtest inject $nic1 $N $1b 60" > /dev/console
        echo "@@vmtest inject $nic1 $L $1B 1514" > /dev/console
        if ! poll 30 counted; then
            say "round $1: not all $want frames received and sent on both ports after 30 s"
            # The drivers' own view (hang watchdog, hardware counters) for the report.
            echo "show port xstats all"
        fi
        echo "show port stats all"
    }
    # The models' counters run over the boot: this test counts from here.
    echo "@@vmtest model-mark $nic0"
    echo "@@vmtest model-mark $nic1"
    : > $out
    {
        poll 30 links_up || say "links not both up after 30 s"
        echo "start"
        traffic r1
        echo "stop"
        echo "port stop all"
        echo "port start all"
        echo "clear port stats all"
        poll 30 links_up || say "links not both up again after port start"
        echo "start"
        traffic r2
        echo "stop"
        echo "quit"
    # --no-flush-rx: the host injects as soon as `start` is written, and testpmd's `start` empties the RX queues
    # (as DPDK's does) while the slow guest is still starting: what it flushed was lost (seen as rounds whose
    # frames the models and the hardware counters delivered but the forwarding engine never counted).
    } | testpmd-rs -l 0 -a $bdf0 -a $bdf1 -- -i --forward-mode=io --no-flush-rx --total-num-mbufs 2048 --rxd 256 \
        --txd 256 > $out 2>&1
    rc=$?
    # The forwarding engine's per-round statistics (what it dropped) and, after a failed round, the xstats.
    grep -A4 "Forward statistics for port" $out | grep -E "Forward|RX-packets|TX-packets"
    awk '/NIC extended statistics/ {x = 1} x && /: [1-9]/ {print} /^testpmd>/ {x = 0}' $out
    # The output without the polls' blocks: EAL lines, driver lines, errors, the last statistics.
    grep -vE "^ *(RX|TX|Rx|Tx)-|^ *#+|Throughput|^ *$|^testpmd> (show|start|stop|clear|port)|Firmware|Link (speed|duplex)|Promiscuous|Allmulticast|MAC address|Maximum|Minimum|Current|Supported|Infos for|Device name|Socket|Connect|Autoneg|MTU|VLAN|Hash|Redirection|number of|Rx queue|Tx queue|offload|Max possible|Min possible" $out | sort | uniq -c | head -40
    awk '/NIC statistics for port/ {blk = ""} {blk = blk $0 "\n"} /^ *#+ *$/ && blk ~ /NIC statistics/ {last = blk} END {printf "%s", last}' $out
    for r in r1 r2; do
        echo "@@vmtest expect $nic1 $N ${r}a 60 $nic0"
        echo "@@vmtest expect $nic1 $L ${r}A 1514 $nic0"
        echo "@@vmtest expect $nic0 $N ${r}b 60 $nic1"
        echo "@@vmtest expect $nic0 $L ${r}B 1514 $nic1"
    done
    # Each model delivered what was injected on its TAP and sent what came in on the other, in both rounds.
    echo "@@vmtest model-stats $nic0 $((2 * want)) $((2 * want)) polled"
    echo "@@vmtest model-stats $nic1 $((2 * want)) $((2 * want)) polled"
    [ $rc = 0 ] || { tail -40 $out; echo "testpmd-rs exited with $rc"; exit 1; }
    grep -q "Driver name: $drv0" $out || { echo "port 0 ($bdf0) is not a $drv0 port"; exit 1; }
    grep -q "Driver name: $drv1" $out || { echo "port 1 ($bdf1) is not a $drv1 port"; exit 1; }
    rx0=$(stat 0 RX) tx0=$(stat 0 TX) rx1=$(stat 1 RX) tx1=$(stat 1 TX)
    echo "$name: round 2 port 0 RX-packets=$rx0 TX-packets=$tx0, port 1 RX-packets=$rx1 TX-packets=$tx1, expected $want each"
    [ "$rx0" = "$want" ] && [ "$tx0" = "$want" ] && [ "$rx1" = "$want" ] && [ "$tx1" = "$want" ] || exit 1
    grep -q "mb_pool_0: \([0-9]*\)/\1 available" $out || { echo "pool not full after quit"; exit 1; }
    exit 0
}
