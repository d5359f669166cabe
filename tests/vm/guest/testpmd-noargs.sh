#!/bin/sh
# The seed-style `testpmd-rs -- -i` with no EAL argument at all: without -a the EAL probes every PCI device bound to
# vfio-pci that a registered driver supports, in address order, as DPDK does (here the two virtio-net functions and
# the igb, which /init bound to vfio-pci). Each must be a port with its driver, forwarding must start and stop, and
# the pool must be full after quit.
out=/tmp/testpmd-noargs.out
[ -x /bin/testpmd-rs ] || { echo "testpmd-rs is not in the initramfs"; exit 1; }
printf 'show port info all\nstart\nstop\nquit\n' | testpmd-rs -- -i > $out 2>&1
rc=$?
grep -E "Infos for port|Device name|Driver name|available|EAL|rror" $out
[ $rc = 0 ] || { cat $out; echo "testpmd-rs exited with $rc"; exit 1; }
want=0
for bdf in /sys/bus/pci/drivers/vfio-pci/0000:*; do
    [ -e "$bdf" ] || continue
    want=$((want + 1))
    grep -q "Device name: ${bdf##*/}" $out || { echo "${bdf##*/} (bound to vfio-pci) was not probed"; exit 1; }
done
got=$(grep -c "Infos for port" $out)
echo "testpmd-noargs: $got ports probed without -a, $want devices bound to vfio-pci"
[ "$want" -ge 2 ] || { echo "the guest should have at least two devices on vfio-pci"; exit 1; }
[ "$got" = "$want" ] || exit 1
grep -q "Driver name: net_virtio" $out || { echo "no virtio port"; exit 1; }
grep -q "Driver name: net_igb" $out || { echo "no igb port"; exit 1; }
grep -q "mb_pool_0: \([0-9]*\)/\1 available" $out || { echo "pool not full after quit"; exit 1; }
exit 0
