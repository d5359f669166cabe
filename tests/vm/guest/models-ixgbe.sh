#!/bin/sh
# Our ixgbe PMD on the X540 (00:06.0) and 82599 (00:07.0) models through the guest's vfio-pci and vIOMMU.
. /tests/model-pair.sh
model_pair models-ixgbe 0000:00:06.0 x540 net_ixgbe 0000:00:07.0 82599 net_ixgbe
