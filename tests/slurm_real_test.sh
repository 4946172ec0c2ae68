#!/usr/bin/env bash
# Sweeps on a real Slurm (docs/sweeps.md): munged, slurmctld and slurmd from Debian's munge and
# slurm-wlm on localhost, with a generated slurm.conf, in a scratch directory, as root. Then
#  (a) a sweep of 16 jobs as one array job through scripts/slurm_sweep.sh, merged: the bytes of the
#      same sweep run locally with --jobs 2;
#  (b) a planted bad layer (a truncated operand file under --data): its tasks say their array index,
#      the merge names those indices, and re-submitting only them completes the sweep;
#  (c) scancel of a running array: no job file is partial, no temporary is left, and the merge names
#      the missing jobs.
# Everything runs on loopback, and every daemon is stopped on every exit (failure, signal, and the
# script's own deadline, which comes before CTest's TIMEOUT).
#
#   slurm_real_test.sh SYSTOLIC_RUN SLURM_SWEEP_SH
# Exit 0 passed, 1 failed, 77 skipped (no Slurm or munge, or not root; outside CI only).
set -euo pipefail

run="${1:?usage: slurm_real_test.sh SYSTOLIC_RUN SLURM_SWEEP_SH}"
sweep_script="${2:?usage: slurm_real_test.sh SYSTOLIC_RUN SLURM_SWEEP_SH}"
deadline="${SLURM_REAL_TEST_DEADLINE:-240}"  # seconds; CTest's TIMEOUT is longer

say() { echo "slurm_real_test: $*"; }
fail() {
  echo "slurm_real_test: FAIL: $*" >&2
  exit 1
}
# A missing prerequisite skips the test on a developer's machine, and fails it in CI, where
# scripts/setup has installed everything.
skip() {
  if [ -n "${CI:-}" ]; then fail "$* (CI is set: scripts/setup installs slurm-wlm and munge)"; fi
  echo "slurm_real_test: SKIPPED: $* (Debian packages slurm-wlm and munge; scripts/setup installs them)"
  exit 77
}
for tool in munged mungekey slurmctld slurmd sbatch squeue scancel sinfo setpriv python3; do
  command -v "$tool" > /dev/null || skip "$tool not found"
done
[ "$(id -u)" = 0 ] || skip "the daemons run as root here, and this is uid $(id -u)"

S="$(mktemp -d "${TMPDIR:-/tmp}/slurm_real_test.XXXXXX")"
# munged refuses a socket whose directory others cannot traverse.
chmod 0755 "$S"
pids=()      # the daemons, in the order they started
watchdog=""

# Stops one daemon by its pid: SIGTERM, then SIGKILL if it has not gone after 20 s; then reaps it.
stop_pid() {
  local pid="$1" i
  kill -TERM "$pid" 2> /dev/null || return 0
  for i in $(seq 100); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.2
  done
  kill -KILL "$pid" 2> /dev/null || true
  wait "$pid" 2> /dev/null || true
}

# Every exit: cancel what is queued and wait for it, stop the daemons (newest first), then remove
# the scratch directory.
cleanup() {
  local status=$? i
  set +e
  trap - EXIT TERM INT HUP
  [ -n "$watchdog" ] && kill "$watchdog" 2> /dev/null && wait "$watchdog" 2> /dev/null
  if [ "${#pids[@]}" -ge 3 ]; then
    timeout 20 scancel --quiet --user=root > /dev/null 2>&1
    for i in $(seq 100); do
      [ -z "$(timeout 10 squeue -h -o %i 2> /dev/null)" ] && break
      sleep 0.2
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    stop_pid "${pids[i]}"
  done
  if [ "$status" -ne 0 ] && [ "$status" -ne 77 ]; then
    for log in slurmctld.log slurmd.log munged.log; do
      [ -f "$S/$log" ] && { echo "--- last lines of $log"; tail -n 15 "$S/$log"; } >&2
    done
  fi
  rm -rf "$S"
  exit "$status"
}
trap cleanup EXIT
trap 'echo "slurm_real_test: FAIL: stopped by a signal" >&2; exit 1' TERM INT HUP
# The script's own deadline: a SIGTERM to itself, which runs the cleanup. The watchdog ends with
# the script even when the script is killed outright, and its sleeps do not hold the output pipe
# (CTest waits for every holder).
(
  for ((t = 0; t < deadline; t++)); do
    sleep 1 > /dev/null 2>&1
    kill -0 $$ 2> /dev/null || exit 0
  done
  echo "slurm_real_test: FAIL: still running after $deadline s" >&2
  kill -TERM $$
) &
watchdog=$!

# Polls a command until it succeeds, at most $1 times 0.2 s; fails with $2 otherwise.
wait_for() {
  local tries="$1" what="$2" i
  shift 2
  for i in $(seq "$tries"); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  fail "$what"
}

# --- munge, with its own key, socket, pid file, log and seed.
mungekey --create --keyfile="$S/munge.key"
# setpriv --pdeathsig: a daemon dies with this script even when it is killed outright.
setpriv --pdeathsig KILL munged --foreground --key-file="$S/munge.key" --socket="$S/munge.socket" \
  --pid-file="$S/munged.pid" --log-file="$S/munged.log" --seed-file="$S/munged.seed" > /dev/null 2>&1 &
pids+=($!)
wait_for 100 "munged did not create its socket" test -S "$S/munge.socket"

# --- slurm.conf: this machine as one node, two free loopback ports, everything under $S.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
cpus="$(nproc)"
memory_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 9 / 10 / 1024))
mkdir -p "$S/state" "$S/spool"
: > "$S/plugstack.conf"
cat > "$S/slurm.conf" << EOF
ClusterName=systolic-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
CommunicationParameters=NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge.socket
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
PlugStackConfig=$S/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$S/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=5
SchedulerParameters=batch_sched_delay=0
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=sweep Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$S/slurm.conf"
setpriv --pdeathsig KILL slurmctld -D -i -f "$SLURM_CONF" > "$S/slurmctld.out" 2>&1 &
pids+=($!)
setpriv --pdeathsig KILL slurmd -D -N localhost -f "$SLURM_CONF" > "$S/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { [ "$(timeout 10 sinfo -h -n localhost -o %T 2> /dev/null)" = idle ]; }
wait_for 300 "the node did not become idle (sinfo: $(timeout 10 sinfo -h -o '%T %E' 2>&1))" node_idle
say "slurmctld and slurmd up on 127.0.0.1:$ctld_port and :$slurmd_port, $cpus CPUs"

# Whether a process's arguments mention $1; with builtins only, so that no process of this
# script's own matches.
mentioned() {
  local p args
  for p in /proc/[0-9]*; do
    mapfile -d '' args 2> /dev/null < "$p/cmdline" || continue
    [[ "${args[*]-}" == *"$1"* ]] && return 0
  done
  return 1
}
# Submits an array as docs/sweeps.md tells a user, from the directory its output files go to;
# prints the job ID.
submit() {
  local dir="$1" array="$2" id
  id="$(cd "$dir" && timeout 30 sbatch --parsable --array="$array" "$sweep_script" jobs.txt)" ||
    fail "sbatch --array=$array refused the sweep"
  echo "${id%%;*}"
}
# Waits until the array has left the queue (at most 120 s).
queue_empty() { [ -z "$(timeout 10 squeue -h -j "$1" -o %i 2> /dev/null)" ]; }
wait_done() { wait_for 600 "array job $1 still in the queue after 120 s" queue_empty "$1"; }
# The four reports of two directories, byte for byte.
same_reports() {
  local f
  for f in COMPUTE_REPORT.csv BANDWIDTH_REPORT.csv TRAFFIC_REPORT.csv report.json; do
    [ -s "$1/$f" ] || fail "$1/$f is missing or empty"
    cmp "$1/$f" "$2/$f" || fail "$1/$f differs from $2/$f"
  done
}
# Writes a .npy of int8 operands (numpy's format 1.0) without numpy: rows x cols from a seed.
write_npy() {
  python3 - "$@" << 'EOF'
import random, struct, sys
path, rows, cols, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
header = "{'descr': '|i1', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
header += " " * (63 - (10 + len(header)) % 64) + "\n"
rng = random.Random(seed)
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(bytes(rng.randrange(256) for _ in range(rows * cols)))
EOF
}

# Four tiny layers (GEMMs and a convolution) on two arrays in two dataflows: 16 jobs.
printf 'Layer, M, N, K,\nA, 6, 5, 10,\nB, 9, 3, 1,\nC, 4, 4, 4,\nD, 7, 2, 5,\n' > "$S/t.csv"
sweep=(--topology "$S/t.csv" --array "2,3" --dataflow "os,ws")

# --- (a) the sweep as an array job equals the sweep run locally.
mkdir "$S/a"
"$run" "${sweep[@]}" --emit-jobs --out "$S/a/jobs" > "$S/a/jobs.txt"
n="$(wc -l < "$S/a/jobs.txt")"
[ "$n" -ge 16 ] || fail "--emit-jobs gave $n jobs, not 16"
job="$(submit "$S/a" "1-$n")"
wait_done "$job"
for i in $(seq "$n"); do
  [ -f "$S/a/slurm-${job}_$i.out" ] || fail "array task $i of job $job left no output file: it did not run under Slurm"
done
"$run" --merge "$S/a/jobs" --out "$S/a/merged" > /dev/null || fail "the merge of array job $job failed"
"$run" "${sweep[@]}" --jobs 2 --out "$S/a/local" > /dev/null
same_reports "$S/a/merged" "$S/a/local"
say "(a) $n array tasks merged into the reports of --jobs 2, byte for byte"

# --- (b) a planted bad layer: C's operand file is truncated, so its four jobs cannot run.
mkdir -p "$S/b/data"
seed=1
while IFS=', ' read -r name m n_ k _; do
  write_npy "$S/b/data/$name.a.npy" "$m" "$k" $((seed++))
  write_npy "$S/b/data/$name.b.npy" "$k" "$n_" $((seed++))
done < <(tail -n +2 "$S/t.csv")
data_sweep=("${sweep[@]}" --data "$S/b/data")
"$run" "${data_sweep[@]}" --emit-jobs --out "$S/b/jobs" > "$S/b/jobs.txt"
mv "$S/b/data/C.a.npy" "$S/b/C.a.npy"
head -c 20 "$S/b/C.a.npy" > "$S/b/data/C.a.npy"
job="$(submit "$S/b" "1-$n")"
wait_done "$job"
for i in $(seq "$n"); do
  out="$S/b/slurm-${job}_$i.out"
  [ -f "$out" ] || fail "array task $i of job $job left no output file"
  if [ $(((i - 1) % 4)) -eq 2 ]; then
    grep -q "^slurm_sweep.sh: array task $i (job [0-9x]*:[a-z]*:2) could not run (exit 2); after fixing the cause, sbatch --array=$i runs it again\$" "$out" ||
      fail "task $i (layer C) does not say its array index: $(cat "$out")"
  else
    [ ! -s "$out" ] || fail "task $i wrote: $(cat "$out")"
  fi
done
# Slurm's own record (jobcomp/filetxt; sacct on a cluster with accounting): those tasks FAILED, exit 2.
failed="$(sed -n "s/.* JobState=FAILED .* ArrayJobId=$job ArrayTaskId=\([0-9]*\) .* ExitCode=\([0-9:]*\) *\$/\1 \2/p" \
  "$S/jobcomp.log" | sort -n | tr '\n' ,)"
[ "$failed" = "3 2:0,7 2:0,11 2:0,15 2:0," ] || fail "Slurm records as FAILED: '$failed', not tasks 3,7,11,15 with exit 2"
status=0
message="$("$run" --merge "$S/b/jobs" --out "$S/b/merged" 2>&1 > /dev/null)" || status=$?
[ "$status" -eq 2 ] || fail "the merge of an incomplete sweep exited $status"
[ "$message" = "systolic-run: error: $S/b/jobs: no record for layer 2 on 2x2 in os and 3 more jobs (12 of 16 jobs present); run lines 3,7,11,15 of the --emit-jobs output again (with Slurm, sbatch --array=3,7,11,15)" ] ||
  fail "the merge does not name the failed array indices: $message"
[ ! -e "$S/b/merged" ] || fail "the refused merge left $S/b/merged behind"
# Fixed, and only the failed indices again, as the merge says.
mv "$S/b/C.a.npy" "$S/b/data/C.a.npy"
again="${message##*sbatch --array=}"
again="${again%)}"
job="$(submit "$S/b" "$again")"
wait_done "$job"
for i in 3 7 11 15; do
  [ -f "$S/b/slurm-${job}_$i.out" ] || fail "re-submitted task $i did not run"
done
outputs=("$S/b/slurm-${job}_"*)
[ "${#outputs[@]}" -eq 4 ] || fail "the re-submission ran ${#outputs[@]} tasks, not the four that failed"
"$run" --merge "$S/b/jobs" --out "$S/b/merged" > /dev/null || fail "the merge after re-submitting failed"
"$run" "${data_sweep[@]}" --jobs 2 --out "$S/b/local" > /dev/null
same_reports "$S/b/merged" "$S/b/local"
say "(b) the bad layer's tasks 3,7,11,15 named by the tasks and the merge; re-submitted alone, they complete the sweep"

# --- (c) scancel of a running array: a layer that runs for minutes, cancelled while it runs.
mkdir "$S/c"
printf 'Layer, M, N, K,\nA, 6, 5, 10,\nBig, 1024, 1024, 1024,\nC, 4, 4, 4,\n' > "$S/c.csv"
"$run" --topology "$S/c.csv" --array 2,3 --emit-jobs --out "$S/c/jobs" > "$S/c/jobs.txt"
job="$(submit "$S/c" "1-6")"
# The big layer's process on 2x2 (line 2) is running: its --job-out names it.
big="$S/c/jobs/job-2x2-os-0001.json"
wait_for 300 "the big layer's task did not start" mentioned "$big"
# Task 1 (the small first layer, beside it on the other CPU) has written its record: so the merge
# below has records to name the missing tasks from, however soon the cancel follows the start.
wait_for 300 "the first layer's task wrote no record" test -e "$S/c/jobs/job-2x2-os-0000.json"
timeout 30 scancel "$job" || fail "scancel $job failed"
wait_done "$job"
# No process of the array is left, and only whole job files are in the directory.
if mentioned "$S/c/jobs"; then fail "a job process outlived scancel"; fi
[ ! -e "$big" ] || fail "the cancelled layer wrote $big"
for f in "$S/c/jobs"/* "$S/c/jobs"/.[!.]*; do
  [ -e "$f" ] || continue
  case "${f##*/}" in
    job-*.json) python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" 2> /dev/null ||
      fail "scancel left a partial job file, ${f##*/}" ;;
    *) fail "scancel left ${f##*/} in the job directory" ;;
  esac
done
status=0
message="$("$run" --merge "$S/c/jobs" --out "$S/c/merged" 2>&1 > /dev/null)" || status=$?
[ "$status" -eq 2 ] || fail "the merge of a cancelled sweep exited $status"
case "$message" in
  "systolic-run: error: $S/c/jobs: no record for layer "*" of the --emit-jobs output again (with Slurm, sbatch --array="*")") ;;
  *) fail "the merge of a cancelled sweep does not say what to run again: $message" ;;
esac
# The indices it names are exactly the jobs without a file, the big layer's among them.
again="${message##*sbatch --array=}"
again="${again%)}"
named=" "
for range in ${again//,/ }; do
  for i in $(seq "${range%-*}" "${range#*-}"); do named+="$i "; done
done
[[ "$named" == *" 2 "* && "$named" == *" 5 "* ]] || fail "the merge does not name the big layer's tasks 2 and 5: $message"
i=0
while read -r line; do
  i=$((i + 1))
  file="$(printf '%s\n' "$line" | sed -n 's/.* --job-out \([^ ]*\) .*/\1/p')"
  if [[ "$named" == *" $i "* ]]; then
    [ ! -e "$file" ] || fail "the merge names task $i, whose file $file exists"
  else
    [ -f "$file" ] || fail "the merge does not name task $i, whose file $file is missing"
  fi
done < "$S/c/jobs.txt"
[ ! -e "$S/c/merged" ] || fail "the refused merge left $S/c/merged behind"
say "(c) scancel during a layer: no partial job file, no temporary; the merge names the missing tasks"
say "passed"
