#!/usr/bin/python3
"""The CPU time a clean Release build takes, and which translation units take it.

Configures and builds the whole project (tools, tests and bench, as `scripts/setup --clean` does)
in a new build directory, without ccache, with this script as the compiler launcher: each compile
appends its CPU time (user + sys) and peak memory to a log. Prints the build's total CPU time, the
sum over the translation units and the heaviest ones. See docs/performance.md, "Build time".

    bench/compile_times.py                      # build in a temporary directory, then remove it
    bench/compile_times.py --build-dir /tmp/ct --log after.log --compare before.log
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE_SUFFIXES = ('.cpp', '.cc', '.c')


def record(log, command):
    """Compiler launcher: runs the compile command and appends `cpu_s maxrss_MiB source` to log."""
    status = subprocess.run(command).returncode
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    source = next((a for a in command if a.endswith(SOURCE_SUFFIXES)), '?')
    line = f'{usage.ru_utime + usage.ru_stime:.2f} {usage.ru_maxrss // 1024} {source}\n'
    with open(log, 'a') as f:  # one short append per compile: concurrent compiles do not interleave
        f.write(line)
    return status


def read_log(path, root):
    """{source relative to root: (cpu_s, maxrss_MiB)} from a log that record() wrote."""
    units = {}
    with open(path) as f:
        for line in f:
            cpu, rss, source = line.split(maxsplit=2)
            source = source.strip()
            if root and source.startswith(root + os.sep):
                source = source[len(root) + 1:]
            cpu_total, rss_max = units.get(source, (0.0, 0))  # a source built twice counts twice
            units[source] = (cpu_total + float(cpu), max(rss_max, int(rss)))
    return units


def build(source, build_dir, jobs, log):
    """Configures and builds everything; returns (CPU-s of the whole build, wall-clock s)."""
    launcher = ';'.join([sys.executable, os.path.abspath(__file__), '--record', log])
    configure = ['cmake', '-S', source, '-B', build_dir, '-DCMAKE_BUILD_TYPE=Release',
                 '-DSYSTOLIC_BUILD_TESTS=ON', '-DSYSTOLIC_BUILD_BENCH=ON',
                 f'-DCMAKE_CXX_COMPILER_LAUNCHER={launcher}', f'-DCMAKE_C_COMPILER_LAUNCHER={launcher}']
    env = dict(os.environ, CCACHE_DISABLE='1')
    output = os.path.join(build_dir, 'compile_times_build.log')  # the compilers' messages
    os.makedirs(build_dir, exist_ok=True)
    start = time.monotonic()
    with open(output, 'w') as out:
        for command in (configure, ['cmake', '--build', build_dir, '-j', str(jobs)]):
            status = subprocess.run(command, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
            if status != 0:
                sys.exit(f'compile_times: {" ".join(command[:3])} failed (status {status}); see {output}')
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime, time.monotonic() - start


def main():
    if len(sys.argv) > 2 and sys.argv[1] == '--record':
        sys.exit(record(sys.argv[2], sys.argv[3:]))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--source', default=root, help='the source tree (default: this one)')
    p.add_argument('--build-dir', help='build here and keep it (default: a temporary directory)')
    p.add_argument('--jobs', type=int, default=os.cpu_count(), help='parallel compiles (default: all cores)')
    p.add_argument('--log', help='keep the per-unit log in this file (default: in the build directory)')
    p.add_argument('--top', type=int, default=15, help='how many of the heaviest units to list')
    p.add_argument('--compare', metavar='LOG',
                   help='a log of an earlier run: list each unit before and after')
    args = p.parse_args()

    source = os.path.abspath(args.source)
    build_dir = os.path.abspath(args.build_dir) if args.build_dir else tempfile.mkdtemp(prefix='systolic-ct-')
    if args.build_dir and os.path.exists(os.path.join(build_dir, 'CMakeCache.txt')):
        sys.exit(f'compile_times: {build_dir} holds a build already; a clean build needs a new directory')
    log = os.path.abspath(args.log) if args.log else os.path.join(build_dir, 'compile_times.log')
    if os.path.exists(log):
        os.remove(log)
    try:
        total, wall = build(source, build_dir, args.jobs, log)
        units = read_log(log, source)
    finally:
        if not args.build_dir:
            shutil.rmtree(build_dir, ignore_errors=True)
    cpu = sorted(((c, r, s) for s, (c, r) in units.items()), reverse=True)
    print(f'clean Release build of {source}, {args.jobs} jobs: '
          f'{total:.0f} CPU-s (user + sys), {wall:.0f} s wall')
    print(f'{len(cpu)} translation units: {sum(c for c, _, _ in cpu):.0f} CPU-s, '
          f'the heaviest {cpu[0][0]:.1f}')
    print(f'\n{"CPU-s":>7} {"MiB":>5}  translation unit')
    for c, r, s in cpu[:args.top]:
        print(f'{c:7.2f} {r:5d}  {s}')
    if args.compare:
        before = read_log(args.compare, None)
        # An earlier run may have built another tree: match the units by their path below it.
        def key(s):
            s = s if s.startswith(os.sep) else os.sep + s
            for top in ('bench', 'examples', 'fuzz', 'io', 'model', 'observe', 'tb', 'tests', 'tools',
                        'verify', 'vp'):
                i = s.rfind(os.sep + top + os.sep)
                if i >= 0:
                    return s[i + 1:]
            return s
        old = {key(s): c for s, (c, _) in before.items()}
        new = {key(s): c for s, (c, _) in units.items()}
        print(f'\n{"before":>7} {"after":>7}  translation unit (CPU-s)')
        for s in sorted(set(old) | set(new), key=lambda s: -max(old.get(s, 0), new.get(s, 0))):
            a = f'{old[s]:7.2f}' if s in old else '      -'
            b = f'{new[s]:7.2f}' if s in new else '      -'
            print(f'{a} {b}  {s}')
        print(f'{sum(old.values()):7.0f} {sum(new.values()):7.0f}  all units')


if __name__ == '__main__':
    main()
