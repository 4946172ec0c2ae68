#!/usr/bin/python3
"""Checks that the tests' precompiled header can be used where it is included.

    pch_flags_check.py COMPILE_COMMANDS_JSON

GCC takes a precompiled header only into a compilation with the same position-independence
settings (-fPIC, -fPIE, -fpic, -fpie, none) as the one that made it; otherwise it warns
(-Winvalid-pch) and parses the headers again, so the header costs build time and saves none. Every
compilation that includes a header made by the build (`-include .../cmake_pch.hxx`) must have the
settings of that header's own compilation. One line per mismatch; exit status 0 when there is none
and at least one header is used, 1 otherwise.
"""
import json
import os
import shlex
import sys

PIC = {"-fPIC", "-fPIE", "-fpic", "-fpie", "-fno-pic", "-fno-pie", "-fno-PIC", "-fno-PIE"}


def words(entry):
    return entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])


def main():
    if len(sys.argv) != 2:
        print("usage: pch_flags_check.py COMPILE_COMMANDS_JSON", file=sys.stderr)
        return 2
    entries = json.load(open(sys.argv[1], encoding="utf-8"))
    made = {}  # the header's path (without .cxx) -> its compilation's settings
    for e in entries:
        if os.path.basename(e["file"]) == "cmake_pch.hxx.cxx":
            made[e["file"][: -len(".cxx")]] = [w for w in words(e) if w in PIC]
    bad = used = 0
    for e in entries:
        w = words(e)
        for i, word in enumerate(w[:-1]):
            if word == "-include" and w[i + 1] in made and os.path.basename(e["file"]) != "cmake_pch.hxx.cxx":
                used += 1
                mine = [x for x in w if x in PIC]
                if mine != made[w[i + 1]]:
                    bad += 1
                    print(f"{e['file']}: compiled with {mine or 'no PIC option'}, its precompiled header with "
                          f"{made[w[i + 1]] or 'no PIC option'}: GCC will not use the header")
    print(f"pch_flags_check: {len(made)} precompiled headers, {used} compilations use them, {bad} cannot")
    return 1 if bad or not used else 0


if __name__ == "__main__":
    sys.exit(main())
