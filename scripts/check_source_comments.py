#!/usr/bin/env python3
"""Source comments say what the code does and why; numbers live in the docs.

Fails (exit 1, one line per hit: file:line: rule: text) when a comment in the
library's sources names a GPU or CPU model, carries a date, or quotes a
measured timing, bandwidth or speed ratio. Such numbers go to
docs/performance.md or docs/design-measurements.md, and the comment points
there. Only comments are read: strings and code may hold any of these.

    check_source_comments.py [--self-test] ROOT [DIR ...]

DIRs are relative to ROOT (default: src cuda mpi include python tests).
--self-test seeds one violation of each rule (and text that must pass) in a
scratch tree and checks that each is reported; exit 0 when all are.
"""
import os
import re
import sys
import tempfile

DEFAULT_DIRS = ["src", "cuda", "mpi", "include", "python", "tests"]
SKIP_DIRS = {"data", "__pycache__"}  # test data files are not sources
C_LIKE = (".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".cu", ".cuh", ".inc")
HASH_COMMENTS = (".py", ".sh", ".cmake", ".pyx")
FORTRAN = (".f90", ".f", ".F90")
MATLAB = (".m",)

MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
RULES = [
    ("device name", re.compile(
        r"\b(?:[ABHV]100|H200|GH200|B200|A30|A40|L40S?|P100|K80|RTX ?\d{4}|EPYC|Xeon)\b")),
    ("date", re.compile(
        r"\b20\d\d-[01]\d(?:-[0-3]\d)?\b|\b" + MONTHS + r" (?:[0-3]?\d,? )?20\d\d\b|\b\d?\d:\d\d ?UTC\b")),
    ("timing", re.compile(
        r"(?<![\w.])\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:ns|us|µs|ms)\b|\b\d+(?:\.\d+)? ?[KMGT]i?B/s\b")),
    ("speed ratio", re.compile(
        r"\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:x|times) (?:faster|slower)\b"
        r"|\b\d+(?:\.\d+)? ?% (?:faster|slower)\b", re.IGNORECASE)),
]


def c_comments(text):
    """(line, comment text) of every // and /* */ comment, skipping strings."""
    out = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + 2
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end
            line += text.count("\n", i, end)
            i = end + len(m.group(1)) + 2
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def prefix_comments(text, marker):
    """(line, comment) for line comments starting at `marker` outside strings."""
    out = []
    for number, row in enumerate(text.split("\n"), 1):
        quote = None
        k = 0
        while k < len(row):
            ch = row[k]
            if quote:
                if ch == "\\":
                    k += 1
                elif ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif row.startswith(marker, k):
                out.append((number, row[k + len(marker):]))
                break
            k += 1
    return out


def comments_of(path, text):
    if path.endswith(C_LIKE):
        return c_comments(text)
    if path.endswith(HASH_COMMENTS) or os.path.basename(path) == "CMakeLists.txt":
        return prefix_comments(text, "#")
    if path.endswith(FORTRAN):
        return prefix_comments(text, "!")
    if path.endswith(MATLAB):
        return prefix_comments(text, "%")
    return []


def check_tree(root, dirs):
    hits = []
    for d in dirs:
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            continue
        for base, subdirs, files in os.walk(top):
            subdirs[:] = sorted(s for s in subdirs if s not in SKIP_DIRS and not s.startswith("."))
            for name in sorted(files):
                path = os.path.join(base, name)
                try:
                    with open(path, encoding="utf-8") as f:
                        text = f.read()
                except (UnicodeDecodeError, OSError):
                    continue
                for line, comment in comments_of(path, text):
                    for rule, pattern in RULES:
                        m = pattern.search(comment)
                        if m:
                            rel = os.path.relpath(path, root)
                            hits.append(f"{rel}:{line}: {rule} '{m.group(0)}': {comment.strip()}")
    return hits


SEEDED = {  # file -> (text, rules its comments must trip)
    "src/a.cpp": ("int x;  // measured on the H100: 0.3 ms per sweep\n", {"device name", "timing"}),
    "src/b.hpp": ("/* Fitted 2026-11-26,\n * 2.5x faster than COO. */\n", {"date", "speed ratio"}),
    "cuda/c.cu": ("// 35% faster, 3.0 TB/s\n", {"speed ratio", "timing"}),
    "include/d.h": ("/** e.g. 9 for an A100 */\n", {"device name"}),
    "python/e.py": ("x = 1  # run on Nov 27 2026 at 16:52 UTC\n", {"date"}),
    "mpi/f.f90": ("! Xeon host\n", {"device name"}),
}
CLEAN = (
    '// The window wins on blocks with thousands of nonzeros (docs/performance.md).\n'
    'const char* s = "H100 0.3 ms 2026-11-26 5x faster";  // strings are not comments\n'
    '// Smith & Karypis, IPDPS 2016; 2048 buckets; 16x16x16 tiles; 4 x the mean; 5% of them.\n'
    'auto r = R"(// 1 ms inside a raw string)";\n'
    '/* e.g. 9 for compute capability 9.0; 0x1f mask; sizeof(T) * 8 bits */\n'
)


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for rel, (text, _) in SEEDED.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w", encoding="utf-8") as f:
                f.write(text)
        os.makedirs(os.path.join(root, "src", "clean"), exist_ok=True)
        with open(os.path.join(root, "src", "clean", "ok.cpp"), "w", encoding="utf-8") as f:
            f.write(CLEAN)
        hits = check_tree(root, DEFAULT_DIRS)
        failed = False
        for rel, (_, rules) in SEEDED.items():
            for rule in rules:
                if not any(h.startswith(rel + ":") and f": {rule} '" in h for h in hits):
                    print(f"self-test: {rule} in {rel} was not reported")
                    failed = True
        for h in hits:
            if h.startswith(os.path.join("src", "clean")):
                print(f"self-test: false positive: {h}")
                failed = True
        print("self-test: " + ("FAILED" if failed else f"ok ({len(hits)} seeded hits reported)"))
        return 1 if failed else 0


def main(argv):
    args = argv[1:]
    if args and args[0] == "--self-test":
        return self_test()
    if not args:
        print(__doc__.strip())
        return 2
    root, dirs = args[0], args[1:] or DEFAULT_DIRS
    hits = check_tree(root, dirs)
    for h in hits:
        print(h)
    if hits:
        print(f"{len(hits)} comment(s) name a device, a date or a measured number: move the number to "
              "docs/performance.md or docs/design-measurements.md and point there.")
        return 1
    print("source comments: no device names, dates or measured numbers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
