#!/usr/bin/env python3
"""Checks the x86-64-v3 copy of the CPU kernels (src/kernels/cpu/variant.hpp).

usage: check_cpu_variant.py OBJECT...   (the objects of sptensor_kernels_x86_64_v3)
       check_cpu_variant.py --self-test CXX   (compiles a good and a bad copy)

Two copies of the kernels live in one library. Code outside the copy's own
namespace (spt::kernels::cpu_x86_64_v3) that an object defines with a global
or weak symbol -- inline functions and template instances from headers, the
standard library's among them -- may be the copy the linker keeps for the
whole library, so it must not use an instruction that a baseline x86-64 CPU
lacks. Fails when such a function uses one (VEX/EVEX-encoded instructions,
BMI1/2, POPCNT, LZCNT), when an object has a static initialiser (it runs at
load on every CPU), and when no kernel in the copy's namespace uses AVX (the
copy would then not be an x86-64-v3 build at all). Exit 77 (ctest skip)
without nm, objdump or c++filt.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

VARIANT = "spt::kernels::cpu_x86_64_v3::"
VARIANT_MANGLED = "_ZN3spt7kernels13cpu_x86_64_v3"  # names in the copy's namespace, templates too
# Mnemonics a baseline (SSE2) x86-64 CPU does not run.
BEYOND_BASELINE = re.compile(
    r"^\s*[0-9a-f]+:\s+(v[a-z0-9]+|andn|bextr|blsi|blsmsk|blsr|bzhi|mulx|pdep|pext|rorx|sarx|shlx|shrx|"
    r"popcnt|lzcnt|tzcnt)\b")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def global_functions(obj):
    """Mangled names of the functions obj defines with global or weak binding."""
    names = []
    for line in run("nm", "--defined-only", obj).splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "W"):
            names.append(parts[2])
    return names


def all_symbols(obj):
    """Every symbol name obj defines, local ones included."""
    return [line.split()[-1] for line in run("nm", "--defined-only", obj).splitlines() if line.strip()]


def demangle(names):
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def beyond_baseline(obj, symbol):
    """The first instruction of `symbol` in obj that a baseline CPU lacks, or None."""
    for line in run("objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}", obj).splitlines():
        if BEYOND_BASELINE.match(line):
            return line.strip()
    return None


# A copy laid out as variant.hpp says (pragma after the includes), and one
# with the pragma before a standard header, whose vector code then leaks.
GOOD = """#include <vector>
#pragma GCC target("avx2,fma,bmi,bmi2,popcnt")
namespace spt::kernels::cpu_x86_64_v3 {
float sum_squares(std::vector<float>& v) { v.push_back(1.f); float s = 0; for (float x : v) s += x * x; return s; }
}
"""
BAD = GOOD.replace("#include <vector>\n", "").replace("namespace spt", "#include <vector>\nnamespace spt", 1)


def self_test(cxx):
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name, text in (("good", GOOD), ("bad", BAD)):
            src, obj = os.path.join(tmp, name + ".cpp"), os.path.join(tmp, name + ".o")
            with open(src, "w", encoding="utf-8") as f:
                f.write(text)
            subprocess.run([cxx, "-std=c++17", "-O3", "-c", src, "-o", obj], check=True)
            results[name] = subprocess.run([sys.executable, __file__, obj], capture_output=True, text=True).returncode
    if results != {"good": 0, "bad": 1}:
        print(f"FAIL: self-test exit codes {results}, expected good 0 and bad 1")
        return 1
    print("ok: the check passes a well-made copy and flags a leaking one")
    return 0


def main(objects):
    if objects[:1] == ["--self-test"] and len(objects) == 2:
        if not all(shutil.which(t) for t in ("nm", "objdump", "c++filt")):
            print("SKIP: nm, objdump or c++filt not found")
            return 77
        return self_test(objects[1])
    if not objects:
        print(__doc__)
        return 2
    if not all(shutil.which(t) for t in ("nm", "objdump", "c++filt")):
        print("SKIP: nm, objdump or c++filt not found")
        return 77
    failures, wide_kernels, checked = [], 0, 0
    for obj in objects:
        mangled = global_functions(obj)
        for name, readable in zip(mangled, demangle(mangled)):
            found = beyond_baseline(obj, name)
            if name.startswith(VARIANT_MANGLED):
                wide_kernels += found is not None
            else:
                checked += 1
                if found:
                    failures.append(f"{obj}: {readable}\n    shared with the baseline copy, but uses: {found}")
        # A static initialiser runs when the library loads, on every CPU.
        if any("_GLOBAL__sub_I" in n for n in all_symbols(obj)):
            failures.append(f"{obj}: has a static initialiser, which would run x86-64-v3 code at load on any CPU")
    for f in failures:
        print("FAIL:", f)
    if wide_kernels == 0:
        print(f"FAIL: no function of {VARIANT} uses an x86-64-v3 instruction: the copy is not built for x86-64-v3")
        failures.append("no wide kernels")
    if failures:
        print("A header's inline code was compiled for x86-64-v3: include it before SPT_CPU_VARIANT_TARGET "
              "(src/kernels/cpu/variant.hpp).")
        return 1
    print(f"ok: {checked} shared functions baseline-only; {wide_kernels} kernel functions use x86-64-v3 instructions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
