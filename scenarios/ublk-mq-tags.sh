#!/usr/bin/env bash
# Seed 003 through real blk-mq hardware queues: md raid0 (512K chunk) over
# four SAS SSDs served by blkemu-ublk, the seed's own fio job (4k
# sequential reads, iodepth 128), 1 and 2 jobs, with one hardware queue
# and with one per CPU.  The HBA's tags are shared: 64 per disk, so two
# queues get 32 each (what splitting can_queue over nr_hw_queues did).
# What the thread found, and this shows: one job on one CPU reaches only
# its own queue's tags (tag starvation), and only a single-queue device
# gets mq-deadline, whose merging of sequential 4k reads helps.  Jobs are
# pinned one per CPU, as fio's numjobs would spread them on the seed's box.
#   blkemu-vm --kernel 6.12 scenarios/ublk-mq-tags.sh
# With more CPUs (blkemu-vm --cpus 8) the sweep goes on to that many
# queues and 1, 2, 4 ... CPUs' worth of jobs, where the seed's lines cross
# (many queues win from 4 jobs on); the table says where they cross here,
# or that they do not.
# Environment: SLOWDOWN (default 400: the SSDs' clock runs that much
# slower so the TCG guest keeps up; IOPS are shown x SLOWDOWN), RUNTIME
# per cell in s (3).  Skips (77) without ublk_drv.
# blkemu-vm: needs ublk_drv
# budget: 80 s
source "${BLKEMU_SCRIPT_DIR:-$(dirname "$0")}/lib.sh" || exit 2
ublk_require
modprobe raid0 2>/dev/null || true
slowdown=${SLOWDOWN:-400}
runtime=${RUNTIME:-3}
tags=64
cpus=$(nproc)
[ "$cpus" -ge 2 ] || { echo "SKIP: one CPU: no second hardware queue to compare"; exit 77; }
# One queue per CPU, as the seed's driver had, up to 8 (64 tags / 8).
nq=$(( cpus > 8 ? 8 : cpus ))
jobs_list=1; j=2
while [ $j -le $nq ]; do jobs_list="$jobs_list $j"; j=$(( j * 2 )); done

declare -A iops avg qdmax sched
run_config () {
  local queues=$1 depth=$(( tags / $1 )) i j
  section "$queues hardware queue(s) of $depth tags per disk"
  rm -f "$work/ready"
  local specs=()
  for i in 0 1 2 3; do
    specs+=(--disk "name=ssd$i,profile=sas-ssd,size=1G,queue-depth=$depth,slowdown=$slowdown,control=$work/ssd$i.ctl")
  done
  "$UBLK" --queues "$queues" --ready-file "$work/ready" "${specs[@]}" > "$work/ublk.log" 2>&1 &
  local pid=$!
  for i in $(seq 300); do [ -e "$work/ready" ] && break; sleep 0.1; done
  [ -e "$work/ready" ] || { cat "$work/ublk.log"; echo "blkemu-ublk did not start"; exit 1; }
  local devs; devs=$(awk '{ print $2 }' "$work/ready")
  local b0; b0=$(awk 'NR == 1 { sub("/dev/", "", $2); print $2 }' "$work/ready")
  # shellcheck disable=SC2086
  md_create /dev/md0 0 $devs -- --chunk=512
  sched[$queues]=$(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$b0/queue/scheduler")
  check "$queues queue(s): $(ls "/sys/block/$b0/mq" | wc -l) hardware queue(s) of $(cat "/sys/block/$b0/mq/0/nr_tags") tags" \
    "$(ls "/sys/block/$b0/mq" | wc -l)/$(cat "/sys/block/$b0/mq/0/nr_tags")" = "$queues/$depth"
  for j in $jobs_list; do
    for i in 0 1 2 3; do ctl "ssd$i" reset; done
    local v
    v=$(fio --name=seq --filename=/dev/md0 --ioengine=libaio --direct=1 --rw=read \
          --bs=4k --iodepth=128 --numjobs="$j" --runtime="$runtime" --time_based \
          --cpus_allowed="0-$(( j - 1 ))" --cpus_allowed_policy=split \
          --group_reporting --output-format=json 2>/dev/null | jq -r '.jobs[0].read.iops')
    iops[$queues,$j]=$(awk -v v="$v" -v k="$slowdown" 'BEGIN { printf "%.0f", v * k }')
    local req=0 bytes=0 m=0
    for i in 0 1 2 3; do
      req=$(( req + $(disk_stat "ssd$i" .ops.read.requests) ))
      bytes=$(( bytes + $(disk_stat "ssd$i" .ops.read.bytes) ))
      local q; q=$(disk_stat "ssd$i" .queue_depth.max)
      [ "$q" -gt "$m" ] && m=$q
    done
    avg[$queues,$j]=$(awk -v b="$bytes" -v r="$req" 'BEGIN { printf "%.1f", r ? b / r / 1024 : 0 }')
    qdmax[$queues,$j]=$m
  done
  mdadm --stop /dev/md0 > /dev/null 2>&1
  kill -TERM $pid
  local rc=0
  wait $pid || rc=$?
  [ $rc -eq 0 ] || sed 's/^/  /' "$work/ublk.log"
  check "blkemu-ublk --queues $queues stopped cleanly (exit $rc)" $rc -eq 0
}

run_config 1
run_config $nq

section "seed 003's job on md raid0 of four sas-ssd (IOPS x $slowdown)"
printf '  %-22s %-12s %6s %12s %14s %12s\n' "hardware queues" scheduler jobs IOPS "avg req KiB" "max in disk"
for q in 1 $nq; do
  for j in $jobs_list; do
    printf '  %-22s %-12s %6s %12s %14s %12s\n' "$q x $(( tags / q )) tags" "${sched[$q]}" "$j" \
      "${iops[$q,$j]}" "${avg[$q,$j]}" "${qdmax[$q,$j]}"
  done
done
echo "  seed (24 CPUs, 1 vs 24 queues): 1 job 363975 vs 162463, 2 jobs 528389 vs 323142,"
echo "  4 jobs 479569 vs 537309 IOPS"

check "one queue gets mq-deadline (${sched[1]}), several get none (${sched[$nq]})" \
  "${sched[1]}/${sched[$nq]}" = "mq-deadline/none"
check "1 job, one queue: requests reach the disk merged (avg ${avg[1,1]} KiB > 4)" \
  "$(awk -v a="${avg[1,1]}" 'BEGIN { print (a > 4.5) }')" -eq 1
check "1 job, $nq queues: 4 KiB requests, unmerged (avg ${avg[$nq,1]} KiB)" \
  "$(awk -v a="${avg[$nq,1]}" 'BEGIN { print (a < 4.5) }')" -eq 1
check "1 job, $nq queues: at most its own queue's $(( tags / nq )) tags in a disk (${qdmax[$nq,1]})" \
  "${qdmax[$nq,1]}" -le $(( tags / nq ))
check "1 job: one queue beats $nq (${iops[1,1]} > ${iops[$nq,1]} IOPS), as in the seed" \
  "${iops[1,1]}" -gt "${iops[$nq,1]}"
check "2 jobs: one queue still ahead (${iops[1,2]} > ${iops[$nq,2]}), as the seed's 528389 vs 323142" \
  "${iops[1,2]}" -gt "${iops[$nq,2]}"
cross=
for j in $jobs_list; do
  [ -z "$cross" ] && [ "${iops[$nq,$j]}" -gt "${iops[1,$j]}" ] && cross=$j
done
if [ -n "$cross" ]; then
  echo "  the lines cross at $cross jobs: $nq queues ${iops[$nq,$cross]} > 1 queue ${iops[1,$cross]} IOPS (the seed: at 4 jobs)"
else
  echo "  no crossover up to $nq jobs on $cpus vCPUs: 1 queue ahead at every count (the seed's, at 4 jobs on 24 CPUs, needs CPUs that really run in parallel; these $cpus share the host's cores)"
fi
finish
