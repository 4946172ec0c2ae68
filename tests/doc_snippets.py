#!/usr/bin/python3
"""Compiles every C and C++ snippet of README.md and docs/*.md, so the documentation's code builds.

    doc_snippets.py --cxx CXX --cc CC --flags FILE --context HEADER MARKDOWN...

The convention, by the fenced block's info string:
  ```cpp          code to compile. The blocks of one Markdown file are one example, in order: a
                  later block may use what an earlier one declared. Their #include lines go to the
                  top; everything else becomes the body of a function, so statements, local
                  classes and using-declarations may stand as written. They may use the names that
                  tests/doc_snippets/context.h declares (a bus, an interrupt signal, m, k, p and
                  the base addresses), as the platform around them would provide.
  ```c            a C99 translation unit, compiled alone (the C driver's examples).
  ```cpp file=PATH  the whole of the file PATH (relative to the working directory), which is built
                  elsewhere: the block must equal the file, line for line.
  ```text, ```sh, ```cmake, ```json, no info string: not code.
Any other C-family info string fails, and so does an untagged block with an #include or a line that
ends in ';' (tag it). A quotation of the project's own source is not a snippet: it would drift from
the source unseen, so the docs link to the file instead, and ```cpp excerpt fails too. Each file's snippets are compiled with -fsyntax-only against the model's
headers; the compiler's messages name the Markdown file and line.
Exit status 0 when all compile, 1 otherwise, 2 for bad usage.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

C_FAMILY = re.compile(r"^(c|cpp|c\+\+|cc|cxx|h|hpp)\b", re.IGNORECASE)
FENCE = re.compile(r"^(\s*)```(.*)$")


def blocks(path):
    """(line of the first body line, info string, body lines) for each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, info = len(m.group(1)), m.group(2).strip()
        start, i, body = i + 2, i + 1, []
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        yield start, info, body
        i += 1


def compile_source(compiler, flags, suffix, text):
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
    try:
        r = subprocess.run([compiler, "-fsyntax-only", *flags, f.name], capture_output=True, text=True)
        return r.returncode, r.stderr
    finally:
        os.unlink(f.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cxx", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--flags", required=True, help="a file of compiler flags, one a line")
    ap.add_argument("--context", required=True)
    ap.add_argument("markdown", nargs="+")
    args = ap.parse_args()
    flags = [f for f in open(args.flags).read().split("\n") if f]
    failed = compiled = 0
    for md in args.markdown:
        includes, body = [], []
        for line, info, text in blocks(md):
            kind = info.split()[0].lower() if info else ""
            rest = info.split()[1:] if info else []
            if not kind:
                if any(t.lstrip().startswith("#include") or t.rstrip().endswith(";") for t in text):
                    print(f"{md}:{line}: an untagged block that looks like code: tag it cpp, c or "
                          "text", file=sys.stderr)
                    failed += 1
                continue
            if not C_FAMILY.match(kind):
                continue
            if rest == ["excerpt"]:
                print(f"{md}:{line}: a quotation of the source ('{info}'): link to the file instead",
                      file=sys.stderr)
                failed += 1
                continue
            if len(rest) == 1 and rest[0].startswith("file="):
                path = rest[0][len("file="):]
                try:
                    quoted = open(path, encoding="utf-8").read().rstrip("\n").split("\n")
                except OSError as e:
                    print(f"{md}:{line}: cannot read the quoted file: {e}", file=sys.stderr)
                    failed += 1
                    continue
                if quoted != text:
                    n = next((i for i, (a, b) in enumerate(zip(quoted, text)) if a != b),
                             min(len(quoted), len(text)))
                    print(f"{md}:{line + n}: the quote of {path} differs from the file at its line "
                          f"{n + 1}", file=sys.stderr)
                    failed += 1
                continue
            if rest or kind not in ("cpp", "c"):
                print(f"{md}:{line}: info string '{info}': use cpp, c or cpp file=PATH", file=sys.stderr)
                failed += 1
                continue
            if kind == "c":
                src = f'#line {line} "{md}"\n' + "\n".join(text) + "\n"
                rc, err = compile_source(args.cc, ["-std=c99", "-Wall", "-Werror", *flags], ".c", src)
                compiled += 1
                if rc:
                    failed += 1
                    print(err, file=sys.stderr, end="")
                continue
            body.append(f'#line {line} "{md}"')
            for n, t in enumerate(text):
                if t.lstrip().startswith("#include"):
                    includes.append(f'#line {line + n} "{md}"')
                    includes.append(t)
                    body.append("")
                else:
                    body.append(t)
        if not body:
            continue
        src = (f'#include "{os.path.abspath(args.context)}"\n' + "\n".join(includes) +
               "\nvoid doc_snippet() {\n" + "\n".join(body) + "\n}\n")
        rc, err = compile_source(args.cxx, ["-std=c++17", "-Wall", "-Werror", "-Wno-unused",
                                            *flags], ".cpp", src)
        compiled += 1
        if rc:
            failed += 1
            print(err, file=sys.stderr, end="")
    print(f"doc_snippets: {compiled} examples compiled, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
