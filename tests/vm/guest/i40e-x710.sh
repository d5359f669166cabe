#!/bin/sh
# Linux's own i40e against nicsim's X710 model, served over vfio-user (harness.py --vendor x710).
. /tests/vendor.sh
vendor_nic 0x8086 0x1572 02:00:00:71:00:40 10.77.3.2 10.77.3.1 x710 i40e
