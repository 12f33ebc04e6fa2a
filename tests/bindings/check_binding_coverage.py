#!/usr/bin/env python3
"""Every exported C function is bound in Python and in Fortran, or listed
with a reason in docs/architecture.md ("Generated bindings", the table of
functions not bound).

usage: check_binding_coverage.py ROOT [LIBSPTENSOR]

Exports: abi/libsptensor.symbols and abi/libsptensor_mpi.symbols (the
ctest abi_baseline ties them to the built libraries). Bound in Python: a
prototype in python/sptensor/_capi.py or _capi_mpi.py (generated; the
latter is what sptensor.mpi binds). Bound in Fortran: a bind(c, name="...") interface
or a module procedure of the same name in include/sptensor/*.f90. Fails
(exit 1, one line per problem) when an export is neither bound nor listed,
when a listed function is bound after all or is no export, or when a
binding names a function the library does not export. With LIBSPTENSOR,
every generated prototype is also applied to the loaded library (each
symbol must resolve).
"""
import ast
import ctypes
import importlib.util
import os
import re
import sys

LANGUAGES = ("Python", "Fortran")


def symbols(path):
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def load_capi(root):
    spec = importlib.util.spec_from_file_location("sptensor_capi", os.path.join(root, "python/sptensor/_capi.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mpi_python_names(root):
    """Keys of the SIGNATURES dict literal in sptensor/_capi_mpi.py (read,
    not imported: it is a submodule of the package, which needs numpy)."""
    tree = ast.parse(open(os.path.join(root, "python/sptensor/_capi_mpi.py")).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SIGNATURES" for t in node.targets):
            return {k.value for k in node.value.keys}
    return set()


def fortran_names(root, exports):
    names = set()
    folder = os.path.join(root, "include/sptensor")
    for name in os.listdir(folder):
        if not name.endswith(".f90"):
            continue
        text = open(os.path.join(folder, name)).read()
        names |= set(re.findall(r'bind\(c,\s*name="(\w+)"\)', text))
        # module procedures named as the exported C function (spt_X_options_init)
        names |= set(re.findall(r"^\s*function (spt_\w+)\(", text, re.M)) & exports
    return names


def exclusions(root):
    """{(function, language): reason} from the table in docs/architecture.md,
    section "Generated bindings": | `spt_x` | Python, Fortran | reason |."""
    text = open(os.path.join(root, "docs/architecture.md")).read()
    start = text.find("\n## Generated bindings")
    if start < 0:
        sys.exit("check_binding_coverage.py: docs/architecture.md has no '## Generated bindings' section")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end > 0 else len(text)]
    out = {}
    for m in re.finditer(r"^\| `(spt_\w+)` \| ([A-Za-z, ]+) \| (.+?) \|\s*$", section, re.M):
        for lang in (x.strip() for x in m.group(2).split(",")):
            if lang not in LANGUAGES:
                sys.exit(f"check_binding_coverage.py: unknown language {lang!r} for {m.group(1)}")
            out[(m.group(1), lang)] = m.group(3)
    return out


def main(root, library=None):
    exports = symbols(os.path.join(root, "abi/libsptensor.symbols"))
    exports |= symbols(os.path.join(root, "abi/libsptensor_mpi.symbols"))
    capi = load_capi(root)
    bound = {
        "Python": set(capi.SIGNATURES) | mpi_python_names(root),
        "Fortran": fortran_names(root, exports) - {"strlen"},  # strlen: the C library's, for strings
    }
    excluded = exclusions(root)
    problems = []
    for lang in LANGUAGES:
        for name in sorted(bound[lang] - exports):
            problems.append(f"{lang} binds {name}, which no library exports")
        for name in sorted(exports):
            if name not in bound[lang] and (name, lang) not in excluded:
                problems.append(f"{name} has no {lang} binding and is not listed in docs/architecture.md "
                                f"(Generated bindings)")
    for (name, lang), reason in sorted(excluded.items()):
        if name not in exports:
            problems.append(f"docs/architecture.md lists {name} ({lang}), which no library exports")
        elif name in bound[lang]:
            problems.append(f"docs/architecture.md lists {name} as not bound in {lang}, but it is")
    if library:
        lib = ctypes.CDLL(library)
        for name, (restype, argtypes) in capi.SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                problems.append(f"{name}: generated prototype, but {library} does not export it")
                continue
            fn.restype, fn.argtypes = restype, argtypes
    for p in problems:
        print("check_binding_coverage.py:", p)
    if problems:
        return 1
    counts = ", ".join(f"{lang} {len(exports & bound[lang])}" for lang in LANGUAGES)
    print(f"check_binding_coverage.py: {len(exports)} exported functions; bound: {counts}; "
          f"listed as not bound: {len(excluded)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
