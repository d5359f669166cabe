#!/bin/sh
# Our i40e PMD on the X710 model (00:08.0) and our hinic3 PMD on the SP670 model (00:09.0, BARs 0/1/3/4 and the
# MSI-X BAR2) through the guest's vfio-pci and vIOMMU.
. /tests/model-pair.sh
model_pair models-i40e-hinic3 0000:00:08.0 x710 net_i40e 0000:00:09.0 sp670 net_hinic3
