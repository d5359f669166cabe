#!/bin/sh
# l3fwd routes IPv4 between the X710 (port 0, 00:08.0) and SP670 (port 1, 00:09.0) models, driven by our i40e and
# hinic3 PMDs through vfio-pci: `l3fwd -a BDF -a BDF -- -p 0x3 --config "(0,0,0),(1,0,0)"` with its built-in LPM
# routes (198.18.P.0/24 -> port P) and the host peer as each port's next hop (--eth-dest). The host injects N
# IPv4 packets to 198.18.1.5 on the X710's TAP and N to 198.18.0.5 on the SP670's: each must come out of the other
# port routed (TTL 63, dst MAC the peer, src MAC the port's, header checksum updated, payload byte for byte); l3fwd's
# counters say RX = TX = N per port; the models' counters agree (cumulative, after models-i40e-hinic3's traffic).
N=50
SIZE=128
P0=0000:00:08.0 NIC0=x710
P1=0000:00:09.0 NIC1=sp670
# What models-i40e-hinic3 sent through these models before (2 rounds of 64 + 4 frames each way).
BEFORE=136
out=/tmp/models-l3fwd.out
[ -x /bin/l3fwd ] || { echo "l3fwd is not in the initramfs"; exit 1; }
. /tests/lib.sh
: > $out
l3fwd -l 0 -a $P0 -a $P1 -- -p 0x3 --config "(0,0,0),(1,0,0)" -T 1 \
    --eth-dest=0,02:00:00:00:00:01 --eth-dest=1,02:00:00:00:00:01 > $out 2>&1 &
pid=$!
ready() { grep -q "entering main loop" $out; }
poll 60 ready || { cat $out; kill $pid; echo "l3fwd did not start forwarding within 60 s"; exit 1; }
grep -E "Link|driver|Address" $out
echo "@@vmtest inject-ip $NIC0 $N l3-to-p1 198.18.1.5 $SIZE"
echo "@@vmtest inject-ip $NIC1 $N l3-to-p0 198.18.0.5 $SIZE"
# The last periodic statistics (-T 1) show every packet received and sent.
port_stat() {
    awk -v p="$1" -v k="$2-packets:" '$1 == "Port" && $2 == p {for (i = 3; i < NF; i++) if ($i == k) v = $(i + 1)} END {print v}' $out
}
routed() { [ "$(port_stat 0 RX)" = $N ] && [ "$(port_stat 1 RX)" = $N ] && [ "$(port_stat 0 TX)" = $N ] && [ "$(port_stat 1 TX)" = $N ]; }
poll 30 routed || echo "models-l3fwd: not all $N routed each way after 30 s"
kill -INT $pid
wait $pid
rc=$?
sed -n '/Signal received/,$p' $out
echo "@@vmtest expect-routed $NIC1 $N l3-to-p1 198.18.1.5 $SIZE 02:00:00:00:00:01"
echo "@@vmtest expect-routed $NIC0 $N l3-to-p0 198.18.0.5 $SIZE 02:00:00:00:00:01"
echo "@@vmtest model-stats $NIC0 $((BEFORE + N)) $((BEFORE + N)) polled"
echo "@@vmtest model-stats $NIC1 $((BEFORE + N)) $((BEFORE + N)) polled"
[ $rc = 0 ] || { echo "l3fwd exited with $rc"; exit 1; }
for p in 0 1; do
    for k in RX TX; do
        [ "$(port_stat $p $k)" = $N ] || { echo "port $p $k-packets $(port_stat $p $k), $N expected"; exit 1; }
    done
done
grep -q "Dropped:.* total: 0" $out || { echo "l3fwd dropped packets"; exit 1; }
exit 0
