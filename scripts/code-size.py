#!/usr/bin/env python3
"""Size limits of the library crates: files over 600 lines and functions over 100 lines.

Scans every `.rs` file under hetdsl/src, hetdsl-macros/src, hetdsl-decl/src and hetdsl-mpi/src (tests inside
them included) and prints the offenders, largest first; exits 1 if there are any.

How it measures:
- a file's size is its line count (blank lines and comments included, as `wc -l` counts);
- a function is a line with the `fn` keyword followed by a name (after any `pub`, `const`,
  `async`, `unsafe`, `extern "C"`), whose body is the first `{` after it that comes before a
  `;`; its size is the number of lines from the `fn` line to the line of the brace that closes
  the body (signature and doc comments above it not counted). Braces inside string and char
  literals and comments are skipped; raw strings are handled for the `r"…"`/`r#"…"#` forms.
  Nested functions and closures count inside their enclosing function, and a nested `fn` is
  also measured on its own.

Usage: scripts/code-size.py [--max-file N] [--max-fn N] [ROOT]   (defaults 600, 100, the repo)
"""

import argparse
import os
import re
import sys

DIRS = ["hetdsl/src", "hetdsl-macros/src", "hetdsl-decl/src", "hetdsl-mpi/src"]
FN = re.compile(
    r'^\s*(?:pub(?:\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?'
    r'(?:extern\s+"[^"]*"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)'
)


def code_only(text):
    """`text` with comments and the contents of string and char literals blanked out (newlines
    kept), so that braces can be counted."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif (c == "r" and re.match(r'r#*"', text[i:i + 10])
              and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_"))):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(?:\\.|\\u\{[0-9a-fA-F]+\}|[^\\'])'", text[i:i + 12])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, line count) of every function with a body in `text`."""
    code = code_only(text)
    starts = [0]
    for k, ch in enumerate(code):
        if ch == "\n":
            starts.append(k + 1)
    found = []
    for lineno, start in enumerate(starts, 1):
        end = code.find("\n", start)
        m = FN.match(code[start:end if end >= 0 else len(code)])
        if not m:
            continue
        k = start + m.end()
        brace, semi = code.find("{", k), code.find(";", k)
        if brace < 0 or (0 <= semi < brace):
            continue  # a declaration without a body (trait method, extern fn)
        depth, j = 0, brace
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        last = code.count("\n", 0, j) + 1
        found.append((m.group(1), lineno, last - lineno + 1))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--max-fn", type=int, default=100)
    ap.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    args = ap.parse_args()
    big_files, big_fns = [], []
    for d in DIRS:
        for dirpath, _, names in os.walk(os.path.join(args.root, d)):
            for name in sorted(names):
                if not name.endswith(".rs"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, args.root)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                if lines > args.max_file:
                    big_files.append((lines, rel))
                for fn_name, line, size in functions(text):
                    if size > args.max_fn:
                        big_fns.append((size, f"{rel}:{line}", fn_name))
    print(f"files over {args.max_file} lines:")
    for lines, rel in sorted(big_files, reverse=True):
        print(f"  {lines:5} {rel}")
    print(f"functions over {args.max_fn} lines:")
    for size, where, fn_name in sorted(big_fns, reverse=True):
        print(f"  {size:5} {where} {fn_name}")
    return 1 if big_files or big_fns else 0


if __name__ == "__main__":
    sys.exit(main())
