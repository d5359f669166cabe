#!/bin/sh
# Linux's own ixgbe against nicsim's X540 model, served over vfio-user (harness.py --vendor x540).
. /tests/vendor.sh
vendor_nic 0x8086 0x1528 02:00:00:54:05:40 10.77.1.2 10.77.1.1 x540 ixgbe
