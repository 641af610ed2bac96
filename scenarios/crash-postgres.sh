#!/usr/bin/env bash
# A real durability bug found with blkemu's error rules: PostgreSQL's
# "fsyncgate" comes back with data_sync_retry = on.  A committed UPDATE
# sits in a dirty heap page; the checkpoint's write of that page fails
# once on the disk (error-op=write error-mode=once over the page's disk
# range, which blkemu-fiemap finds through ext4); Linux marks the page
# clean and reports the error to one fsync.
#   A. data_sync_retry = on: the checkpointer logs "could not fsync
#      file", the next checkpoint succeeds (nothing is dirty any more)
#      and moves the redo point past the UPDATE's WAL.  After a restart
#      (page cache dropped) the row is the OLD one: a committed update
#      silently gone.
#   B. data_sync_retry = off (the default since 2018): "PANIC: could not
#      fsync file"; crash recovery replays the WAL and the row is NEW.
# Nothing may read the page between the failure and the restart: a
# read re-dirties it (hint bits) and hides the loss.
#   blkemu-vm scenarios/crash-postgres.sh
# blkemu-vm: needs ublk_drv
# budget: 90 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe ext4 2>/dev/null || true
bin=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)
[ -x "$bin/postgres" ] && id postgres > /dev/null 2>&1 ||
  { echo "SKIP: PostgreSQL is not installed (tools/install-deps vm)"; exit 77; }
mnt=$work/fs
mkdir -p "$mnt"
dev=$(ublk_disk_start pg size=256M physical-block-size=4096) || exit 1
stats () { disk_stat pg "$1"; }
pgdata=$mnt/pgdata
as_pg () { runuser -u postgres -- "$@"; }
# sql STATEMENT: one statement through the server's socket directory.
sql () { as_pg "$bin/psql" -h "$work/sock" -d postgres -XAtq -c "$1"; }
pg_start () {
  as_pg "$bin/pg_ctl" -D "$pgdata" -l "$work/sock/pg.log" -w -t 120 start > /dev/null ||
    { tail -20 "$work/sock/pg.log"; exit 1; }
}

# setup: a fresh ext4 and cluster, a table whose row is checkpointed
# as OLD; the server is left stopped, the file system unmounted.
setup () {
  mkfs.ext4 -q -F -b 4096 "$dev" > "$work/mkfs.log" 2>&1 || { cat "$work/mkfs.log"; exit 1; }
  mount "$dev" "$mnt" || { echo "cannot mount ext4"; exit 1; }
  mkdir -p "$work/sock" "$pgdata"
  chown postgres: "$work/sock" "$pgdata" && chmod 700 "$pgdata"
  chmod o+x "$work"
  as_pg "$bin/initdb" -D "$pgdata" -A trust --no-sync > "$work/initdb.log" 2>&1 ||
    { cat "$work/initdb.log"; exit 1; }
  cat >> "$pgdata/postgresql.conf" << CONF
listen_addresses = ''
unix_socket_directories = '$work/sock'
checkpoint_timeout = 1h
max_wal_size = 1GB
shared_buffers = 16MB
CONF
  pg_start
  sql "CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'OLD'); CHECKPOINT;"
  as_pg "$bin/pg_ctl" -D "$pgdata" -m fast stop > /dev/null
  umount "$mnt"
}

# update_with RETRY: the server up with data_sync_retry = RETRY; the row
# UPDATEd to NEW (committed: its WAL is flushed), the heap page dirty.
update_with () {
  mount "$dev" "$mnt" || { echo "cannot mount ext4"; exit 1; }
  echo "data_sync_retry = $1" >> "$pgdata/postgresql.conf"
  pg_start
  sql "UPDATE t SET v = 'NEW' WHERE id = 1;"
}

# fail_the_page_once: the heap page's 8K on the disk fails its next
# write, once: blkemu-fiemap maps the relation file's first 8K through
# ext4 to the disk and prints the rule's range.
fail_the_page_once () {
  local rel range
  rel=$pgdata/$(sql "SELECT pg_relation_filepath('t');")
  range=$("$FIEMAP" --dev "$dev" --keys "$rel" 0 8192) || { echo "  blkemu-fiemap refused $rel"; exit 1; }
  echo "  the heap page: $rel, on the disk: $range"
  # shellcheck disable=SC2086
  ctl pg set error-op=write error-mode=once $range > /dev/null
}

# restart_and_read: PostgreSQL stops at once (as a crash would), the
# page cache is dropped (a remount), and a fresh server reads the row.
restart_and_read () {
  as_pg "$bin/pg_ctl" -D "$pgdata" -m immediate stop > /dev/null 2>&1
  umount "$mnt" && mount "$dev" "$mnt" || { echo "cannot remount"; exit 1; }
  pg_start
  sql "SELECT v FROM t WHERE id = 1;"
  as_pg "$bin/pg_ctl" -D "$pgdata" -m fast stop > /dev/null
  umount "$mnt"
}

setup
section "A. data_sync_retry = on: a failed checkpoint write, retried away"
update_with on
fail_the_page_once
errors=$(stats .faults.errors)
sql "CHECKPOINT;" 2> "$work/a-cp1.err"
sed 's/^/  psql: /' "$work/a-cp1.err"
check "the disk failed the page's write ($(( $(stats .faults.errors) - errors )) injected)" \
  "$(stats .faults.errors)" -gt "$errors"
grep -m1 "could not fsync" "$work/sock/pg.log" | sed 's/^/  postgres: /'
check "the checkpointer says it could not fsync" "$(grep -c "could not fsync file.*Input/output error" "$work/sock/pg.log")" -ge 1
sql "CHECKPOINT;" 2> "$work/a-cp2.err"
check "the next checkpoint succeeds (nothing is dirty any more)" ! -s "$work/a-cp2.err"
row=$(restart_and_read)
echo "  after the restart the row is '$row'"
check "the committed UPDATE is gone: the row is OLD" "$row" = OLD

section "B. data_sync_retry = off: the same failure is a PANIC, the WAL replays"
update_with off
fail_the_page_once
sql "CHECKPOINT;" > /dev/null 2>&1
sleep 1
grep -m1 "PANIC" "$work/sock/pg.log" | sed 's/^/  postgres: /'
check "PANIC: could not fsync file" "$(grep -c "PANIC:.*could not fsync file" "$work/sock/pg.log")" -ge 1
row=$(restart_and_read)
echo "  after the restart the row is '$row'"
check "crash recovery replayed the UPDATE: the row is NEW" "$row" = NEW

ublk_disk_stop pg
finish
