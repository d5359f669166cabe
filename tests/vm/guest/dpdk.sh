#!/bin/sh
# Shell helpers of the DPDK-judge tests (sourced, not a test itself): DPDK 25.11's own dpdk-testpmd and PMDs
# (scripts/setup.sh's judge, under /dpdk of the initramfs) drive nicsim models served over vfio-user behind the
# vIOMMU (harness.py --models), bound to vfio-pci by /init. Nobody here wrote those PMDs: what our model gets wrong
# that our own driver shares, they see.
. /tests/lib.sh

# dpdk-testpmd through sid's loader and libraries (the busybox guest has no libc of its own); -d loads exactly the
# PMD plugins of /dpdk/pmds.
dpdk_testpmd() {
    /dpdk/lib/ld-linux-x86-64.so.2 --library-path /dpdk/lib /dpdk/bin/dpdk-testpmd -d /dpdk/pmds "$@"
}

# dpdk_judge NAME PMD LOGTYPE NIC0 BDF0 [NIC1 BDF1]: `dpdk-testpmd -a BDF0 [-a BDF1] -- -i --forward-mode=io`.
# Each port is probed by PMD, its link comes up (polled through `show port info`); N 60-byte and L full-size
# frames injected on each model's TAP come out of the other port's TAP (with one port: out of the same TAP, io
# forwarding sends a port's frames back out of it) byte for byte; forwarding stops, the ports stop and start
# again, the same traffic once more; `show port stats` counts every frame, equal to the model's own counters
# (host check `model-stats`, also: no model fault); the ports close. LOGTYPE (e.g. pmd.net.hinic3) logs at debug
# level, so the commands the PMD sent are in the output of a failed run.
dpdk_judge() {
    name=$1 pmd=$2 logtype=$3 nic0=$4 bdf0=$5 nic1=${6:-} bdf1=${7:-}
    N=64 L=4
    out=/tmp/$name.out
    [ -x /dpdk/bin/dpdk-testpmd ] || { echo "the DPDK judge is not in the initramfs (scripts/setup.sh builds it)"; exit 1; }
    ports="0" allow="-a $bdf0" peer0=$nic0 peer1=""
    if [ -n "$nic1" ]; then
        ports="0 1" allow="$allow -a $bdf1" peer0=$nic1 peer1=$nic0
    fi
    # Port $1's last link status, printed since the last `port start all` (after it a link that was up goes down
    # and up again: an answer from before it says nothing).
    link_of() {
        awk -v p="Infos for port $1 " '/port start all/ {v = ""} /Infos for port/ {f = index($0, p) > 0}
            f && /Link status:/ {v = $3} END {print v}' $out
    }
    links_up() {
        for p in $ports; do echo "show port info $p"; done
        sleep 0.2
        for p in $ports; do [ "$(link_of $p)" = up ] || return 1; done
    }
    # Per round each port receives the N + L frames of its TAP and sends N + L (its own back, or the other's).
    want=$((N + L))
    counted() {
        echo "show port stats all"
        sleep 0.2
        for p in $ports; do
            [ "$(stat $p RX)" = "$((round * want))" ] && [ "$(stat $p TX)" = "$((round * want))" ] || return 1
        done
    }
    say() { echo "$name: $*" > /dev/console; }
    traffic() {
        echo "@@vmtest inject $nic0 $N $1a 60" > /dev/console
        echo "@@vmtest inject $nic0 $L $1A 1514" > /dev/console
        if [ -n "$nic1" ]; then
            echo "@@vmtest inject $nic1 $N $1b 60" > /dev/console
            echo "@@vmtest inject $nic1 $L $1B 1514" > /dev/console
        fi
        poll 20 counted || say "round $round: not all $want frames received and sent on every port after 20 s"
        echo "show port stats all"
    }
    # The EAL refuses to load plugins below a world-writable directory: the initramfs' / is one (mode 1777).
    chmod 755 /
    mkdir -p /var/run
    : > $out
    {
        if ! poll 60 links_up; then
            say "links not up after 60 s; dpdk-testpmd so far:"
            # The probe (up to the prompt), then the ports' last link states.
            # (the polls' own lines left out: before the first link they are all "Invalid port").
            grep -vE "show port info [01]|Invalid port [01]" $out | sed -n '1,/Interactive-mode selected/p' |
                tail -60 > /dev/console
            grep -E "Infos for port|Link status" $out | tail -4 > /dev/console
        fi
        echo "start"
        round=1
        traffic r1
        # The PMD's own per-queue counters, beside the firmware's.
        for p in $ports; do echo "show port xstats $p"; done
        echo "stop"
        echo "port stop all"
        echo "port start all"
        poll 60 links_up || say "links not up again after port start"
        echo "start"
        round=2
        traffic r2
        echo "stop"
        echo "show port stats all"
        echo "port stop all"
        echo "port close all"
        echo "quit"
    # Two lcores on the guest's one CPU: testpmd forwards only on an lcore other than its main (command) one.
    # --no-flush-rx: `start` would otherwise drain (and drop) what the host injects while the slow guest starts.
    } | dpdk_testpmd --lcores=0@0,1@0 -n 1 --in-memory $allow --log-level=$logtype:debug -- -i --forward-mode=io --no-flush-rx \
        --total-num-mbufs=2048 --rxd=256 --txd=256 > $out 2>&1
    rc=$?
    # The output without the polls' blocks: EAL and PMD lines, errors, then the last statistics.
    grep -vE "^testpmd> show port (stats all|info [01])$" $out | awk '
        /Infos for port|NIC statistics for port/ {blk = 1} !blk {print} blk && /^ *#+ *$|^testpmd>/ {blk = 0}' |
        grep -vE "^testpmd> *$|^ *$" | uniq
    awk '/NIC statistics for port/ {blk = ""} {blk = blk $0 "\n"} /^ *#+ *$/ && blk ~ /NIC statistics/ {last = blk} END {printf "%s", last}' $out
    if [ $rc != 0 ] && ! grep -q "Port 0 is closed" $out; then
        echo "@@vmtest model-stats $nic0 -1 -1 polled"
        echo "dpdk-testpmd exited with $rc before the end"
        exit 1
    fi
    for r in r1 r2; do
        echo "@@vmtest expect $peer0 $N ${r}a 60 $nic0"
        echo "@@vmtest expect $peer0 $L ${r}A 1514 $nic0"
        if [ -n "$nic1" ]; then
            echo "@@vmtest expect $peer1 $N ${r}b 60 $nic1"
            echo "@@vmtest expect $peer1 $L ${r}B 1514 $nic1"
        fi
    done
    # DPDK's own counters of each port against the model's (what it delivered to the guest and put on its wire).
    p=0
    for nic in $nic0 $nic1; do
        echo "@@vmtest model-stats $nic $(stat $p RX) $(stat $p TX) polled"
        p=$((p + 1))
    done
    [ $rc = 0 ] || { echo "dpdk-testpmd exited with $rc"; exit 1; }
    grep -q "Driver name: $pmd" $out || { echo "port 0 ($bdf0) is not a $pmd port"; exit 1; }
    grep -q "Port 0 is closed" $out || { echo "the ports did not close"; exit 1; }
    for p in $ports; do
        echo "$name: port $p RX-packets=$(stat $p RX) TX-packets=$(stat $p TX), expected $((2 * want)) each"
        [ "$(stat $p RX)" = "$((2 * want))" ] && [ "$(stat $p TX)" = "$((2 * want))" ] || exit 1
    done
    exit 0
}
