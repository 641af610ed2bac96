#!/usr/bin/env python3
"""The shape the tree promises (issue: a house a fourth frontend can move
into), checked on the sources and the built library:

  calls    no cycle among core/'s files: who calls whom, from the symbols
           each object of libblkemu.a defines and uses (nm); nor among
           the files of any program or library built beside it (each
           frontend's, the tools'), from their objects;
  includes no cycle among core/'s headers;
  length   no function over 80 lines anywhere (tests/ and fuzz/ too).

usage: layering.py TOP LIBBLKEMU.A
Prints what it checked; exits 1 naming each cycle or long function.
"""
import glob
import os
import re
import subprocess
import sys

MAX_LINES = 80


def cycles(graph):
    """The strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def call_graph(archive, objects=None):
    """Who calls whom among an archive's members (or OBJECTS' files)."""
    text = subprocess.run(["nm", "-A"] + (objects or [archive]), check=True,
                          capture_output=True, text=True).stdout
    defines, uses = {}, {}
    for line in text.splitlines():
        # "lib.a:file.c.o:0000 T name" or "lib.a:file.c.o:  U name"
        head, _, rest = line.rpartition(".o:")
        member = os.path.basename(head.split(":")[-1]).removesuffix(".c")
        parts = rest.split()
        uses.setdefault(member, set())
        if len(parts) == 3 and parts[1] in "TDRB":
            defines[parts[2]] = member
        elif len(parts) == 2 and parts[0] == "U":
            uses[member].add(parts[1])
    return {m: {defines[s] for s in u if s in defines and defines[s] != m}
            for m, u in uses.items()}


def include_graph(top):
    graph = {}
    for h in glob.glob(os.path.join(top, "core", "*.h")):
        name = os.path.basename(h)
        incs = re.findall(r'^#include "([^"/]+\.h)"', open(h).read(), re.M)
        graph[name] = {i for i in incs
                       if os.path.exists(os.path.join(top, "core", i))}
    return graph


def long_functions(top):
    found = []
    # the frontends: every folder with a descriptor.c
    frontends = sorted(os.path.basename(os.path.dirname(d)) for d in
                       glob.glob(os.path.join(top, "*", "descriptor.c")))
    dirs = ["core", "backends", "common", "tools", "bench", "tests",
            "fuzz"] + frontends
    for d in dirs:
        for f in sorted(glob.glob(os.path.join(top, d, "*.c"))):
            name, start = None, None
            for i, line in enumerate(open(f).read().split("\n")):
                m = re.match(r"^([A-Za-z_]\w*) \(", line)
                if m:
                    name = m.group(1)
                if line == "{" and name:
                    start = i
                elif line == "}" and start is not None:
                    if i - start - 1 > MAX_LINES:
                        found.append((os.path.relpath(f, top), name,
                                      i - start - 1))
                    name, start = None, None
    return found


def program_cycles(archive):
    """Call cycles among the files of each program or library the build
    made beside libblkemu.a: every TARGET.p folder of objects."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(archive)))
    found, n = [], 0
    for d in sorted(glob.glob(os.path.join(build, "*", "*.p"))):
        objs = sorted(glob.glob(os.path.join(d, "*.o")))
        if len(objs) < 2:
            continue
        n += 1
        calls = call_graph(None, objs)
        for comp in cycles(calls):
            found.append((os.path.relpath(d, build), comp, calls))
    return found, n


def main():
    top, archive = sys.argv[1], sys.argv[2]
    bad = 0
    calls = call_graph(archive)
    if len(calls) < 20:
        print(f"FAIL: {archive}: only {len(calls)} objects read")
        return 1
    for comp in cycles(calls):
        bad += 1
        edges = "; ".join(f"{a} -> {', '.join(sorted(calls[a] & set(comp)))}"
                          for a in comp)
        print(f"FAIL: a call cycle in core/: {edges}")
    if not bad:
        print(f"ok: calls among {len(calls)} core objects: "
              f"{sum(len(v) for v in calls.values())} edges, no cycle")
    others, programs = program_cycles(archive)
    for where, comp, graph in others:
        bad += 1
        edges = "; ".join(f"{a} -> {', '.join(sorted(graph[a] & set(comp)))}"
                          for a in comp)
        print(f"FAIL: a call cycle in {where}: {edges}")
    if programs < 3:
        bad += 1
        print(f"FAIL: only {programs} programs of several files found "
              f"beside {archive}")
    elif not others:
        print(f"ok: calls among the files of {programs} other programs "
              f"and libraries: no cycle")
    incs = include_graph(top)
    inc_cycles = cycles(incs)
    for comp in inc_cycles:
        bad += 1
        print(f"FAIL: an include cycle in core/: {' '.join(comp)}")
    if not inc_cycles:
        print(f"ok: includes among {len(incs)} core headers: no cycle")
    longs = long_functions(top)
    for f, name, n in longs:
        bad += 1
        print(f"FAIL: {f}: {name} is {n} lines (at most {MAX_LINES})")
    if not longs:
        print(f"ok: no function over {MAX_LINES} lines, tests and fuzzers included")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
