#!/bin/sh
# Linux's own ixgbe against nicsim's 82599 (SFP+) model, served over vfio-user (harness.py --vendor 82599).
. /tests/vendor.sh
vendor_nic 0x8086 0x10fb 02:00:00:82:59:40 10.77.2.2 10.77.2.1 82599 ixgbe
# The module in the model's cage was read over the bit-banged I2C bus and classified as a passive direct-attach
# cable on LAN port 0 (module type 3, docs/hw/ixgbe.md §18.3); an empty cage or a misread ID page shows otherwise.
dmesg | grep -q "detected SFP+: 3$" || fail "ixgbe did not identify the SFP+ module as a passive DA cable (type 3)"
echo "SFP+ module: passive DA cable (type 3)"
