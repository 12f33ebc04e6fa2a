#!/usr/bin/env python3
"""Every device kernel has a reference kernel and a GPU test against it.

    check_device_kernels.py [--self-test] ROOT

For every DEVICE entry of the kernel lists (src/kernels/kernels.hpp,
src/kernels/dense.hpp: X(DEVICE, ret, name, (params))) this fails unless
  - a file under src/kernels/reference/ defines `name(const Exec& ...`
    (the reference kernel; the list stamps only its declaration), and
  - a GPU test file tests/unit/test_cuda*.cpp runs the device kernel
    (`SPT_DISPATCH(ctx, name, ...)` or `DeviceKernels::name(`) and, in the
    same file, the reference kernel of that same entry: a call of
    `reference::name(`, or of a helper `reference_name(` of tests/common/
    that itself calls `kernels::reference::name(`.
A comparison against the COO reference alone does not count for a kernel
of another format. docs/architecture.md, "Kernel lists".

--self-test builds a small tree with one kernel of each kind of violation
(and one that passes) and checks that exactly the violations are reported.
"""
import glob
import os
import re
import sys
import tempfile

LIST_FILES = ["src/kernels/kernels.hpp", "src/kernels/dense.hpp"]
ENTRY = re.compile(r"\bX\(\s*DEVICE\s*,\s*[^,]+,\s*(\w+)\s*,")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def device_entries(root):
    names = []
    for rel in LIST_FILES:
        path = os.path.join(root, rel)
        if os.path.exists(path):
            for name in ENTRY.findall(read(path)):
                if name not in names:
                    names.append(name)
    return names


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def problems(root):
    names = device_entries(root)
    if not names:
        return [f"no DEVICE entries found in {', '.join(LIST_FILES)}"]
    references = {p: strip_comments(read(p)) for p in sorted(glob.glob(os.path.join(root, "src/kernels/reference/*.cpp")))}
    helpers = "\n".join(strip_comments(read(p)) for p in sorted(glob.glob(os.path.join(root, "tests/common/*.hpp"))))
    tests = {p: strip_comments(read(p)) for p in sorted(glob.glob(os.path.join(root, "tests/unit/test_cuda*.cpp")))}
    out = []
    for name in names:
        defined = re.compile(r"\b" + name + r"\s*\(\s*const\s+Exec\s*&")
        if not any(defined.search(text) for text in references.values()):
            out.append(f"{name}: DEVICE kernel without a reference kernel in src/kernels/reference/")
        device_call = re.compile(r"SPT_DISPATCH\(\s*[^,]+,\s*" + name + r"\s*,|DeviceKernels::" + name + r"\s*\(")
        reference_call = re.compile(r"\breference::" + name + r"\s*\(")
        helper_call = re.compile(r"\breference_" + name + r"\s*(<[^>]*>)?\s*\(")
        helper_ok = bool(helper_call.search(helpers)) and bool(reference_call.search(helpers))
        tested = [p for p, text in tests.items()
                  if device_call.search(text)
                  and (reference_call.search(text) or (helper_ok and helper_call.search(text)))]
        if not tested:
            out.append(f"{name}: no tests/unit/test_cuda*.cpp runs the device kernel and compares it with "
                       f"kernels::reference::{name} (directly or through a tests/common helper reference_{name})")
    return out


def self_test():
    files = {
        "src/kernels/kernels.hpp": (
            "#define SPT_TYPED_KERNELS(T, X) \\\n"
            "  X(DEVICE, void, good, (int a)) \\\n"
            "  X(DEVICE, void, via_helper, (int a)) \\\n"
            "  X(DEVICE, void, no_reference, (int a)) \\\n"
            "  X(DEVICE, void, untested, (int a)) \\\n"
            "  X(DEVICE, void, coo_only, (int a)) \\\n"
            "  X(HOST, void, host_only, (int a))\n"),
        "src/kernels/reference/k.cpp": (
            "void good(const Exec& exec, int a) {}\n"
            "void via_helper(const Exec&, int a) {}\n"
            "void untested(const Exec& exec, int a) {}\n"
            "void coo_only(const Exec& exec, int a) {}\n"
            "// void no_reference(const Exec& exec, int a) {}  (a comment does not count)\n"),
        "tests/common/refs.hpp": "inline int reference_via_helper(int a) { kernels::reference::via_helper(e, a); }\n",
        "tests/unit/test_cuda_x.cpp": (
            "SPT_DISPATCH(ctx, good, 1); kernels::reference::good(e, 1);\n"
            "dispatch::DeviceKernels::via_helper(ctx, 1); reference_via_helper<T>(1);\n"
            "SPT_DISPATCH(ctx, no_reference, 1); kernels::reference::no_reference(e, 1);\n"
            "SPT_DISPATCH(ctx, coo_only, 1); kernels::reference::mttkrp(e, 1);\n"
            "// SPT_DISPATCH(ctx, untested, 1); kernels::reference::untested(e, 1);\n"),
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        found = problems(root)
    reported = sorted({p.split(":")[0] for p in found})
    expected = ["coo_only", "no_reference", "untested"]
    if reported != expected:
        print(f"self-test: FAILED: reported {reported}, expected {expected}")
        for p in found:
            print("  " + p)
        return 1
    print(f"self-test: ok ({len(found)} seeded violations reported)")
    return 0


def main(argv):
    args = argv[1:]
    if args and args[0] == "--self-test":
        return self_test()
    if len(args) != 1:
        print(__doc__)
        return 2
    found = problems(args[0])
    for p in found:
        print(p)
    names = device_entries(args[0])
    if found:
        print(f"check_device_kernels: {len(found)} problem(s)")
        return 1
    print(f"check_device_kernels: ok ({len(names)} device kernels, each with a reference kernel and a GPU test "
          f"against it)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
