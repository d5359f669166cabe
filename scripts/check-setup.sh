#!/usr/bin/env bash
# A guard against the next missing install step (part of scripts/test.sh): fails when
#   - a package named after `apt-get install` or `apt install` anywhere in the tree (a script, a test's hint to the
#     user, a document) is not in scripts/setup.sh's package table, or
#   - a file other than the set-up's own runs apt-get (only scripts/setup.sh, scripts/lib/setup-lib.sh and the QEMU
#     build it calls, tests/vm/qemu-vfio-user.sh, may: everything else asks the set-up).
# Usage: bash scripts/check-setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --list >/tmp/pktio-setup-packages.$$
trap 'rm -f /tmp/pktio-setup-packages.$$' EXIT
git ls-files -z -- '*.sh' '*.py' '*.rs' '*.md' '*.toml' | python3 -c '
import re, sys
known = set(open(sys.argv[1]).read().split())
setup_own = {"scripts/setup.sh", "scripts/lib/setup-lib.sh", "tests/vm/qemu-vfio-user.sh"}
files = [f for f in sys.stdin.read().split("\0") if f]
install = re.compile(r"\bapt(?:-get)? install\b(.*)")
package = re.compile(r"[a-z0-9][a-z0-9+.-]+(?::[a-z0-9]+)?$")
runs = [re.compile(p) for p in (
    r"^\s*(?:\(|\{|sudo\s+|env\s+|(?:[A-Z_]+=\S*\s+)+)*apt(?:-get)?\s",  # a shell command line
    r"(?:&&|\|\||;|\$\()\s*(?:[A-Z_]+=\S*\s+)*apt(?:-get)?\s",          # after a shell operator
    r"\[\s*\"apt(?:-get)?\"",                                         # python: run([\"apt-get\", ...])
    r"Command::new\(\"apt(?:-get)?\"\)",                              # rust
)]
bad = []
for f in files:
    if f == "scripts/check-setup.sh":
        continue
    try:
        lines = open(f, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        continue
    for n, line in enumerate(lines, 1):
        where = f"{f}:{n}"
        if f not in setup_own:
            code = line.split("#", 1)[0] if f.endswith(".sh") else line
            if f.endswith((".sh", ".py", ".rs")) and any(r.search(code) for r in runs):
                bad.append(f"{where}: runs apt itself; ask bash scripts/setup.sh instead (add the package to its table)")
        if f in setup_own:
            continue
        for m in install.finditer(line):
            words = m.group(1).split()
            i = 0
            while i < len(words):
                raw = words[i]
                w = raw.strip("`\"(),;.")
                if w in ("-t", "--target-release"):
                    i += 2
                    continue
                if w.startswith("-") or w in ("", "sudo"):
                    if raw[-1:] == "`":
                        break
                    i += 1
                    continue
                if not package.match(w) or w in ("or", "and", "then", "first", "with"):
                    break
                if w not in known:
                    bad.append(f"{where}: package {w} is named after apt-get install but is not in scripts/setup.sh")
                if raw[-1] in "`\");,|":
                    break  # the end of the command the text names
                i += 1
for b in bad:
    print("check-setup: " + b, file=sys.stderr)
if bad:
    sys.exit(1)
print(f"check-setup: ok ({len(known)} packages in the set-up; every package the tree names is among them)")
' /tmp/pktio-setup-packages.$$
