#!/bin/busybox sh
# /init of the VM test guest (busybox initramfs built by tests/vm/harness.py).
#
# Kernel command line options read here:
#   vt.tests=a,b,c     tests to run in order: /tests/NAME.sh if present, else `/bin/vmtest NAME`
#   vt.hugepages=N     2 MiB hugepages to reserve (default 32)
#   vt.timeout=S       per-test timeout in seconds (default 60)
#   vt.unsafe_irq=1    load vfio_iommu_type1 with allow_unsafe_interrupts=1 (virtio-iommu)
#   vt.vfio_ids=V:D,.. more PCI functions to bind to vfio-pci (vendor:device in hex, e.g. the vfio-user models)
# Markers on the console (parsed by the harness):
#   VMTEST BOOTED, VMTEST BIND ..., VMTEST START name, VMTEST PASS name, VMTEST FAIL name ..., VMTEST DONE
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/hugepages /tmp
mount -t hugetlbfs nodev /dev/hugepages
mount -t tmpfs tmpfs /tmp

tests=""
hugepages=32
timeout_s=60
unsafe_irq=0
vfio_ids=""
for a in $(cat /proc/cmdline); do
    case "$a" in
    vt.tests=*) tests="${a#vt.tests=}" ;;
    vt.hugepages=*) hugepages="${a#vt.hugepages=}" ;;
    vt.timeout=*) timeout_s="${a#vt.timeout=}" ;;
    vt.unsafe_irq=*) unsafe_irq="${a#vt.unsafe_irq=}" ;;
    vt.vfio_ids=*) vfio_ids="${a#vt.vfio_ids=}" ;;
    esac
done
echo "VMTEST BOOTED uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"

# VFIO modules (skipped when absent, e.g. a kernel with VFIO built in).
for m in irqbypass vfio vfio_iommu_type1 vfio_virqfd vfio-pci-core vfio-pci; do
    [ -f "/lib/modules/$m.ko" ] || continue
    args=""
    [ "$m" = vfio_iommu_type1 ] && [ "$unsafe_irq" = 1 ] && args="allow_unsafe_interrupts=1"
    insmod "/lib/modules/$m.ko" $args || echo "VMTEST WARN insmod $m failed"
done

echo "$hugepages" > /proc/sys/vm/nr_hugepages
echo "VMTEST HUGEPAGES $(cat /proc/sys/vm/nr_hugepages)"

# Hand the NICs under test to vfio-pci: igb (8086:10c9), modern virtio-net (1af4:1041) and those of vt.vfio_ids.
for d in /sys/bus/pci/devices/*; do
    id="$(cat "$d/vendor"):$(cat "$d/device")"
    extra=no
    for v in $(echo "$vfio_ids" | tr ',' ' '); do
        [ "$id" = "0x${v%%:*}:0x${v##*:}" ] && extra=yes
    done
    case "$id:$extra" in
    0x8086:0x10c9:* | 0x1af4:0x1041:* | *:yes)
        bdf="${d##*/}"
        [ -e "$d/driver" ] && echo "$bdf" > "$d/driver/unbind"
        echo vfio-pci > "$d/driver_override"
        echo "$bdf" > /sys/bus/pci/drivers_probe
        drv=none
        [ -e "$d/driver" ] && drv="$(basename "$(readlink "$d/driver")")"
        grp=none
        [ -e "$d/iommu_group" ] && grp="$(basename "$(readlink "$d/iommu_group")")"
        echo "VMTEST BIND $bdf $id driver=$drv group=$grp"
        ;;
    esac
done

# From here on the kernel keeps all but its most urgent messages (emerg, alert) off the console: printk writes to
# the UART directly and would split the line a test is printing (a DMAR fault report in the middle of a
# "@@vmtest expect ..." marker). Each test's new kernel messages follow it instead, as whole lines.
dmesg -n 2
for t in $(echo "$tests" | tr ',' ' '); do
    echo "VMTEST START $t"
    kmsgs=$(dmesg | wc -l)
    t0=$(cut -d' ' -f1 /proc/uptime)
    if [ -f "/tests/$t.sh" ]; then
        timeout "$timeout_s" sh "/tests/$t.sh"
    else
        timeout "$timeout_s" /bin/vmtest "$t"
    fi
    rc=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    keep=12
    [ "$rc" = 0 ] || keep=60
    dmesg | tail -n +$((kmsgs + 1)) | tail -n $keep | sed 's/^/VMTEST DMESG /'
    if [ "$rc" = 0 ]; then
        echo "VMTEST PASS $t start=$t0 end=$t1"
    else
        echo "VMTEST FAIL $t rc=$rc start=$t0 end=$t1"
    fi
done
echo "VMTEST DONE uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
