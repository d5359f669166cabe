#!/bin/sh
# Linux's own ixgbe against nicsim's 82599 (SFP+) model, served over vfio-user (harness.py --vendor 82599).
. /tests/vendor.sh
vendor_nic 0x8086 0x10fb 02:00:00:82:59:40 10.77.2.2 10.77.2.1 82599 ixgbe
