#!/usr/bin/env python3
"""Prints, for each translation unit of a build, a key of everything
clang-tidy's verdict on it depends on, and its path:

    tidy_keys.py BUILD_DIR ROOT [DB_DIR] > keys

The key is a SHA-256 over clang-tidy's version, every .clang-tidy of the
tree, the unit's compile flags and its preprocessed text (the source with
every header it includes, Boost's and the C++ library's too). The same key
means clang-tidy reads exactly the same program with the same checks.
Paths are made relative to ROOT first (in the flags, __FILE__ through
-fmacro-prefix-map, and paths the build defines), so that a key holds in
any checkout.

A precompiled header (CMake's, for the tests: a forced -include of
cmake_pch.hxx) is taken out of each unit's flags first: clang-tidy cannot
read GCC's precompiled form, and reads each unit as its own includes make
it. With DB_DIR, the build's compile_commands.json without them is written
there, for clang-tidy -p.

A unity build's batches are read as the sources they include
(compile_db.py), each with the flags a build without batches gives it: the
keys are the same either way.
"""

import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys

import compile_db


def units(build, root):
    seen = set()
    for entry in compile_db.entries(build):
        path = entry["file"]
        if not path.startswith(root + "/") or "/build" in path[len(root):] or path in seen:
            continue
        seen.add(path)
        yield entry


def without_pch(args):
    out = []
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a == "-Winvalid-pch":
            continue
        if a == "-include" and i + 1 < len(args) and args[i + 1].endswith("/cmake_pch.hxx"):
            skip = True
            continue
        out.append(a)
    return out


def preprocess_args(entry, root):
    args = without_pch(shlex.split(entry["command"]))
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MT", "-MF", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-E", "-P", "-fmacro-prefix-map=" + root + "/="]


def debug_level_as_one(args):
    # How much debug information the compiler writes changes nothing clang-tidy
    # reads: every level keys as -g.
    return ["-g" if a in ("-g0", "-g1", "-g2", "-g3", "-ggdb", "-gline-tables-only") else a for a in args]


def key(entry, root, common):
    args = preprocess_args(entry, root)
    text = subprocess.run(args, cwd=entry["directory"], capture_output=True, check=True).stdout
    h = hashlib.sha256(common)
    h.update(" ".join(debug_level_as_one(args)).replace(root, ".").encode())
    h.update(b"\0")
    h.update(text.replace(root.encode(), b"."))  # paths the build defines (-DX="ROOT/build/...")
    return h.hexdigest()


def main():
    build, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    # Its first line: the rest names the machine's cpu, which says nothing of the checks.
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, check=True).stdout.split(b"\n")[0]
    configs = subprocess.run(["git", "-C", root, "ls-files", "*.clang-tidy", ".clang-tidy"], capture_output=True,
                             check=True, text=True).stdout.split()
    common = version
    for c in sorted(configs):
        common += c.encode() + b"\0" + open(os.path.join(root, c), "rb").read()
    entries = list(units(build, root))
    if len(sys.argv) > 3:
        db = [dict(e, command=shlex.join(without_pch(shlex.split(e["command"])))) for e in entries]
        with open(os.path.join(sys.argv[3], "compile_commands.json"), "w") as out:
            json.dump(db, out)
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        keys = list(pool.map(lambda e: key(e, root, common), entries))
    for k, e in zip(keys, entries):
        print(k, os.path.relpath(e["file"], root))


if __name__ == "__main__":
    main()
