#!/usr/bin/env bash
# Fails when a source or documentation file cites hardware facts that cannot be followed inside the repository.
#
# Rule (docs/hw/README.md): code cites "docs/hw/FILE.md §N". Checked on every line of the tracked and new .rs, .md,
# .sh, .toml and .py files (comments and messages alike):
# - no "fact sheet", "shared/docs" or the names of the fact sheets kept outside the repository;
# - in .rs files, no "section N" (write "§N" after the note's path);
# - every "docs/hw/FILE.md" names an existing file;
# - every "§N" follows, on the same line, a "docs/hw/FILE.md" whose headings include N ("## N." / "### N ");
#   inside docs/hw/FILE.md itself a bare "§N" refers to FILE.md.
#
# Usage: scripts/check-citations.sh [FILE...]   (default: the whole tree). Exit status 1 lists every bad citation.
set -euo pipefail

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

if [ "$#" -gt 0 ]; then
    printf '%s\n' "$@"
else
    git ls-files -co --exclude-standard -- '*.rs' '*.md' '*.sh' '*.toml' '*.py'
fi | python3 -c '
import os, re, sys

# The README states the rule with examples; the two scripts hold the patterns.
SELF = {"scripts/check-citations.sh", "docs/hw/README.md"}
NOTE = re.compile(r"docs/hw/([A-Za-z0-9_.-]+\.md)")
SECTION = re.compile(r"§\s?(\d+[a-z]?(?:\.\d+)*)")
HEADING = re.compile(r"^#+\s+(\d+[a-z]?(?:\.\d+)*)\.?(?:\s|$)")
OUTSIDE = [
    (re.compile(r"fact[ -]sheet", re.I), "cites a fact sheet, which is not in the repository"),
    (re.compile(r"shared[/ ]docs", re.I), "cites shared/docs, which is not in the repository"),
    (re.compile(r"(?<!docs/hw/)\b(ixgbe-x540|i40e-x710|hinic3-sp670|vm-vfio)\.md"),
     "names a fact sheet kept outside the repository"),
]
# "RFC 1624 section 3" cites a public standard by number: allowed anywhere.
BARE_SECTION = re.compile(r"(?<!RFC \d{3} )(?<!RFC \d{4} )\b[Ss]ections? \d")
SPLIT_SHEET = re.compile(r"^\s*(//[!/]?|#|\*)?\s*sheet\b", re.I)

headings = {}

def sections_of(note):
    if note not in headings:
        path = os.path.join("docs/hw", note)
        if not os.path.isfile(path):
            headings[note] = None
        else:
            with open(path, encoding="utf-8") as f:
                headings[note] = {m.group(1) for m in map(HEADING.match, f) if m}
    return headings[note]

bad = 0
def report(path, no, msg, line):
    global bad
    bad += 1
    print(f"{path}:{no}: {msg}\n    {line.strip()}")

for path in (p.strip() for p in sys.stdin):
    if not path or path in SELF or "/target/" in path or path.startswith("target/") or not os.path.isfile(path):
        continue
    own = path[len("docs/hw/"):] if path.startswith("docs/hw/") and path.endswith(".md") else None
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except UnicodeDecodeError:
        continue
    for no, line in enumerate(lines, 1):
        if own is None:
            for pat, msg in OUTSIDE:
                if pat.search(line):
                    report(path, no, msg + "; cite docs/hw/FILE.md §N", line)
            if re.search(r"\bfact$", line.rstrip(), re.I) and no < len(lines) and SPLIT_SHEET.match(lines[no]):
                report(path, no, "cites a fact sheet (split over two lines); cite docs/hw/FILE.md §N", line)
            if path.endswith(".rs") and BARE_SECTION.search(line):
                report(path, no, "\"section N\": cite docs/hw/FILE.md §N", line)
        notes = [(m.start(), m.group(1)) for m in NOTE.finditer(line)]
        for _, note in notes:
            if sections_of(note) is None:
                report(path, no, f"docs/hw/{note} does not exist", line)
        for m in SECTION.finditer(line):
            before = [n for pos, n in notes if pos < m.start()]
            note = before[-1] if before else own
            if note is None:
                report(path, no, f"§{m.group(1)} without a docs/hw/FILE.md before it on the line", line)
                continue
            secs = sections_of(note)
            if secs is not None and m.group(1) not in secs:
                report(path, no, f"docs/hw/{note} has no section {m.group(1)}", line)

if bad:
    print(f"{bad} citation(s) do not resolve inside the repository (rule: docs/hw/README.md)")
    sys.exit(1)
print("citations: all resolve")
'
