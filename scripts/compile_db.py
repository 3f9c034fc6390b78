"""A build's compile_commands.json, one entry per source file.

A unity build (MAYURA_UNITY) compiles a batch of sources as one unit,
build/.../unity_N_cxx.cxx, which #includes each of them; the database then
names the batch, not the sources. Whatever reads the sources one by one
(clang-tidy's keys, the layout's rules) reads them through entries(): each
batch becomes one entry per source it includes, with the batch's command
compiling that source in its place, which is the command a build without
batches runs for it.
"""

import json
import os
import re
import shlex

_INCLUDE = re.compile(r'^#include "([^"]+)"$')
# What CMakeLists.txt adds to a unity build's flags alone (a warning that
# only a batch can raise): not in the command a source compiled alone gets.
_BATCH_ONLY_FLAGS = {"-Wno-subobject-linkage"}


def _batch_sources(path):
    with open(path) as batch:
        for line in batch:
            m = _INCLUDE.match(line.strip())
            if m:
                yield m.group(1)


def _for_source(entry, batch, source):
    args = shlex.split(entry["command"])
    args = [source if a == batch else a for a in args if a not in _BATCH_ONLY_FLAGS]
    return dict(entry, file=source, command=shlex.join(args))


def entries(build):
    """Yields the build's entries, each batch's as its sources'."""
    for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
        path = entry["file"]
        if re.search(r"/unity_\d+_(cxx|c)\.(cxx|c)$", path):
            for source in _batch_sources(path):
                yield _for_source(entry, path, source)
        else:
            yield entry
