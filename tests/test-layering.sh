#!/usr/bin/env bash
# The tree keeps its shape: core/ has no call or include cycle, no other
# program the build makes has a call cycle among its files, and no
# function outside the tests is over 80 lines (tests/layering.py).
source "$(dirname "$0")/functions.sh"
requires nm --version
lib=$BLKEMU_BUILD/core/libblkemu.a
[ -f "$lib" ] || fail "$lib: not built"
python3 "$top/tests/layering.py" "$top" "$lib"
