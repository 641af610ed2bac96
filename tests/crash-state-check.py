#!/usr/bin/env python3
"""Check a crash state against the block layer's promises.

    crash-state-check.py IMAGE HISTORY TRACE MODE UNIT

IMAGE is the disk after crash and power-on; HISTORY lists the writes in
the order they completed, one per line: "OFFSET LENGTH SEED KIND" with
KIND flushed (completed before a completed flush), fua, or cached (since
the last flush).  The data of each write is nbd-io's pattern: every
8-byte word is its offset xor SEED * 0x9E3779B97F4A7C15, so each word
says which write put it there.  TRACE is the disk's trace, whose
"# crash-write OFFSET LENGTH FATE" lines say what the crash did with each
cached write.

Checked, for every 512-byte sector:
  - it holds exactly one version (no mixed words), and a legal one: the
    newest flushed or FUA'd write there, or a cached write newer than it;
  - it holds exactly the version the fates imply: the newest persisted
    write covering it (lost writes never appear); for a torn write, each
    UNIT-aligned unit is all of it or none of it (a torn unit hidden
    under later surviving writes where it shows allows either);
and lose-all keeps no cached write, subset tears none.
Prints a line of counts; exits 1 with the first violation.
"""
import sys

K = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
SECTOR = 512


def version_of(data, off):
    """The seed that wrote the sector at OFF, 0 for zeros, None if mixed."""
    seeds = set()
    for i in range(0, SECTOR, 8):
        w = int.from_bytes(data[off + i:off + i + 8], "little")
        seeds.add(w)
    if seeds == {0}:
        return 0
    found = set()
    for i in range(0, SECTOR, 8):
        w = int.from_bytes(data[off + i:off + i + 8], "little")
        found.add((w ^ (off + i)) & MASK)
    if len(found) != 1:
        return None
    v = found.pop()
    # SEED * K = v  (mod 2^64); K is odd, so invertible.
    return (v * pow(K, -1, 1 << 64)) & MASK


def main():
    image, history, trace, mode, unit = sys.argv[1:6]
    unit = int(unit)
    data = open(image, "rb").read()
    writes = []
    for line in open(history):
        off, length, seed, kind = line.split()
        writes.append((int(off), int(length), int(seed), kind))
    fates = []
    for line in open(trace):
        if line.startswith("# crash-write "):
            _, _, off, length, fate = line.split()
            fates.append((int(off), int(length), fate))
    cached = [w for w in writes if w[3] == "cached"]
    # The trace lists cached writes newest first.
    fates.reverse()
    if mode == "lose-all" and any(f[2] != "lost" for f in fates):
        sys.exit("FAIL: lose-all kept a write")
    if len(fates) != len(cached):
        sys.exit(f"FAIL: {len(cached)} cached writes, {len(fates)} fates traced")
    fate_of = {}
    for w, f in zip(cached, fates):
        if (w[0], w[1]) != (f[0], f[1]):
            sys.exit(f"FAIL: fate {f} does not match write {w}")
        fate_of[id(w)] = f[2]
    if mode == "subset" and any(f == "torn" for f in fate_of.values()):
        sys.exit("FAIL: subset tore a write")

    counts = {"persisted": 0, "lost": 0, "torn": 0}
    for f in fate_of.values():
        counts[f] += 1
    torn_units = {"kept": 0, "lost": 0}
    straddlers_cut = 0

    # Expected version per sector: replay in order; a torn write's units
    # are decided by what the image shows (each unit all or nothing).
    nsect = len(data) // SECTOR
    durable = [0] * nsect        # newest flushed/FUA version
    legal = [set([0]) for _ in range(nsect)]
    expect = [{0} for _ in range(nsect)]   # what the fates allow
    # Sectors a write may show: those no later surviving write covers.
    later_cover = [set() for _ in writes]
    covered = set()
    for i in range(len(writes) - 1, -1, -1):
        later_cover[i] = set(covered)
        off, length, seed, kind = writes[i]
        if fate_of.get(id(writes[i]), "persisted") != "lost":
            covered.update(range(off // SECTOR, (off + length) // SECTOR))
    for i, w in enumerate(writes):
        off, length, seed, kind = w
        first, last = off // SECTOR, (off + length) // SECTOR
        fate = fate_of.get(id(w), "persisted")
        for s in range(first, last):
            if kind != "cached":
                durable[s] = seed
                legal[s] = {seed}
            else:
                legal[s].add(seed)
        if fate == "persisted":
            for s in range(first, last):
                expect[s] = {seed}
        elif fate == "torn":
            spu = unit // SECTOR
            kept_before = torn_units["kept"]
            lost_before = torn_units["lost"]
            for u in range(off // unit, (off + length + unit - 1) // unit):
                lo, hi = max(first, u * spu), min(last, (u + 1) * spu)
                # The unit landed if its sectors hold this write, or a
                # newer persisted write covers them: decided below.
                held = [version_of(data, s * SECTOR) for s in range(lo, hi)
                        if s not in later_cover[i]]
                if not held:
                    # Overwritten by later survivors where it shows:
                    # kept or not, the fates cannot say.
                    for s in range(lo, hi):
                        expect[s] = expect[s] | {seed}
                    continue
                if all(v == seed for v in held):
                    torn_units["kept"] += 1
                    for s in range(lo, hi):
                        expect[s] = {seed}
                elif any(v == seed for v in held):
                    sys.exit(f"FAIL: write {w} torn inside unit {u}: {held}")
                else:
                    torn_units["lost"] += 1
            # A write smaller than the unit that crosses a boundary may be
            # cut there (the aligned-unit rule): count those seen cut.
            if (length < unit and off // unit != (off + length - 1) // unit
                    and torn_units["kept"] > kept_before
                    and torn_units["lost"] > lost_before):
                straddlers_cut += 1
        # lost: expect keeps the older version
    for s in range(nsect):
        v = version_of(data, s * SECTOR)
        if v is None:
            sys.exit(f"FAIL: sector {s} holds a mix of versions")
        if v not in legal[s]:
            sys.exit(f"FAIL: sector {s} holds version {v}, legal {sorted(legal[s])}")
        if v not in expect[s]:
            sys.exit(f"FAIL: sector {s} holds version {v}, the fates say "
                     f"{sorted(expect[s])}")
    print(f"ok: {mode}: {len(cached)} cached writes: {counts['persisted']} "
          f"persisted, {counts['lost']} lost, {counts['torn']} torn "
          f"({torn_units['kept']} units kept, {torn_units['lost']} lost; "
          f"{straddlers_cut} sub-unit writes cut at a unit boundary, none "
          f"inside a unit); "
          f"{nsect} sectors each hold their one legal version")


main()
