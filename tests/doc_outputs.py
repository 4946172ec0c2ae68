#!/usr/bin/python3
"""Checks that the program output the docs quote is what the programs print now.

    doc_outputs.py --build BUILD_DIR MARKDOWN...

A fenced block whose info string is `text output=COMMAND` quotes COMMAND's stdout. COMMAND is run in
BUILD_DIR (its first word a program there, e.g. soc/systolic-soc), and the block must equal what it
prints, line for line, except that:
  - a first line `$ build/COMMAND` shows the command as a reader types it from the source tree;
  - a line `...` stands for any lines the quote leaves out (at the end: whatever follows, such as the
    platform's own lines after a firmware's);
  - figures of the host's speed stand for any: the figure before ` MIPS`, the wall-clock seconds
    of systolic-qemu's summary, and the guest kernel's timestamps (`[    1.806495]`);
  - a guest kernel's line the quote does not have (a timestamped `[ ... ]` line, such as a
    warning a slow host provokes from the kernel's clock watchdog) may come anywhere.
COMMAND must exit 0. Each difference is one line naming the Markdown file and line, with what the
program prints there, so that the fix is to copy it. The blocks are found by tests/doc_snippets.py's
parser. Exit status 0 when every quote matches, 1 otherwise, 2 for bad usage.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_snippets import blocks  # noqa: E402

HOST_SPEED = [(re.compile(r"\d+(\.\d+)? MIPS"), "MIPS"),
              (re.compile(r"^systolic-qemu: \d+(\.\d+)? s, "), "systolic-qemu: s, "),
              (re.compile(r"^\[ *\d+\.\d+\] "), "[] ")]


KERNEL_LINE = HOST_SPEED[2][0]


def host_free(line):
    for pattern, stand_in in HOST_SPEED:
        line = pattern.sub(stand_in, line)
    return line


def same(quoted, printed):
    return host_free(quoted) == host_free(printed)


def compare(quote, printed):
    """None when the quote matches the printed lines, else (index in the quote, what the program prints
    there or a reason)."""
    i = j = 0
    while i < len(quote):
        if quote[i] == "...":
            if i + 1 == len(quote):
                return None
            nxt = quote[i + 1]
            while j < len(printed) and not same(nxt, printed[j]):
                j += 1
            if j == len(printed):
                return i + 1, "(not printed after the lines before it)"
            i += 1
            continue
        if j >= len(printed):
            return i, "(the program prints no more lines)"
        if not same(quote[i], printed[j]):
            if KERNEL_LINE.match(printed[j]):
                j += 1
                continue
            return i, printed[j]
        i += 1
        j += 1
    while j < len(printed) and KERNEL_LINE.match(printed[j]):
        j += 1
    if j < len(printed):  # what a quote leaves off the end, it says so with a last `...`
        return i, f"(the quote stops {len(printed) - j} lines before the program does: {printed[j]!r})"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build directory the commands run in")
    ap.add_argument("markdown", nargs="+")
    args = ap.parse_args()
    checked = failed = 0
    for md in args.markdown:
        for line, info, text in blocks(md):
            words = info.split(None, 1)
            if len(words) < 2 or words[0] != "text" or not words[1].startswith("output="):
                continue
            command = words[1][len("output="):].strip()
            checked += 1
            quote = list(text)
            first = line
            if quote and quote[0].startswith("$ "):
                if quote[0] != f"$ build/{command}":
                    print(f"{md}:{line}: the block shows '{quote[0][2:]}', its info string runs '{command}'")
                    failed += 1
                    continue
                quote, first = quote[1:], line + 1
            r = subprocess.run(shlex.split(command), cwd=args.build, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{md}:{line}: '{command}' exited {r.returncode}: "
                      f"{(r.stderr.strip().splitlines() or [''])[-1]}")
                failed += 1
                continue
            diff = compare(quote, r.stdout.rstrip("\n").split("\n"))
            if diff is not None:
                n, printed = diff
                print(f"{md}:{first + n}: '{command}' prints {printed!r} here"
                      + (f", the doc quotes {quote[n]!r}" if n < len(quote) else ""))
                failed += 1
    print(f"doc_outputs: {checked} quoted outputs checked, {failed} differ")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
