#!/usr/bin/env bash
# A Slurm job array over systolic-run's job lines: array task i runs line i of JOBS_FILE.
#
#   systolic-run --topology workloads/gpt2.csv --array 32,64,128,256 --emit-jobs --out "$PWD/jobs" > jobs.txt
#   sbatch --array=1-"$(wc -l < jobs.txt)" scripts/slurm_sweep.sh jobs.txt
#   squeue --me                                  # until the array has left the queue
#   systolic-run --merge jobs --out results      # names the array indices of any job without a record
#   sbatch --array=3,7 scripts/slurm_sweep.sh jobs.txt   # only those, again (docs/sweeps.md)
#
# The lines hold absolute paths, so the nodes need the same file system view (the topology, the
# executable, --data and the job directory). Adjust the #SBATCH lines to your cluster (or override
# them on sbatch's command line: --partition, --time, --mem); a 128x128 GPT-2 layer on the cycle
# engine needs about 200 MB and a core for a minute or two.
#SBATCH --job-name=systolic-sweep
#SBATCH --cpus-per-task=1
#SBATCH --mem=2G
#SBATCH --time=00:30:00
#SBATCH --output=slurm-%A_%a.out
set -euo pipefail

jobs_file="${1:-}"
if [ -z "$jobs_file" ] || [ ! -f "$jobs_file" ]; then
  echo "slurm_sweep.sh: usage: sbatch --array=1-N slurm_sweep.sh JOBS_FILE (got '${jobs_file}')" >&2
  exit 2
fi
task="${SLURM_ARRAY_TASK_ID:-}"
if ! [[ "$task" =~ ^[1-9][0-9]*$ ]]; then
  echo "slurm_sweep.sh: SLURM_ARRAY_TASK_ID must be a line number from 1 (got '${task}'); submit with sbatch --array" >&2
  exit 2
fi
line="$(sed -n "${task}p" "$jobs_file")"
if [ -z "$line" ]; then
  echo "slurm_sweep.sh: $jobs_file has no line $task ($(wc -l < "$jobs_file") jobs)" >&2
  exit 2
fi
# The job's name (RxC:DF:ID), for the message of a task that fails.
job="$(printf '%s\n' "$line" | sed -n "s/.* --job '\{0,1\}\([^ ']*\)'\{0,1\} .*/\1/p")"
# The line is a command that systolic-run --emit-jobs quoted for /bin/sh. Not exec'd: a task that
# fails says which array index it is (Slurm's own accounting says only FAILED and the exit code).
# scancel's SIGTERM reaches the job process too, which removes its temporaries and writes nothing.
status=0
/bin/sh -c "$line" || status=$?
case "$status" in
  0) ;;
  1) echo "slurm_sweep.sh: array task $task (job ${job:-?}): the layer failed its checks (exit 1); its record is written and the merged report says FAIL" >&2 ;;
  *) echo "slurm_sweep.sh: array task $task (job ${job:-?}) could not run (exit $status); after fixing the cause, sbatch --array=$task runs it again" >&2 ;;
esac
exit "$status"
