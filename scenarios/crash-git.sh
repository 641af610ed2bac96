#!/usr/bin/env bash
# A real durability bug found with crash states: git 2.39's default
# core.fsync does not fsync loose objects, so a commit a user saw
# succeed on ext4 (defaults: data=ordered, delayed allocation) can come
# back after a power cut with its objects empty.
#   A. git add and commit with the defaults; the journal commits (ext4
#      commits every second here: the new files and their sizes) but the
#      objects' data is still only in the page cache; the power goes.
#      In the crash states (lose-all, subset) git fsck --full reports
#      "object file ... is empty", HEAD's commit among them.
#   B. the same with git -c core.fsync=all: every state is clean.
# The oracle is git's own (git fsck --full); each state is a crash view,
# the disk itself never changes.
#   blkemu-vm scenarios/crash-git.sh
# blkemu-vm: needs ublk_drv
# budget: 60 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe ext4 2>/dev/null || true
command -v git > /dev/null || { echo "SKIP: git is not installed (tools/install-deps vm)"; exit 77; }
# Subset states: 8, or 1 at quick scale (CI's suite).  The objects' data
# never reached the disk, so every state shows the bug alike (measured:
# lose-all and 3 of 3 subset states).
states=8
[ "${BLKEMU_SCENARIO_SCALE:-full}" = quick ] && states=1
crash_disk g 128M
stats () { disk_stat g "$1"; }
export GIT_AUTHOR_NAME=blkemu GIT_AUTHOR_EMAIL=blkemu@localhost
export GIT_COMMITTER_NAME=blkemu GIT_COMMITTER_EMAIL=blkemu@localhost
export GIT_CONFIG_NOSYSTEM=1 HOME=$work

# commit_then_cut GIT-OPTION...: a fresh ext4 with a repository holding
# one synced commit; 20 files committed with GIT-OPTIONs; past one
# journal commit, the power goes with the unflushed writes kept.
# Prints the new commit's id.
commit_then_cut () {
  # commit=1: ext4 commits its journal every second (5 s by default),
  # which the cut waits past; the data's writeback stays at 30 s.
  fresh_ext4 g "$dev" "$mnt" commit=1
  (
    cd "$mnt" && git init -q repo && cd repo &&
      echo base > base && git "$@" add base && git "$@" commit -q -m base &&
      sync -f . &&
      for i in $(seq 20); do head -c $((2000 + i * 300)) /dev/urandom | base64 > "file$i"; done &&
      git "$@" add . && git "$@" commit -q -m "twenty files" && git rev-parse HEAD
  ) || { echo "the commit failed" >&2; exit 1; }
  # Past a journal commit: the new inodes and their sizes reach the
  # disk (and a flush); delayed allocation holds the data.
  sleep 3
  cut_power g "$dev" "$mnt"
}
fsck_check="mount -t ext4 {dev} $chk && { cd $chk/repo && git fsck --full --no-dangling; r=\$?; cd /; umount $chk; exit \$r; }"

# explore NAME MODE N: N states of MODE, git fsck on each.
explore () { crash_states "$1" g "$2" "$3" 100 "$fsck_check"; }

section "A. git commit with the defaults (core.fsync: no loose objects), then a power cut"
flushes=$(stats .ops.flush.requests)
head=$(commit_then_cut)
echo "  commit $head; $(stats .write_cache.entries) writes unflushed at the cut"
check "the commit succeeded (${head:-none})" -n "$head"
# The objects' data never left the page cache: what the disk had, the
# journal's commit flushed; the loss is the same in every state.
check "ext4's journal commits flushed the disk before the cut ($(( $(stats .ops.flush.requests) - flushes )) flushes)" \
  "$(stats .ops.flush.requests)" -gt "$flushes"
explore a-lose lose-all 1
explore a-subset subset "$states"
cat "$work"/a-lose.logs/* 2> /dev/null | grep -m2 "is empty" | sed 's/^/  git fsck: /'
tail -1 "$work/a-subset.out" | sed 's/^/  /'
check "lose-all: git fsck finds empty object files ($(cat "$work"/a-lose.logs/* 2> /dev/null | grep -c "is empty"))" \
  "$(cat "$work"/a-lose.logs/* 2> /dev/null | grep -c "object file .* is empty")" -ge 1
passed=$(states_passed a-subset)
failed=$((states - ${passed:-$states}))
check "subset: $failed of $states states fail git fsck" "$failed" -ge 1
check "HEAD's commit object is among them" \
  "$(cat "$work"/a-lose.logs/* 2> /dev/null | grep -c "objects/${head:0:2}/${head:2} is empty")" -ge 1

section "B. the same with git -c core.fsync=all"
head=$(commit_then_cut -c core.fsync=all)
echo "  commit $head; $(stats .write_cache.entries) writes unflushed at the cut"
explore b-lose lose-all 1
explore b-subset subset "$states"
tail -1 "$work/b-subset.out" | sed 's/^/  /'
cat "$work"/b-*.logs/* 2> /dev/null | head -5 | sed 's/^/  git fsck: /'
check "lose-all: git fsck clean" "$(grep -c "1 passed, 0 failed" "$work/b-lose.out")" -eq 1
check "subset: all $states states clean" \
  "$(grep -c "$states passed, 0 failed" "$work/b-subset.out")" -eq 1

ctl g power-on > /dev/null
ublk_disk_stop g
finish
