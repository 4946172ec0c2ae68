#!/usr/bin/python3
"""The package as users install it (docs/python.md, "Installing"), and matmul's option table.

    python_package_test.py pip     --source S --build B --python PY --version V --work DIR
    python_package_test.py install --source S --build B --python PY --version V --work DIR
    python_package_test.py options   (with the built package on PYTHONPATH)

pip: a venv made with --system-site-packages from PY, in DIR; `pip install --no-build-isolation
--no-index S` in it (nothing downloaded; the native module built by CMake under DIR/pip-build, kept
between runs, so that only the first run compiles the libraries); then, from a directory outside the
source tree with no PYTHONPATH, the commands pyproject.toml declares (--help, and a usage
error) and a job through systolic.matmul, all from the venv. The source tree gets no egg-info.

install: `cmake --install B --component python --prefix P` into a temporary prefix (then imported
with PYTHONPATH=the directory the install names) and into a venv (imported by the venv's python with
no PYTHONPATH: the prefix's Python finds it), each with its systolic-import.

options: systolic.job_options against systolic-tb's parser itself: a flag takes no value, every
other option needs one, and an option's choices are the parser's.

Exit 0 on pass, 1 on failure (each failure one line).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what, flush=True)
    return ok


def run(command, cwd=None, env=None, timeout=900):
    t0 = time.time()
    r = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    print(f"$ {' '.join(command)}  ({time.time() - t0:.1f} s, exit {r.returncode})", flush=True)
    return r


def clean_env(**extra):
    """The environment a user has outside the clone: no PYTHONPATH, no venv of ours active."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra)
    return env


# A job whose C and report are known: 40x17 ones times 17x33 ones on an 8x8 array.
JOB = """
import sys, numpy as np, systolic
print(systolic.__version__)
print(systolic.__file__)
print(systolic._systolic.__file__)
c, report = systolic.matmul(np.ones((40, 17), np.int8), np.ones((17, 33), np.int8), array=8,
                            engine="functional")
print(int(c[0, 0]), c.shape, report["tiles"], report["utilization"], report["pass"])
try:
    systolic.matmul(np.ones((4, 4), np.int8), np.ones((4, 4), np.int8), k_tle=2)
except systolic.UsageError as e:
    print(e)
"""


def check_job(python, env, cwd, version, where):
    r = run([python, "-c", JOB], cwd=cwd, env=env)
    if not check(r.returncode == 0, f"the job from {where} exits {r.returncode}: {r.stderr.strip()[-500:]}"):
        return
    lines = r.stdout.splitlines()
    check(lines[0] == version, f"systolic.__version__ from {where} is {lines[0]!r}, not {version!r}")
    for path in lines[1:3]:
        check(os.path.realpath(path).startswith(os.path.realpath(where) + os.sep),
              f"systolic came from {path}, not from {where}")
    check(lines[3] == "17 (40, 33) 25 0.825 True", f"the job from {where} gave {lines[3]!r}")
    check(lines[4] == "unknown option --k-tle; did you mean --k-tile?",
          f"an unknown option from {where} says {lines[4]!r}")


def declared_commands():
    """The commands pyproject.toml's [project.scripts] declares, which both installs must provide."""
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(source, "pyproject.toml"), encoding="utf-8").read()
    return re.findall(r'^(systolic-[a-z]+) = "', text, re.MULTILINE)


def check_commands(bin_dir, env, cwd, where):
    commands = declared_commands()
    check({"systolic-import", "systolic-infer", "systolic-generate"} <= set(commands),
          f"pyproject.toml declares {commands}")
    for command in commands:
        path = os.path.join(bin_dir, command)
        if not check(os.access(path, os.X_OK), f"{where} has no {path}"):
            continue
        r = run([path, "--help"], cwd=cwd, env=env)
        check(r.returncode == 0 and r.stdout.startswith(f"usage: {command} "),
              f"{command} --help from {where}: exit {r.returncode}, {(r.stdout + r.stderr)[:300]!r}")
    # A usage error: one line, named by the command, exit 2, before torch is loaded.
    r = run([os.path.join(bin_dir, "systolic-import"), "--input-shape", "1,2", "--dtype", "fp32",
             "--out", "x"], cwd=cwd, env=env)
    check(r.returncode == 2 and r.stderr == "systolic-import: error: give an ONNX file or --torchvision "
          "NAME (one of them)\n", f"systolic-import's usage error from {where}: exit {r.returncode}, "
          f"{r.stderr!r}")


def pip_case(a):
    work = os.path.abspath(a.work)
    venv = os.path.join(work, "venv")
    shutil.rmtree(venv, ignore_errors=True)
    r = run([a.python, "-m", "venv", "--system-site-packages", venv])
    if not check(r.returncode == 0, f"python3 -m venv: {r.stderr.strip()[-300:]} (Debian's python3-venv?)"):
        return
    python = os.path.join(venv, "bin", "python")
    egg_info = os.path.join(a.source, "python", "systolic.egg-info")
    had_egg_info = os.path.exists(egg_info)
    env = clean_env(SYSTOLIC_PIP_BUILD_DIR=os.path.join(work, "pip-build"),
                    CMAKE_BUILD_PARALLEL_LEVEL=os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
                    PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1")
    t0 = time.time()
    r = run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", a.source], cwd=work,
            env=env)
    print(f"pip install: {time.time() - t0:.0f} s", flush=True)
    if not check(r.returncode == 0, "pip install --no-build-isolation: " + (r.stdout + r.stderr)[-2000:]):
        return
    check(had_egg_info or not os.path.exists(egg_info), f"pip's build wrote {egg_info} into the source tree")
    with tempfile.TemporaryDirectory(prefix="systolic-user-") as home:
        env = clean_env()
        check_job(python, env, home, a.version, venv)
        check_commands(os.path.join(venv, "bin"), env, home, venv)
        # The marker that says the package carries its types.
        r = run([python, "-c", "import os, systolic; print(os.path.isfile(os.path.join("
                 "os.path.dirname(systolic.__file__), 'py.typed')))"], cwd=home, env=env)
        check(r.stdout.strip() == "True", f"no py.typed installed: {r.stdout + r.stderr!r}")


def install_case(a):
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="install-", dir=work) as tmp:
        # A prefix no Python searches: the install names the directory to put on PYTHONPATH.
        prefix = os.path.join(tmp, "prefix")
        r = run(["cmake", "--install", a.build, "--component", "python", "--prefix", prefix])
        if check(r.returncode == 0, f"cmake --install: {(r.stdout + r.stderr)[-1000:]}"):
            said = re.search(r"the Python package is in (\S+): PYTHONPATH=(\S+) (\S+) imports it", r.stdout)
            if check(said is not None, f"cmake --install does not say where the package went: {r.stdout!r}"):
                site, interpreter = said.group(2), said.group(3)
                check(site.startswith(prefix + os.sep), f"the package went to {site}, outside {prefix}")
                with tempfile.TemporaryDirectory(prefix="systolic-user-") as home:
                    check_job(interpreter, clean_env(PYTHONPATH=site), home, a.version, site)
                    check_commands(os.path.join(prefix, "bin"), clean_env(), home, prefix)
        # A venv as the prefix: its own python finds the package, with no PYTHONPATH.
        venv = os.path.join(tmp, "venv")
        r = run([a.python, "-m", "venv", "--system-site-packages", "--without-pip", venv])
        if check(r.returncode == 0, f"python3 -m venv: {r.stderr.strip()[-300:]}"):
            r = run(["cmake", "--install", a.build, "--component", "python", "--prefix", venv])
            if check(r.returncode == 0, f"cmake --install into a venv: {(r.stdout + r.stderr)[-1000:]}"):
                check("which " + os.path.join(venv, "bin", "python3") + " searches" in r.stdout,
                      f"cmake --install into a venv does not say its python searches it: {r.stdout!r}")
                with tempfile.TemporaryDirectory(prefix="systolic-user-") as home:
                    check_job(os.path.join(venv, "bin", "python"), clean_env(), home, a.version, venv)
                    check_commands(os.path.join(venv, "bin"), clean_env(), home, venv)


def options_case():
    import systolic
    from systolic import _systolic
    base = ["--m", "2", "--k", "2", "--p", "2"]

    def refusal(args):
        try:
            _systolic.check(base + args)
        except systolic.UsageError as e:
            return str(e)
        return ""

    check(len(systolic.job_options) > 30, f"only {len(systolic.job_options)} job options")
    for name, o in systolic.job_options.items():
        check(name == o.flag[2:].replace("-", "_"), f"{name} is not {o.flag}'s keyword")
        said = refusal([o.flag, "zz9"])
        if o.is_flag:
            check(said.startswith("unexpected argument 'zz9'"), f"{o.flag} is a flag in the table, but "
                  f"the parser took a value: {said!r}")
        else:
            check("required" in refusal([o.flag]), f"{o.flag} takes a value in the table, but the parser "
                  f"needs none: {refusal([o.flag])!r}")
        if o.choices:
            check(f"{o.flag}: zz9 not in {{{','.join(o.choices)}}}" in said,
                  f"{o.flag}'s choices {o.choices} are not the parser's: {said!r}")
            for c in o.choices:
                check(" not in {" not in refusal([o.flag, c]), f"{o.flag} {c} is refused by the parser")
    for keyword in ("bogus", "m", "k", "p", "a", "b", "array", "dtype", "engine", "help"):
        check(keyword not in systolic.job_options, f"{keyword} is in systolic.job_options")
    # Kinds checked before anything runs, each a UsageError naming the option.
    import numpy as np
    a = np.ones((4, 4), np.int8)
    for options, words in (({"packed": "yes"}, "--packed (packed=) is a flag"),
                           ({"k_tile": True}, "--k-tile (k_tile=) takes a value (INT), not True"),
                           ({"order": "diagonal"}, "must be one of row, col, snake, random"),
                           ({"m": 3}, "is set from A's shape"),
                           ({"scale": np.ones(4)}, "takes no array"),
                           ({"bogus": 1}, "unknown option --bogus")):
        try:
            systolic.matmul(a, a, **options)
            check(False, f"matmul with {options} ran")
        except systolic.UsageError as e:
            check(words in str(e), f"matmul with {options}: {e}")
    import inspect
    params = inspect.signature(systolic.matmul).parameters
    check(all(n in params for n in systolic.job_options), "matmul's signature lacks job options")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=["pip", "install", "options"])
    p.add_argument("--source")
    p.add_argument("--build")
    p.add_argument("--python")
    p.add_argument("--version")
    p.add_argument("--work")
    a = p.parse_args()
    if a.case == "pip":
        pip_case(a)
    elif a.case == "install":
        install_case(a)
    else:
        options_case()
    print(f"{len(failures)} failures" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
