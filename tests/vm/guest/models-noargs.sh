#!/bin/sh
# `testpmd-rs -- -i` with no EAL argument in the models boot: the EAL probes every function bound to vfio-pci that a
# registered driver supports, in address order: the four models (X540, 82599, X710, SP670), each a port with its
# driver; forwarding starts and stops; the pool is full after quit.
out=/tmp/models-noargs.out
[ -x /bin/testpmd-rs ] || { echo "testpmd-rs is not in the initramfs"; exit 1; }
printf 'show port info all\nstart\nstop\nquit\n' | testpmd-rs -- -i > $out 2>&1
rc=$?
grep -E "Infos for port|Device name|Driver name|available|EAL|rror" $out
[ $rc = 0 ] || { cat $out; echo "testpmd-rs exited with $rc"; exit 1; }
got=$(grep -c "Infos for port" $out)
echo "models-noargs: $got ports probed without -a"
[ "$got" = 4 ] || { echo "4 ports expected (the four models)"; exit 1; }
for want in "0000:00:06.0 net_ixgbe" "0000:00:07.0 net_ixgbe" "0000:00:08.0 net_i40e" "0000:00:09.0 net_hinic3"; do
    bdf=${want% *} drv=${want#* }
    awk -v b="Device name: $bdf" -v d="Driver name: $drv" '$0 ~ b {f = 1} f && /Driver name/ {print; exit}' $out |
        grep -q "$drv" || { echo "$bdf is not a $drv port"; exit 1; }
done
grep -q "mb_pool_0: \([0-9]*\)/\1 available" $out || { echo "pool not full after quit"; exit 1; }
exit 0
