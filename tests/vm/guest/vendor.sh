# Shell helpers of the vendor-driver tests (sourced, not a test itself): a nicsim model served over vfio-user
# (harness.py --vendor) probed by the guest kernel's own driver.
. /tests/lib.sh

fail() {
    echo "FAIL: $*"
    dmesg | grep -iE "ixgbe|i40e|$bdf|$if" | tail -80
    # The host then reports the model's faults (the registers the driver used in a way the model rejects).
    [ -n "$model" ] && echo "@@vmtest model-stats $model -1 -1"
    exit 1
}

# load_modules NAME...: insmod each from /lib/modules unless already loaded.
load_modules() {
    for m in "$@"; do
        [ -d "/sys/module/$m" ] && continue
        insmod "/lib/modules/$m.ko" || fail "insmod $m"
    done
}

# vendor_nic VENDOR DEVICE MAC GUEST_IP PEER_IP MODEL DRIVER: the driver probes the model's PCI function, the MAC
# from the model's NVM is the interface's, the link comes up, the guest pings the host's end of the model's TAP,
# the queues use MSI-X vectors, and the model's counters agree with the interface's (checked by the host).
vendor_nic() {
    vendor=$1 device=$2 mac=$3 ip=$4 peer=$5 model=$6 driver=$7
    bdf="" if=""
    for d in /sys/bus/pci/devices/*; do
        [ "$(cat "$d/vendor"):$(cat "$d/device")" = "$vendor:$device" ] && bdf=${d##*/}
    done
    [ -n "$bdf" ] || fail "no PCI function $vendor:$device: the vfio-user device is missing"
    echo "model $model at $bdf"
    case $driver in
    ixgbe) load_modules dca mdio libphy mdio_devres xfrm_algo ixgbe ;;
    i40e) load_modules libie i40e ;;
    esac
    has_netdev() { ls "/sys/bus/pci/devices/$bdf/net/" 2>/dev/null | grep -q .; }
    poll 30 has_netdev || fail "$driver did not probe $bdf (no network interface)"
    if=$(ls "/sys/bus/pci/devices/$bdf/net/" | head -n 1)
    got=$(cat "/sys/class/net/$if/address")
    echo "$driver probed $bdf as $if, MAC $got"
    [ "$got" = "$mac" ] || fail "$if has MAC $got; the model's NVM holds $mac"
    # In the background: a driver stuck in its open path (uninterruptible) must not take the test's output with it.
    ip link set "$if" up &
    up_pid=$!
    up_done() { ! kill -0 "$up_pid" 2>/dev/null; }
    poll 20 up_done || fail "ip link set $if up did not return within 20 s (the driver's open path is stuck)"
    wait "$up_pid" || fail "ip link set $if up"
    carrier() { [ "$(cat "/sys/class/net/$if/carrier" 2>/dev/null)" = 1 ]; }
    poll 30 carrier || fail "the link of $if did not come up"
    echo "link up at $(cat "/sys/class/net/$if/speed") Mb/s"
    ip addr add "$ip/24" dev "$if"
    ping -c 5 -W 5 "$peer" || fail "no replies from $peer through $if"
    # Full-size frames (1514 bytes on the wire) both ways.
    ping -c 5 -W 5 -s 1472 "$peer" || fail "no replies to 1500-byte packets from $peer through $if"
    grep "$if" /proc/interrupts
    [ "$(grep -c "$if-TxRx" /proc/interrupts)" -ge 1 ] || fail "$if has no MSI-X queue vectors"
    ip -s link show "$if" 2>/dev/null
    rx=$(cat "/sys/class/net/$if/statistics/rx_packets")
    tx=$(cat "/sys/class/net/$if/statistics/tx_packets")
    echo "@@vmtest model-stats $model $rx $tx"
}
