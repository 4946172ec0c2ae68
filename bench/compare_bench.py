#!/usr/bin/python3
"""Two builds' systolic-bench, alternated: which engine got faster or slower, by how much.

Runs the BEFORE and AFTER bench binaries one after the other, ROUNDS times, on the same benchmarks,
and prints for each benchmark the median PE-updates per second of each and, from each round's
pair, the geometric mean of AFTER / BEFORE. Alternating puts both under the same drift of a shared
machine; the ratio of a pair taken seconds apart is steadier than either figure (docs/performance.md).

    bench/compare_bench.py OLD/bench/systolic-bench build/bench/systolic-bench --rounds 6
    bench/compare_bench.py OLD NEW --filter '^model_functional/int32/N=128/' --cpu 1

Exit status 2 for bad arguments or a binary that does not run.
"""
import argparse
import math
import re
import statistics
import subprocess
import sys

DEFAULT_FILTER = '^model(_functional)?(_ws|_is)?/int32/N=(16|64|128)/M=(16|64|128)/'
LINE = re.compile(r'(\S+)/real_time\s.*pe_updates_per_s=([\d.]+)([kMG]?)/s')
SCALE = {'': 1e-6, 'k': 1e-3, 'M': 1.0, 'G': 1e3}


def fail(message):
    print(f'compare_bench: {message}', file=sys.stderr)
    sys.exit(2)


def run(binary, bench_filter, min_time, cpu):
    """{benchmark name: M PE-updates/s} from one run of a bench binary."""
    command = [binary, f'--benchmark_filter={bench_filter}', f'--benchmark_min_time={min_time}']
    if cpu is not None:
        command = ['taskset', '-c', str(cpu)] + command
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as e:
        fail(f'{binary} did not run: {e}')
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ['(nothing on stderr)'])[-1]
        fail(f'{binary} exited with status {done.returncode}: {last}')
    out = done.stdout
    figures = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            figures[m.group(1)] = float(m.group(2)) * SCALE[m.group(3)]
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('before', help='the bench binary of the older build')
    p.add_argument('after', help='the bench binary of the newer build')
    p.add_argument('--rounds', type=int, default=5, help='pairs to run (default 5)')
    p.add_argument('--filter', default=DEFAULT_FILTER, help='benchmarks (default: the engines at N = 16, 64, 128)')
    p.add_argument('--min-time', type=float, default=0.4, help="each benchmark's --benchmark_min_time (default 0.4)")
    p.add_argument('--cpu', type=int, help='pin both to this core (taskset)')
    a = p.parse_args()
    if a.rounds < 1:
        p.error('--rounds must be at least 1')

    pairs = []
    for r in range(a.rounds):
        before = run(a.before, a.filter, a.min_time, a.cpu)
        after = run(a.after, a.filter, a.min_time, a.cpu)
        pairs.append((before, after))
        print(f'round {r + 1} of {a.rounds} done', file=sys.stderr)
    names = [n for n in pairs[0][0] if all(n in b and n in f for b, f in pairs)]
    if not names:
        fail('no benchmark ran in both binaries (check --filter)')

    width = max(len(n) for n in names)
    print(f'{"benchmark":<{width}}  {"before":>9}  {"after":>9}  after/before (geometric mean of {a.rounds} pairs)')
    for n in names:
        before = [b[n] for b, _ in pairs]
        after = [f[n] for _, f in pairs]
        ratio = math.exp(statistics.mean(math.log(f / b) for b, f in zip(before, after)))
        print(f'{n:<{width}}  {statistics.median(before):9.0f}  {statistics.median(after):9.0f}  {ratio:.2f}')
    print('(M PE-updates per second, medians)')


if __name__ == '__main__':
    main()
