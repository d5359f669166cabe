#!/usr/bin/env bash
# Rewrites citations of the hardware fact sheets kept outside the repository ("fact sheet §7.2", "section 3.7 step
# 35", "`shared/docs/vm-vfio.md` section 5", "virtio 1.2 §2.7", bare "§6.1" in a driver's files) into citations of
# the notes in docs/hw/ ("docs/hw/ixgbe.md §7.2"), so that scripts/check-citations.sh passes.
#
# Usage: docs/hw/fix-citations.sh [FILE...]   (default: every tracked or new .rs and .md file outside docs/hw/)
#
# A file's bare citations go to the note of the driver it belongs to, chosen from its path (i40e, hinic3, virtio,
# otherwise ixgbe for ixgbe/ and nicsim/); files elsewhere only get the rules that name a note explicitly. The
# script is idempotent: run it again after merging and it changes nothing already rewritten. Lines that it cannot
# place are left alone for the checker to report.
set -euo pipefail

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

# The note a file's unqualified citations belong to, or nothing.
note_for() {
    case "$1" in
        docs/hw/*) ;;
        *i40e* | *x710*) echo i40e.md ;;
        *hinic*) echo hinic3.md ;;
        *virtio*) echo virtio.md ;;
        ixgbe/* | nicsim/*) echo ixgbe.md ;;
    esac
}

# Rules that name their target explicitly; safe on any file.
explicit_rules() {
    cat <<'EOF'
s#`?(shared/)?docs/ixgbe-x540\.md`?#`docs/hw/ixgbe.md`#g
s#`?(shared/)?docs/i40e-x710\.md`?#`docs/hw/i40e.md`#g
s#`?(shared/)?docs/hinic3-sp670\.md`?#`docs/hw/hinic3.md`#g
s#([^/a-z])i40e-x710\.md#\1docs/hw/i40e.md#g
s#([^/a-z])hinic3-sp670\.md#\1docs/hw/hinic3.md#g
s#([^/a-z])ixgbe-x540\.md#\1docs/hw/ixgbe.md#g
s#shared docs, vm-vfio\.md#docs/hw/vm-vfio.md#g
s#shared/docs/vm-vfio\.md#docs/hw/vm-vfio.md#g
s#(^|[^/a-z])vm-vfio\.md#\1docs/hw/vm-vfio.md#g
s#(docs/hw/vm-vfio\.md`?) [Ss]ection ([0-9])#\1 §\2#g
/vm-vfio/s#(and )?[Pp]itfall ([0-9]+)#\1§9 item \2#g
s#virtio 1\.2,? §#docs/hw/virtio.md §#g
s#the fact sheet \(`docs/hw/([a-z0-9-]+)\.md`#the hardware notes (`docs/hw/\1.md`#g
EOF
}

# Rules for a file whose bare citations belong to docs/hw/$1. The last one shortens a "// ---- title ----" banner
# that the inserted path pushed past 120 columns by as many dashes as it added.
note_rules() {
    local n="docs\/hw\/$1"
    cat <<EOF
s/[Dd]atasheet 7\.1\.2\.8 \(via DPDK\)/Intel datasheet 7.1.2.8 via DPDK, docs\/hw\/ixgbe.md §9/g
s/the fact sheet's order \([Ss]ection ([0-9])\)/the order of $n §\1/g
s/[Ss]ections ([0-9][0-9.]*)(-| and |, )([0-9])/§\1\2§\3/g
s/[Ss]ection ([0-9]+)'s table/the table of §\1/g
s/[Ff]act sheet §/$n §/g
s/[Ff]act sheet [Ss]ection ([0-9])/$n §\1/g
s/[Ss]ection ([0-9])/§\1/g
s/(§[0-9.]+), ([0-9]+\.[0-9]+)\)/\1, §\2)/g
s/\(§13 of the fact$/($n §13,/
s/^(\s*\/\/[!\/]?\s+)sheet, L\/H pairs/\1L\/H pairs/
/LNK_RST resets the MAC and the link\. The fact$/s/The fact$/$n §3.2 step 4/
s/^(\s*\/\/[!\/]?\s+)sheet has the driver use LNK_RST/\1has the driver use LNK_RST/
s/\("link reset while link is up may disturb$/(resetting the link while it is up can upset/
s/^(\s*\/\/[!\/]?\s+)manageability"\)/\1manageability traffic)/
s/\((the )?fact sheet$/(see/
s/[Tt]he fact sheet/$n/g
/docs\/hw\//!s/§/$n §/
/^.{121,}$/s/^(\s*\/\/ -+ .*$n.*[^-] )-{$((${#1} + 9))}(-+)$/\1\2/
EOF
}

if [ "$#" -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(git ls-files -co --exclude-standard -- '*.rs' '*.md' | grep -v '^docs/hw/' | grep -v '/target/')
fi

explicit=$(mktemp)
trap 'rm -f "$explicit" "$explicit.note"' EXIT
explicit_rules >"$explicit"

changed=0
rewritten_rs=()
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    before=$(sha1sum "$f")
    sed -i -E -f "$explicit" "$f"
    note=$(note_for "$f")
    if [ -n "$note" ] && [[ "$f" == *.rs ]]; then
        note_rules "$note" >"$explicit.note"
        sed -i -E -f "$explicit.note" "$f"
    fi
    if [ "$before" != "$(sha1sum "$f")" ]; then
        echo "rewrote $f"
        changed=$((changed + 1))
        [[ "$f" == *.rs ]] && rewritten_rs+=("$f")
    fi
done
# A longer string literal can change how rustfmt lays out its expression.
if [ "${#rewritten_rs[@]}" -gt 0 ]; then
    rustfmt --edition 2021 "${rewritten_rs[@]}"
fi
echo "$changed file(s) rewritten; now run scripts/check-citations.sh"
