#!/usr/bin/env bash
# A Slurm job array over systolic-run's job lines: array task i runs line i of JOBS_FILE.
#
#   systolic-run --topology workloads/gpt2.csv --array 32,64,128,256 --emit-jobs --out "$PWD/jobs" > jobs.txt
#   sbatch --array=1-"$(wc -l < jobs.txt)" scripts/slurm_sweep.sh jobs.txt
#   systolic-run --merge jobs --out results      # after the array has finished
#
# The lines hold absolute paths, so the nodes need the same file system view (the topology, the
# executable, --data and the job directory). Adjust the #SBATCH lines to your cluster; a 128x128
# GPT-2 layer on the cycle engine needs about 200 MB and a core for a minute or two.
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
# The line is a command that systolic-run --emit-jobs quoted for /bin/sh.
exec /bin/sh -c "$line"
