#!/usr/bin/python3
"""Checks that every relative link of the given Markdown files leads somewhere.

    doc_links.py MARKDOWN...

A link [text](path), or ![alt](path), whose target is not a URL must name a file or directory that
exists, relative to the Markdown file. A #fragment must be the anchor of a heading in the target
Markdown file (or in the same file for a bare #fragment), made as GitHub makes it: lower case,
punctuation dropped, spaces as hyphens, a repeated heading suffixed -1, -2, ... Links inside fenced
blocks and code spans are not links. Each broken link is one line naming the file and line.
Exit status 0 when every link resolves, 1 otherwise, 2 for bad usage.
"""
import os
import re
import sys

FENCE = re.compile(r"^\s*```")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+).*?\1")


def prose_lines(path):
    """(line number, text) of the lines outside fenced blocks, code spans blanked."""
    inside = False
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield n, line


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            found.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
        cache[path] = found
    return cache[path]


def main():
    if len(sys.argv) < 2:
        print(__doc__.split("\n")[2].strip(), file=sys.stderr)
        return 2
    broken = checked = 0
    for md in sys.argv[1:]:
        if not os.path.isfile(md):
            print(f"doc_links: no such file: {md}", file=sys.stderr)
            return 2
        for n, line in prose_lines(md):
            for m in LINK.finditer(CODE_SPAN.sub("", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                    continue
                checked += 1
                path, _, fragment = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
                if not os.path.exists(resolved):
                    print(f"{md}:{n}: {target}: no such file or directory", file=sys.stderr)
                    broken += 1
                elif fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
                    print(f"{md}:{n}: {target}: {resolved} has no heading #{fragment}",
                          file=sys.stderr)
                    broken += 1
    print(f"doc_links: {checked} links checked, {broken} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
