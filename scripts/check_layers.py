#!/usr/bin/env python3
"""Checks the library's layering (docs/architecture.md, "Layers").

    check_layers.py [SOURCE_DIR]     check the tree (default: this script's repository)
    check_layers.py --self-test      check that seeded violations are caught

Fails (exit 1, one line per finding) on:
  * an include in src/ or mpi/ that points up or sideways: a file of layer L
    may include its own layer, the layers below L (LAYERS, transitively) and
    the public headers (sptensor/...); the backends' own headers
    (kernels/cpu/..., kernels/reference/...) only from kernels and dispatch,
    everyone else goes through the dispatcher;
  * an include in cuda/ of anything but its own folder and the plugin ABI
    header (dispatch/plugin_abi.h);
  * a source file under src/<layer>/ that cmake/sptensor_layers.cmake does not
    list in that layer, or a listed one that does not exist;
  * a DEPENDS list of cmake/sptensor_layers.cmake that differs from LAYERS.
Quoted includes are checked (angle-bracket ones name system and public
headers); an include that names a file beside the including one is its own
layer. Run by the ctest layers_include_check.
"""
import os
import re
import sys

# Each layer and the layers directly below it; a layer may include those
# and, transitively, everything below them.
LAYERS = {
    "util": [],  # header-only helpers
    "core": ["util"],  # tensor objects, formats and their builders, sorting, the context
    "io": ["core"],  # readers and writers
    "kernels": ["core"],  # the reference and OpenMP kernels (kernels/reference, kernels/cpu)
    "dispatch": ["kernels"],  # backend choice per call, the CUDA plugin loader and device copies
    "reorder": ["dispatch"],  # LEXI-ORDER, BFS-MCS, random relabelling
    "algo": ["dispatch"],  # CP-ALS, CP-APR, Tucker-HOOI, TTM chains: backend-neutral
    "api": ["algo", "reorder", "io"],  # the extern "C" layer
    "cli": ["util"],  # the command-line tool: the public C API only
    "mpi": ["api"],  # libsptensor_mpi.so (mpi/, beside src/)
}
# Layers built into libsptensor by cmake/sptensor_layers.cmake (util is an
# INTERFACE target there without sources, cli and mpi are built elsewhere).
CMAKE_LAYERS = ["core", "io", "kernels", "dispatch", "reorder", "algo", "api"]
# Folders whose headers only the kernels and the dispatcher may include.
BACKEND_FOLDERS = ("kernels/cpu/", "kernels/reference/")
BACKEND_USERS = {"kernels", "dispatch"}
# The one header of src/ the CUDA plugin may include.
PLUGIN_ABI_HEADER = "dispatch/plugin_abi.h"

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cu", ".cuh", ".inc")


def below(layer):
    """The layers `layer` may include, itself included."""
    seen, todo = {layer}, list(LAYERS[layer])
    while todo:
        lower = todo.pop()
        if lower not in seen:
            seen.add(lower)
            todo.extend(LAYERS[lower])
    return seen


def include_findings(layer, path, text, sibling_exists):
    """Findings for the quoted includes of one file of `layer` (a LAYERS key or "cuda")."""
    findings = []
    for lineno, target in ((text.count("\n", 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)):
        where = f"{path}:{lineno}: #include \"{target}\""
        if sibling_exists(target):
            continue  # a file beside this one: its own layer
        if layer == "cuda":
            if target != PLUGIN_ABI_HEADER:
                findings.append(f"{where}: cuda/ may include only its own folder and {PLUGIN_ABI_HEADER}")
            continue
        top = target.split("/", 1)[0]
        if top == "sptensor":
            continue  # the public headers
        if top not in LAYERS:
            findings.append(f"{where}: not a header of a layer (no such file beside {path})")
            continue
        if top not in below(layer):
            direction = "up" if layer in below(top) else "sideways"
            findings.append(f"{where}: {layer} may not include {top} (points {direction}; "
                            f"{layer} may include {', '.join(sorted(below(layer)))})")
        elif target.startswith(BACKEND_FOLDERS) and layer not in BACKEND_USERS:
            findings.append(f"{where}: a backend's own header; {layer} reaches the kernels through the dispatcher")
    return findings


def files_under(root, folder):
    for dirpath, _, names in os.walk(os.path.join(root, folder)):
        for name in sorted(names):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(dirpath, name)


def check_includes(root):
    findings = []
    groups = [(os.path.join("src", layer), layer) for layer in LAYERS if layer != "mpi"]
    groups += [("mpi", "mpi"), ("cuda", "cuda")]
    for folder, layer in groups:
        for full in files_under(root, folder):
            rel = os.path.relpath(full, root)
            with open(full, encoding="utf-8", errors="replace") as f:
                text = f.read()
            here = os.path.dirname(full)
            findings += include_findings(layer, rel, text, lambda t, here=here: os.path.isfile(os.path.join(here, t)))
    return findings


def parse_cmake_layers(text):
    """{layer: (depends, sources)} from the spt_add_layer(...) calls."""
    layers = {}
    for m in re.finditer(r"spt_add_layer\((.*?)\)", re.sub(r"#.*", "", text), re.S):
        words = m.group(1).split()
        name, section, depends, sources = words[0], None, [], []
        for w in words[1:]:
            if w in ("DEPENDS", "SOURCES"):
                section = w
            elif section == "DEPENDS":
                depends.append(w)
            elif section == "SOURCES":
                sources.append(w)
        layers[name] = (depends, sources)
    return layers


def cmake_findings(cmake_layers, sources_on_disk):
    """sources_on_disk: {layer: set of paths relative to src/}."""
    findings = []
    where = "cmake/sptensor_layers.cmake"
    for layer in CMAKE_LAYERS:
        if layer not in cmake_layers:
            findings.append(f"{where}: no spt_add_layer({layer} ...)")
            continue
        depends, listed = cmake_layers[layer]
        if sorted(depends) != sorted(LAYERS[layer]):
            findings.append(f"{where}: {layer} DEPENDS {' '.join(depends) or '(nothing)'}, "
                            f"scripts/check_layers.py says {' '.join(LAYERS[layer]) or '(nothing)'}")
        for src in sorted(sources_on_disk.get(layer, set()) - set(listed)):
            findings.append(f"{where}: src/{src} is not listed in layer {layer}")
        for src in sorted(set(listed) - sources_on_disk.get(layer, set())):
            findings.append(f"{where}: layer {layer} lists src/{src}, which is not a source of src/{layer}/")
    for layer in sorted(set(cmake_layers) - set(CMAKE_LAYERS)):
        findings.append(f"{where}: spt_add_layer({layer}) is not a layer of scripts/check_layers.py")
    return findings


def check_cmake(root):
    with open(os.path.join(root, "cmake", "sptensor_layers.cmake"), encoding="utf-8") as f:
        cmake_layers = parse_cmake_layers(f.read())
    on_disk = {}
    for layer in CMAKE_LAYERS:
        src_root = os.path.join(root, "src")
        on_disk[layer] = {os.path.relpath(p, src_root) for p in files_under(root, os.path.join("src", layer))
                          if p.endswith(".cpp")}
    return cmake_findings(cmake_layers, on_disk)


def self_test():
    """Seeded violations must be found, and clean inputs must pass."""
    nothing_beside = lambda target: False
    cases = [
        ("core", 'include "algo/cp_als.hpp"', True),  # up
        ("core", '#include "kernels/kernels.hpp"', True),  # up
        ("io", '#include "kernels/kernels.hpp"', True),  # sideways
        ("reorder", '#include "algo/cp_als.hpp"', True),  # sideways
        ("api", '#include "kernels/cpu/mttkrp_hbcsf_mode.hpp"', True),  # past the dispatcher
        ("cli", '#include "core/coo.hpp"', True),  # the CLI sees the public API only
        ("cuda", '#include "core/hbcsf.hpp"', True),
        ("core", '#include "core/coo.hpp"\n#include "util/printable.hpp"\n#include "sptensor/sptensor.h"', False),
        ("api", '#include "algo/cp_als.hpp"\n#include "io/io.hpp"\n#include "core/sort.hpp"', False),
        ("dispatch", '#include "kernels/cpu/mttkrp_hbcsf_mode.hpp"', False),
        ("cuda", '#include "dispatch/plugin_abi.h"', False),
    ]
    failures = []
    for layer, text, should_fail in cases:
        if not text.startswith("#"):
            text = "#" + text
        found = include_findings(layer, f"{layer}/seeded.cpp", text, nothing_beside)
        if bool(found) != should_fail:
            failures.append(f"{layer}: {text!r}: {'missed' if should_fail else 'wrongly flagged'} {found}")
    good = {layer: (list(LAYERS[layer]), [f"{layer}/a.cpp"]) for layer in CMAKE_LAYERS}
    disk = {layer: {f"{layer}/a.cpp"} for layer in CMAKE_LAYERS}
    if cmake_findings(good, disk):
        failures.append(f"clean CMake layers flagged: {cmake_findings(good, disk)}")
    unlisted = {**disk, "core": {"core/a.cpp", "core/b.cpp"}}
    if not cmake_findings(good, unlisted):
        failures.append("an unlisted source was missed")
    upward = {**good, "core": (["dispatch"], ["core/a.cpp"])}
    if not cmake_findings(upward, disk):
        failures.append("a DEPENDS list pointing up was missed")
    for f in failures:
        print("self-test FAILED:", f)
    if not failures:
        print(f"self-test OK: {len(cases)} include cases, 3 CMake cases")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    findings = check_includes(root) + check_cmake(root)
    for f in findings:
        print(f)
    if findings:
        print(f"FAIL: {len(findings)} layering problem(s); the rule and the table: docs/architecture.md, \"Layers\"")
        return 1
    print("layers OK: no include points up or sideways; every source is in its layer's target")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
