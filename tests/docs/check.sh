#!/usr/bin/env bash
# Checks the project's documents (README.md, CONTRIBUTING.md, docs/*.md):
#   - README.md stays a front door: under 250 lines;
#   - each fenced block marked <!-- example: PATH --> on the line before its
#     fence is exactly the file PATH (a test builds and runs that file, so
#     the text people copy is the text that works);
#   - no document speaks of issue or stop numbers ("issue 12", "stop 26",
#     "#35"): they mean nothing to a reader of the project;
#   - every relative link [text](path) or [text](path#anchor) names a file
#     that exists, and an anchor names a heading of the target (GitHub's
#     slugs).
# Needs bash, coreutils and python3 only; prints what it checked.
#   tests/docs/check.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

files=(README.md CONTRIBUTING.md)
for f in docs/*.md; do [ -e "$f" ] && files+=("$f"); done
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "check.sh: $f is missing" >&2; exit 1; }
done

python3 - "$root" "${files[@]}" <<'PY'
import os
import re
import sys

root = sys.argv[1]
files = sys.argv[2:]
failures = []
checked = {"examples": 0, "links": 0, "anchors": 0}

FENCE = re.compile(r"^(```|~~~)")
MARKER = re.compile(r"^<!-- example: (\S+) -->\s*$")
# Issue and stop numbers, however written: "issue 12", "issues 12 and 15",
# "stop 26", "#35" (not "C#3", not an anchor "(#numbers)", not "&#35;").
NUMBERED = [
    (re.compile(r"\bissues?\s+#?\d+", re.I), "an issue number"),
    (re.compile(r"\bstops?\s+#?\d+", re.I), "a stop number"),
    (re.compile(r"(?<![\w&/])#\d+\b"), "an issue reference"),
]
LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`+[^`\n]*`+")


def read_lines(path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read().split("\n")


def slug(heading):
    # GitHub's: lower case, inline code's backticks and every character that
    # is not a letter, digit, space, hyphen or underscore dropped, spaces to
    # hyphens.
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen = {}
    out = set()
    in_fence = False
    for line in read_lines(path):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


for path in files:
    lines = read_lines(path)
    # Examples: the fenced block right after each marker, against its file.
    for i, line in enumerate(lines):
        m = MARKER.match(line)
        if not m:
            continue
        where = f"{path}:{i + 1}"
        target = m.group(1)
        if i + 1 >= len(lines) or not FENCE.match(lines[i + 1]):
            failures.append(f"{where}: the marker for {target} is not followed by a fenced block")
            continue
        fence = FENCE.match(lines[i + 1]).group(1)
        end = i + 2
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        if end >= len(lines):
            failures.append(f"{where}: the block for {target} is never closed")
            continue
        block = lines[i + 2:end]
        full = os.path.join(root, target)
        if not os.path.isfile(full):
            failures.append(f"{where}: {target} does not exist")
            continue
        with open(full, encoding="utf-8") as f:
            want = f.read()
        if want.endswith("\n"):
            want = want[:-1]
        want = want.split("\n")
        checked["examples"] += 1
        if block != want:
            diff_at = next((k for k, (a, b) in enumerate(zip(block, want)) if a != b), min(len(block), len(want)))
            failures.append(
                f"{where}: the block differs from {target} at its line {diff_at + 1}"
                f" (the document's {path}:{i + 3 + diff_at}; {len(block)} lines against {len(want)})")

    # Issue and stop numbers, anywhere in the text.
    for i, line in enumerate(lines):
        for pattern, what in NUMBERED:
            for m in pattern.finditer(line):
                failures.append(f"{path}:{i + 1}: mentions {what} ({m.group(0)!r})")

    # Relative links, outside code.
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for m in LINK.finditer(CODE_SPAN.sub("", line)):
            target = m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto:
            where = f"{path}:{i + 1}"
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            else:
                resolved = path
            checked["links"] += 1
            if not os.path.exists(os.path.join(root, resolved)):
                failures.append(f"{where}: the link to {target} names {resolved}, which does not exist")
                continue
            if anchor:
                checked["anchors"] += 1
                if not resolved.endswith(".md") or anchor not in anchors(resolved):
                    failures.append(f"{where}: the link to {target}: {resolved} has no heading #{anchor}")

readme = len(read_lines("README.md")) - (1 if read_lines("README.md")[-1] == "" else 0)
if readme >= 250:
    failures.append(f"README.md: {readme} lines; the front door must stay under 250 (move the rest to docs/)")

print(f"check.sh: README.md has {readme} lines (under 250)" if readme < 250 else f"check.sh: README.md has {readme} lines")
print(f"check.sh: {len(files)} documents: {' '.join(files)}")
print(f"check.sh: {checked['examples']} marked examples compared with their files")
print(f"check.sh: {checked['links']} relative links resolved, {checked['anchors']} of them to a heading")
print("check.sh: no issue or stop numbers" if not any("mentions" in f for f in failures) else "check.sh: issue or stop numbers found")
if failures:
    for f in failures:
        print(f"check.sh: {f}", file=sys.stderr)
    sys.exit(1)
print("check.sh: the documents are in order")
PY
