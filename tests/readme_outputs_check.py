#!/usr/bin/python3
"""Checks that what the README's commands write is ignored by git.

    readme_outputs_check.py README.md

Every relative directory given to --out or --out-dir in the README's code blocks (fenced or indented),
and a file inside it, must be ignored (git check-ignore), so that a new user who follows the README finds a clean
`git status`. Exit status 0 when all are, 1 otherwise (one line each), 77 outside a git work tree.
"""
import os
import re
import subprocess
import sys

OUT = re.compile(r"--out(?:-dir)?[ =](\S+)")


def command_outputs(readme):
    inside = False
    for n, line in enumerate(open(readme, encoding="utf-8").read().split("\n"), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
        elif inside or line.startswith("    "):
            for path in OUT.findall(line):
                if not os.path.isabs(path) and not path.startswith("$"):
                    yield n, path.rstrip("/")


def main():
    if len(sys.argv) != 2:
        print("usage: readme_outputs_check.py README.md", file=sys.stderr)
        return 2
    readme = sys.argv[1]
    root = os.path.dirname(os.path.abspath(readme))
    inside = subprocess.run(["git", "-C", root, "rev-parse", "--is-inside-work-tree"], capture_output=True)
    if inside.returncode != 0:
        print("readme_outputs_check: not a git work tree; nothing to check")
        return 77
    outputs = list(command_outputs(readme))
    bad = 0
    for n, path in outputs:
        for p in (path + "/", path + "/report.json"):
            if subprocess.run(["git", "-C", root, "check-ignore", "-q", "--no-index", p]).returncode != 0:
                print(f"{readme}:{n}: {p} is written by the README's command but not ignored by git")
                bad += 1
    print(f"readme_outputs_check: {len(outputs)} output directories, {bad} not ignored")
    return 1 if bad or not outputs else 0


if __name__ == "__main__":
    sys.exit(main())
