#!/usr/bin/env python3
"""Generates the language bindings of libsptensor from its C headers.

usage: gen_bindings.py [--check | --self-test] [--cc CC] [--root DIR]

Reads include/sptensor/sptensor.h (and the headers it includes) through the
C preprocessor and pycparser (a C99 parser, the one cffi uses), and writes:

  python/sptensor/_capi.py          ctypes Structures, callback types,
                                    enumerators, numeric #defines and the
                                    restype/argtypes of every function
  python/sptensor/_capi_mpi.py      the same for what sptensor_mpi.h adds
                                    (a stand-in mpi.h; functions taking an
                                    MPI_Comm are left out: the *_fcomm
                                    variants take the Fortran handle)
  include/sptensor/sptensor_capi.f90  Fortran module sptensor_capi:
                                    enumerators and #defines as parameters,
                                    bind(c) derived types, bind(c) interfaces
  include/sptensor/sptensor_mpi_capi.f90  module sptensor_mpi_capi: the
                                    same for sptensor_mpi.h, over sptensor_capi
  tests/python_pkg/layout_probe.c   prints sizeof/offsetof of every struct
                                    for the ctypes layout check

With --check nothing is written: the exit status is 1 when a committed file
differs from what the headers give (ctest bindings_up_to_date). --self-test
checks that --check notices a header change, in a scratch copy of the tree.
Exit 77 (ctest skip) when pycparser is missing, except under CI=true.

What the C types cannot say (is `int *x` one value or an array? may an
options pointer be NULL?) is decided by the rules in fortran_argument()
from the parameter's type, const-ness and name, and by the headers' own
words: a parameter documented "may be NULL" is passed as type(c_ptr).
See docs/architecture.md, "Generated bindings".
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

try:
    from pycparser import c_ast, c_parser
except ImportError:
    print("gen_bindings.py: pycparser is not installed (Debian: python3-pycparser; pip: pycparser)",
          file=sys.stderr)
    sys.exit(1 if os.environ.get("CI") == "true" else 77)

HEADER = "include/sptensor/sptensor.h"
MPI_HEADER = "include/sptensor/sptensor_mpi.h"
# Public headers that sptensor.h does not include (a program includes them
# itself, and each includes sptensor.h) but whose declarations belong to the
# main bindings: parsed together with HEADER.
STANDALONE_HEADERS = ["sptensor/gcp.h"]
PY_OUT = "python/sptensor/_capi.py"
PY_MPI_OUT = "python/sptensor/_capi_mpi.py"
F90_OUT = "include/sptensor/sptensor_capi.f90"
F90_MPI_OUT = "include/sptensor/sptensor_mpi_capi.f90"
PROBE_OUT = "tests/python_pkg/layout_probe.c"

# Stand-ins for <stddef.h> and <stdint.h>: the generator keeps these names
# as they are (each maps to a fixed-size ctypes / iso_c_binding kind below),
# so the output does not depend on the machine's system headers.
FAKE_HEADERS = {
    "stddef.h": "typedef int size_t;\n",
    # MPI_Fint is a C int (Open MPI, MPICH); MPI_Comm an opaque stand-in
    "mpi.h": "typedef int MPI_Fint;\ntypedef struct spt_mpi_comm_stand_in MPI_Comm;\n",
    "stdint.h": "".join(f"typedef int {t};\n" for t in
                        ("int8_t", "int16_t", "int32_t", "int64_t",
                         "uint8_t", "uint16_t", "uint32_t", "uint64_t")),
}

# C scalar type name -> (ctypes name, Fortran type, Fortran kind import)
SCALARS = {
    "int": ("ctypes.c_int", "integer(c_int)", "c_int"),
    "unsigned int": ("ctypes.c_uint", "integer(c_int)", "c_int"),
    "long": ("ctypes.c_long", "integer(c_long)", "c_long"),
    "double": ("ctypes.c_double", "real(c_double)", "c_double"),
    "float": ("ctypes.c_float", "real(c_float)", "c_float"),
    "char": ("ctypes.c_char", "character(kind=c_char)", "c_char"),
    "size_t": ("ctypes.c_size_t", "integer(c_size_t)", "c_size_t"),
    "int8_t": ("ctypes.c_int8", "integer(c_int8_t)", "c_int8_t"),
    "int16_t": ("ctypes.c_int16", "integer(c_int16_t)", "c_int16_t"),
    "int32_t": ("ctypes.c_int32", "integer(c_int32_t)", "c_int32_t"),
    "int64_t": ("ctypes.c_int64", "integer(c_int64_t)", "c_int64_t"),
    # Fortran has no unsigned kinds: the signed kind of the same size
    "uint8_t": ("ctypes.c_uint8", "integer(c_int8_t)", "c_int8_t"),
    "uint16_t": ("ctypes.c_uint16", "integer(c_int16_t)", "c_int16_t"),
    "uint32_t": ("ctypes.c_uint32", "integer(c_int32_t)", "c_int32_t"),
    "uint64_t": ("ctypes.c_uint64", "integer(c_int64_t)", "c_int64_t"),
}


# --------------------------------------------------------------------------
# Model of the headers
# --------------------------------------------------------------------------
class Type:
    """A C type reduced to what the bindings need.

    kind: 'scalar' (name in SCALARS), 'enum', 'struct' (a typedef'd struct
    with fields), 'handle' (an opaque struct), 'funptr' (a typedef'd
    function pointer), 'void', 'pointer' (to `target`) or 'array' (`count`
    of `target`). `name` is the C typedef name where there is one."""

    def __init__(self, kind, name=None, target=None, const=False, count=None):
        self.kind, self.name, self.target, self.const, self.count = kind, name, target, const, count

    def c(self):
        """C spelling (for comments)."""
        if self.kind == "pointer":
            inner = self.target.c()
            return f"{inner} *" + ("const" if self.const else "")
        if self.kind == "array":
            return f"{self.target.c()}[{self.count}]"
        return ("const " if self.const else "") + (self.name or self.kind)

    def depth(self):
        """Number of pointer levels."""
        return 1 + self.target.depth() if self.kind == "pointer" else 0

    def base(self):
        """The type under all pointer levels."""
        return self.target.base() if self.kind == "pointer" else self


class Model:
    def __init__(self):
        self.typedefs = {}   # name -> Type
        self.enums = []      # (enum type name, [(enumerator, value)])
        self.structs = []    # (name, [(field, Type)])
        self.funptrs = []    # (name, return Type, [(param, Type)])
        self.functions = []  # (name, return Type, [(param, Type)])
        self.defines = []    # (name, value, C type name)
        self.docs = {}       # function name -> its doc comment text
        self.order = []      # struct and callback typedef names, as declared


def preprocess(cc, root, header):
    """The header after the C preprocessor, with SPT_API empty (neither
    __GNUC__ nor _WIN32: the export macro's portable branch)."""
    with tempfile.TemporaryDirectory() as fake:
        for name, text in FAKE_HEADERS.items():
            with open(os.path.join(fake, name), "w") as f:
                f.write(text)
        cmd = [cc, "-E", "-P", "-nostdinc", "-undef", "-std=c99", "-I", fake,
               "-I", os.path.join(root, "include"), input_file(fake, root, header)]
        return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def input_file(fake, root, header):
    """What the preprocessor reads for `header`: HEADER with the
    STANDALONE_HEADERS after it (a file written into the folder `fake`)."""
    if header != HEADER:
        return os.path.join(root, header)
    path = os.path.join(fake, "spt_bindings_input.h")
    with open(path, "w") as f:
        f.write(f'#include "{os.path.join(root, HEADER)}"\n')
        f.writelines(f"#include <{h}>\n" for h in STANDALONE_HEADERS)
    return path


def evaluate(node, enums):
    """Value of an integer constant expression (enumerators, #defines)."""
    if isinstance(node, c_ast.Constant):
        text = node.value.rstrip("uUlL")
        if node.type in ("double", "float"):
            return float(node.value.rstrip("fFlL"))
        return int(text, 0) if not (len(text) > 1 and text[0] == "0" and text.isdigit()) else int(text, 8)
    if isinstance(node, c_ast.ID):
        return enums[node.name]
    if isinstance(node, c_ast.Cast):
        return evaluate(node.expr, enums)
    if isinstance(node, c_ast.UnaryOp):
        v = evaluate(node.expr, enums)
        return {"-": lambda: -v, "+": lambda: v, "~": lambda: ~v}[node.op]()
    if isinstance(node, c_ast.BinaryOp):
        a, b = evaluate(node.left, enums), evaluate(node.right, enums)
        ops = {"+": a.__add__, "-": a.__sub__, "*": a.__mul__, "<<": a.__lshift__, ">>": a.__rshift__,
               "|": a.__or__, "&": a.__and__}
        return ops[node.op](b)
    raise ValueError(f"unsupported constant expression {type(node).__name__}")


def doc_comments(root):
    """Function name -> the /** ... */ comment just before its declaration."""
    docs = {}
    pattern = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*SPT_(?:MPI_)?API\s[^;(]*?\b(spt_\w+)\s*\(", re.S)
    folder = os.path.join(root, "include", "sptensor")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".h"):
            with open(os.path.join(folder, name)) as f:
                for m in pattern.finditer(f.read()):
                    docs[m.group(2)] = " ".join(m.group(1).replace("*", " ").split())
    return docs


class Builder(c_ast.NodeVisitor):
    def __init__(self, model):
        self.m = model
        self.enum_values = {}

    def convert(self, node, const=False):
        """pycparser type node -> Type."""
        if isinstance(node, c_ast.TypeDecl):
            quals = "const" in (node.quals or [])
            return self.convert(node.type, const or quals)
        if isinstance(node, c_ast.PtrDecl):
            return Type("pointer", target=self.convert(node.type), const="const" in (node.quals or []))
        if isinstance(node, c_ast.ArrayDecl):
            count = evaluate(node.dim, self.enum_values)
            return Type("array", target=self.convert(node.type), count=count)
        if isinstance(node, c_ast.IdentifierType):
            name = " ".join(node.names)
            if name == "void":
                return Type("void", const=const)
            if name in SCALARS:
                return Type("scalar", name=name, const=const)
            t = self.m.typedefs[name]
            return Type(t.kind, name=t.name, target=t.target, const=const, count=t.count)
        if isinstance(node, c_ast.FuncDecl):
            return Type("funptr")
        raise ValueError(f"unsupported type node {type(node).__name__}")

    def params(self, func):
        out = []
        for p in (func.args.params if func.args else []):
            if isinstance(p.type, c_ast.TypeDecl) and isinstance(p.type.type, c_ast.IdentifierType) \
                    and p.type.type.names == ["void"]:
                continue
            out.append((p.name, self.convert(p.type)))
        return out

    def enum(self, enum):
        items, value = [], -1
        for e in enum.values.enumerators:
            value = evaluate(e.value, self.enum_values) if e.value is not None else value + 1
            self.enum_values[e.name] = value
            items.append((e.name, value))
        return items

    def visit_Typedef(self, node):
        name, t = node.name, node.type
        if name in SCALARS:
            return  # the stand-in <stdint.h>
        if isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.Enum):
            self.m.enums.append((name, self.enum(t.type)))
            self.m.typedefs[name] = Type("enum", name=name)
        elif isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.Struct):
            s = t.type
            if s.decls is None:
                self.m.typedefs[name] = Type("handle", name=name)
            else:
                self.m.typedefs[name] = Type("struct", name=name)
                self.m.order.append(name)
                self.m.structs.append((name, [(d.name, self.convert(d.type)) for d in s.decls]))
        elif isinstance(t, c_ast.PtrDecl) and isinstance(t.type, c_ast.FuncDecl):
            self.m.typedefs[name] = Type("funptr", name=name)
            self.m.order.append(name)
            self.m.funptrs.append((name, self.convert(t.type.type), self.params(t.type)))
        elif isinstance(t, c_ast.TypeDecl) and isinstance(t.type, c_ast.IdentifierType):
            target = self.convert(t)
            self.m.typedefs[name] = target  # e.g. spt_index -> uint32_t (the name stays uint32_t)
        else:
            raise ValueError(f"unsupported typedef {name}")

    def visit_Decl(self, node):
        if isinstance(node.type, c_ast.FuncDecl):
            f = node.type
            self.m.functions.append((node.name, self.convert(f.type), self.params(f)))
        elif isinstance(node.type, c_ast.Enum) and node.type.values is not None:
            self.m.enums.append((node.type.name, self.enum(node.type)))


def numeric_defines(cc, root, header, enum_values):
    """The headers' object-like SPT_* macros whose body is a constant
    expression (SPT_VERSION_MAJOR, SPT_MAX_ORDER, ...): (name, value, kind)."""
    with tempfile.TemporaryDirectory() as fake:
        for name, text in FAKE_HEADERS.items():
            with open(os.path.join(fake, name), "w") as f:
                f.write(text)
        cmd = [cc, "-E", "-dM", "-nostdinc", "-undef", "-std=c99", "-I", fake,
               "-I", os.path.join(root, "include"), input_file(fake, root, header)]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    parser = c_parser.CParser()
    out = []
    for line in sorted(text.splitlines()):
        m = re.match(r"#define (SPT_\w+) (.+)$", line)
        if not m:
            continue
        name, body = m.groups()
        prelude = "".join(FAKE_HEADERS.values())
        try:
            ast = parser.parse(prelude + f"long long x = {body};")
            value = evaluate(ast.ext[-1].init, enum_values)
        except Exception:
            continue  # not a constant (SPT_API and the like)
        ctype = "uint64_t" if "uint64_t" in body or abs(value) >= 2 ** 31 else "int"
        out.append((name, value, ctype))
    return out


def parse(cc, root, header=HEADER):
    model = Model()
    text = preprocess(cc, root, header)
    ast = c_parser.CParser().parse(text, filename=header)
    builder = Builder(model)
    builder.visit(ast)
    model.defines = numeric_defines(cc, root, header, builder.enum_values)
    model.docs = doc_comments(root)
    DOCS.update(model.docs)
    return model


# --------------------------------------------------------------------------
# Python (ctypes)
# --------------------------------------------------------------------------
def py_type(t, parameter=False, qualified=frozenset()):
    """ctypes expression for a Type (a field, or with parameter=True a
    function parameter). Struct and callback names in `qualified` belong to
    the base module and are written _capi.X."""
    if t.kind == "void":
        return "None"
    if t.kind == "scalar":
        return SCALARS[t.name][0]
    if t.kind == "enum":
        return "ctypes.c_int"
    if t.kind in ("struct", "funptr"):
        return f"_capi.{t.name}" if t.name in qualified else t.name
    if t.kind == "array":
        return f"({py_type(t.target, qualified=qualified)} * {t.count})"
    if t.kind == "pointer":
        target, depth = t.base(), t.depth()
        if target.kind == "scalar" and target.name == "char" and depth == 1:
            return "ctypes.c_char_p"
        if parameter and target.kind in ("scalar", "enum"):
            # A parameter pointing at numbers (an array, an output value, or
            # where the library stores an array's address) is an untyped
            # address: callers pass a numpy address (.ctypes.data), a ctypes
            # array, or byref() of any ctypes variable.
            return "ctypes.c_void_p"
        if target.kind in ("handle", "void"):
            inner = "ctypes.c_void_p"  # opaque handles and untyped data are addresses
            depth -= 1
        else:
            inner = py_type(target, qualified=qualified)
        for _ in range(depth):
            inner = f"ctypes.POINTER({inner})"
        return inner
    raise ValueError(f"no ctypes mapping for {t.c()}")


def camel(name):
    """spt_cpd_options -> CpdOptions (the package's names for the structs)."""
    return "".join(part.capitalize() for part in name[len("spt_"):].split("_"))


def emit_python(m, base=None):
    """_capi.py from the model; with `base` (the model of sptensor.h), the
    module of the MPI header: only what that header adds, over _capi."""
    header, extra = (HEADER, "") if base is None else (MPI_HEADER, "from . import _capi\n")
    seen = base_names(base)
    m = without(m, seen)
    out = [f'''"""ctypes view of the libsptensor C ABI: GENERATED by scripts/gen_bindings.py
from {header} and the headers it includes. Do not edit; run the script.

Every enumerator and numeric #define as an int, every struct as a
ctypes.Structure (under its C name and a CamelCase alias without the spt_
prefix), every callback typedef as a ctypes.CFUNCTYPE, and SIGNATURES:
function name -> (restype, argtypes) for every exported function.
"""
import ctypes
{extra}
''']
    out.append("# --- enumerators ---\n")
    for enum, items in m.enums:
        out.append(f"# {enum}\n")
        for name, value in items:
            out.append(f"{name} = {value}\n")
    out.append("\n# --- numeric #defines ---\n")
    for name, value, _ in m.defines:
        out.append(f"{name} = {value}\n")
    out.append("\n# --- callback types and structs, in the headers' order ---\n")
    funptrs = {name: (ret, params) for name, ret, params in m.funptrs}
    structs = dict(m.structs)
    for name in [n for n in m.order if n in funptrs or n in structs]:
        if name in funptrs:
            ret, params = funptrs[name]
            args = ", ".join([py_type(ret, qualified=seen)] + [py_type(t, qualified=seen) for _, t in params])
            out.append(f"\n{name} = ctypes.CFUNCTYPE({args})\n")
            continue
        fields = structs[name]
        out.append(f"\n\nclass {name}(ctypes.Structure):\n    \"\"\"{name} (C header).\"\"\"\n")
        out.append("    _fields_ = [\n")
        for field, t in fields:
            out.append(f"        (\"{field}\", {py_type(t, qualified=seen)}),\n")
        out.append("    ]\n")
        out.append(f"\n\n{camel(name)} = {name}\n")
    out.append("\nSTRUCTS = (\n")
    for name, _ in m.structs:
        out.append(f"    {name},\n")
    out.append(")\n")
    out.append("\n# name -> (restype, argtypes); restype None for void functions.\nSIGNATURES = {\n")
    for name, ret, params in m.functions:
        args = ", ".join(py_type(t, parameter=True, qualified=seen) for _, t in params)
        out.append(f"    \"{name}\": ({py_type(ret, qualified=seen)}, [{args}]),\n")
    out.append("}\n")
    return "".join(out)


def base_names(base):
    """Every name the base model defines (empty without one)."""
    if base is None:
        return frozenset()
    return frozenset([n for _, items in base.enums for n, _ in items] + [e for e, _ in base.enums]
                     + [n for n, _, _ in base.defines] + [n for n, _ in base.structs]
                     + [n for n, _, _ in base.funptrs] + [n for n, _, _ in base.functions])


def without(m, names):
    """The model less the entities named in `names`, and less the functions
    taking an MPI_Comm by value (its type is the MPI implementation's: the
    *_fcomm variants take the Fortran handle instead)."""
    if not names:
        return m
    out = Model()
    out.enums = [(e, items) for e, items in m.enums if e not in names]
    out.defines = [d for d in m.defines if d[0] not in names]
    out.structs = [x for x in m.structs if x[0] not in names]
    out.funptrs = [x for x in m.funptrs if x[0] not in names]
    out.functions = [x for x in m.functions if x[0] not in names
                     and not any(t.kind == "handle" and t.name == "MPI_Comm" for _, t in x[2])]
    out.docs = m.docs
    out.order = m.order
    return out


def emit_probe(m):
    """A C program printing each struct's size and field offsets."""
    standalone_includes = "".join(f"#include <{h}>\n" for h in STANDALONE_HEADERS)
    out = [f"""/* GENERATED by scripts/gen_bindings.py from {HEADER}; do not edit.
 * Prints sizeof and offsetof of every public struct, one
 * "struct field offset" line per field and "struct - size" per struct;
 * tests/python_pkg/test_package.py compares them with the ctypes
 * Structures of python/sptensor/_capi.py. */
#include <stddef.h>
#include <stdio.h>

#include <sptensor/sptensor.h>
{standalone_includes}
#define S(type) printf("%s - %zu\\n", #type, sizeof(type))
#define F(type, field) printf("%s %s %zu\\n", #type, #field, offsetof(type, field))

int main(void) {{
"""]
    for name, fields in m.structs:
        out.append(f"  S({name});\n")
        for field, _ in fields:
            out.append(f"  F({name}, {field});\n")
    out.append("  return 0;\n}\n")
    return "".join(out)

# --------------------------------------------------------------------------
# Fortran (iso_c_binding)
# --------------------------------------------------------------------------
# Pointer parameters the C types leave open, decided here once:
# 2-D arrays with a leading dimension (index k of mode m at indices[m*ld+k])
# are passed as c_loc(...) addresses, as the values arrays (void *) are.
FORTRAN_ADDRESS_PARAMS = {"indices"}
# Non-const pointers to numbers that receive several values (the rest
# receive one): names ending in these.
FORTRAN_ARRAY_OUTPUT_SUFFIXES = ("dims", "modes", "modes_out")
# Output arrays with other names, per function.
FORTRAN_ARRAY_OUTPUTS = {("spt_permutation_get", "out")}
# Optional (NULL-able) pointers whose header comment does not say so yet.
FORTRAN_OPTIONAL = {("spt_write", "opts")}
# Handles passed by address that the library reads and then overwrites
# (it takes the object over and stores NULL).
FORTRAN_INOUT_HANDLES = {("spt_cpd_als_take", "x")}


def nullable(doc, param):
    """True when the function's comment says `param` may be NULL (then the
    Fortran argument is a type(c_ptr) so that c_null_ptr can be passed)."""
    word = re.escape(param)
    for sentence in re.split(r"(?<=\.)\s+(?=[A-Z`(])", doc):
        if "NULL" not in sentence or sentence.startswith("Errors"):
            continue
        if re.search(rf"`?\b{word}\b`?:?\s*(\([^)]*\)\s*)?(may|can) be NULL|if `?\b{word}\b`? is not NULL"
                     rf"|`?\b{word}\b`?, if not NULL|`?\b{word}\b`?:[^.;]*\(NULL = |`?\b{word}\b`?[:,]?[^.;]*\bor NULL\b|\b{word}\b.*?\bNULL (means|for)",
                     sentence):
            return True
    return False


def f_kind(t):
    """(Fortran type spelling, iso_c_binding names it needs) of a value type."""
    if t.kind == "scalar":
        _, spelling, kind = SCALARS[t.name]
        return spelling, {kind}
    if t.kind == "enum":
        return "integer(c_int)", {"c_int"}
    if t.kind == "funptr":
        return "type(c_funptr)", {"c_funptr"}
    if t.kind == "struct":
        return f"type({t.name})", {t.name}
    if t.kind in ("pointer", "handle", "void"):
        return "type(c_ptr)", {"c_ptr"}
    raise ValueError(f"no Fortran mapping for {t.c()}")


def fortran_argument(function, param, t, doc):
    """(declaration without the name, suffix after the name, imports)."""
    if t.kind != "pointer":
        spelling, needs = f_kind(t)
        return f"{spelling}, value", "", needs
    base, depth = t.base(), t.depth()
    if depth >= 2:
        if t.target.const:  # T *const *: an input array of pointers
            return "type(c_ptr), intent(in)", "(*)", {"c_ptr"}
        if (function, param) in FORTRAN_INOUT_HANDLES:
            return "type(c_ptr), intent(inout)", "", {"c_ptr"}
        return "type(c_ptr), intent(out)", "", {"c_ptr"}  # the library stores an address
    if base.kind in ("handle", "void"):
        return "type(c_ptr), value", "", {"c_ptr"}
    if base.kind == "scalar" and base.name == "char":
        return "character(kind=c_char), intent(in)", "(*)", {"c_char"}
    if nullable(doc, param) or param in FORTRAN_ADDRESS_PARAMS or (function, param) in FORTRAN_OPTIONAL:
        return "type(c_ptr), value", "", {"c_ptr"}
    spelling, needs = f_kind(base)
    if base.kind == "struct":
        return f"{spelling}, intent({'in' if base.const else 'inout'})", "", needs
    if base.const:
        return f"{spelling}, intent(in)", "(*)", needs
    if param.endswith(FORTRAN_ARRAY_OUTPUT_SUFFIXES) or (function, param) in FORTRAN_ARRAY_OUTPUTS:
        return f"{spelling}, intent(out)", "(*)", needs
    return f"{spelling}, intent(out)", "", needs


def f_wrap(first, words, indent, tail=""):
    """first + ", ".join(words) + tail, continued with & within 110 columns
    (the tail stays with the last word)."""
    pieces = [w + ", " for w in words[:-1]] + [(words[-1] if words else "") + tail]
    lines, line = [], first
    for piece in pieces:
        if len(line) + len(piece) > 110 and line.strip():
            lines.append(line.rstrip() + " &")
            line = " " * (indent + 4) + piece
        else:
            line += piece
    lines.append(line)
    return "\n".join(lines) + "\n"


def f_literal(value, ctype):
    if ctype == "uint64_t":
        return "integer(c_int64_t)", f"{value}_c_int64_t"
    return "integer(c_int)", str(value)


def first_sentence(doc):
    s = re.split(r"(?<=\.)\s", doc, maxsplit=1)[0] if doc else ""
    return s if len(s) <= 200 else s[:197].rsplit(" ", 1)[0] + " ..."


def docs_of_base(name):
    """For spt_X_fcomm ("arguments ... as there"), the comment of spt_X."""
    return DOCS.get(name[:-len("_fcomm")], "") if name.endswith("_fcomm") else ""


DOCS = {}  # every function's comment (set by parse)


def f_procedure(name, ret, params, doc, bind_name, abstract=False):
    """One interface body."""
    out = []
    if doc:
        for line in _wrap_comment(first_sentence(doc)):
            out.append(f"    ! {line}\n")
    names = [p for p, _ in params]
    decls, imports = [], set()
    for p, t in params:
        if abstract and t.kind == "pointer" and t.target.kind == "struct":
            # a callback's struct argument: the derived type, by reference
            spelling, needs = f_kind(t.target)
            decl, suffix = f"{spelling}, intent({'in' if t.target.const else 'inout'})", ""
        elif abstract:  # other pointers (user data, C strings) by value
            spelling, needs = ("type(c_ptr)", {"c_ptr"}) if t.kind == "pointer" else f_kind(t)
            decl, suffix = f"{spelling}, value", ""
        else:
            decl, suffix, needs = fortran_argument(name, p, t, doc + " " + docs_of_base(name))
        decls.append(f"      {decl} :: {p}{suffix}\n")
        imports |= needs
    if ret.kind == "void":
        head, end, result = "subroutine", "end subroutine", None
    else:
        head, end = "function", "end function"
        spelling, needs = f_kind(ret) if ret.kind != "pointer" else ("type(c_ptr)", {"c_ptr"})
        result = f"      {spelling} :: res\n"
        imports |= needs
    bind = f"bind(c, name=\"{bind_name}\")" if bind_name else "bind(c)"
    tail = ") " + bind + (" result(res)" if result else "")
    out.append(f_wrap(f"    {head} {name}(", names, 4, tail))
    if imports:
        out.append(f_wrap("      import :: ", sorted(imports), 6))
    out.extend(decls)
    if result:
        out.append(result)
    out.append(f"    {end}\n")
    return "".join(out)


def _wrap_comment(text, width=100):
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    if line:
        lines.append(line)
    return lines


def emit_fortran(m, base=None):
    """Module sptensor_capi from the model; with `base` (the model of
    sptensor.h), module sptensor_mpi_capi: what sptensor_mpi.h adds, over
    sptensor_capi."""
    if base is None:
        header, module, uses = HEADER, "sptensor_capi", ""
        intro = """! Module sptensor_capi: the C ABI of libsptensor through iso_c_binding.
! Programs `use sptensor` (sptensor.f90), which re-exports all of this and
! adds Fortran conveniences (sptf_* procedures taking Fortran strings and
! arrays)."""
    else:
        header, module, uses = MPI_HEADER, "sptensor_mpi_capi", "  use sptensor_capi\n"
        intro = """! Module sptensor_mpi_capi: what sptensor_mpi.h adds to the C ABI, over
! module sptensor_capi. Programs `use sptensor_mpi` (sptensor_mpi.f90),
! which re-exports it. The functions taking an MPI_Comm are left out (its
! type is the MPI implementation's): the *_fcomm variants take a Fortran
! communicator handle (MPI_COMM_WORLD, or comm%MPI_VAL from mpi_f08)."""
        m = without(m, base_names(base))
    # Fortran names are case-insensitive: no two entities may differ by case only.
    seen = {}
    for name in ([n for _, items in m.enums for n, _ in items] + [n for n, _, _ in m.defines]
                 + [n for n, _ in m.structs] + [n for n, _, _ in m.funptrs] + [n for n, _, _ in m.functions]):
        if name.lower() in seen and seen[name.lower()] != name:
            raise ValueError(f"{name} and {seen[name.lower()]} clash in Fortran")
        seen[name.lower()] = name
    init_size = {n for n, _, _ in m.functions if n.endswith("_options_init_size")}
    out = [f"""! GENERATED by scripts/gen_bindings.py from {header} and the headers it
! includes. Do not edit: change the C header and run the script (ctest
! bindings_up_to_date fails when this file is stale).
!
{intro}
!  - Every enumerator and numeric #define: a named constant, same name and
!    value.
!  - Every struct: a bind(c) derived type with the C layout (fields zeroed).
!  - Every callback typedef: an abstract interface of the same name.
!  - Every function: a bind(c) interface under its C name, returning the
!    spt_status as integer(c_int). Handles are type(c_ptr) (passed by value;
!    `spt_X **out` arguments are type(c_ptr), intent(out)). Unsigned C
!    integers map to the signed kind of the same size. Strings must end in
!    c_null_char. Pointer arguments the header documents as optional (may be
!    NULL), and 2-D index arrays, are type(c_ptr): pass c_loc(x) or
!    c_null_ptr. Modes are 0-based, as in C.
!  - spt_X_options_init(opts): as the C macro, spt_X_options_init_size(opts,
!    c_sizeof(opts)).
module {module}
{uses}  use, intrinsic :: iso_c_binding
  implicit none

"""]
    for enum, items in m.enums:
        out.append(f"  ! {enum}\n")
        for name, value in items:
            out.append(f"  integer(c_int), parameter :: {name} = {value}\n")
    out.append("\n  ! numeric #defines\n")
    for name, value, ctype in m.defines:
        spelling, literal = f_literal(value, ctype)
        out.append(f"  {spelling}, parameter :: {name} = {literal}\n")
    for name, fields in m.structs:
        out.append(f"\n  type, bind(c) :: {name}\n")
        for field, t in fields:
            if t.kind == "array":
                dims, inner = [], t
                while inner.kind == "array":
                    dims.append(inner.count)
                    inner = inner.target
                spelling, _ = f_kind(inner)
                init = "c_null_char" if inner.kind == "scalar" and inner.name == "char" else "0"
                # C's a[i][j] is Fortran's a(j+1, i+1): the extents reversed
                out.append(f"    {spelling} :: {field}({', '.join(str(d) for d in reversed(dims))}) = {init}\n")
                continue
            spelling, _ = f_kind(t)
            init = {"type(c_ptr)": "c_null_ptr", "type(c_funptr)": "c_null_funptr"}.get(spelling, "0")
            out.append(f"    {spelling} :: {field} = {init}\n")
        out.append(f"  end type {name}\n")
    out.append("\n  ! Callbacks: write a bind(c) procedure with this interface and pass\n"
               "  ! c_funloc(it) (and c_loc(a TARGET variable) as its user data).\n")
    out.append("  abstract interface\n")
    for name, ret, params in m.funptrs:
        out.append(f_procedure(name, ret, params, "", None, abstract=True))
    out.append("  end interface\n\n")
    out.append("  interface\n")
    for name, ret, params in m.functions:
        if name + "_size" in init_size:
            continue  # the module procedure below (same name, same effect)
        out.append(f_procedure(name, ret, params, m.docs.get(name, ""), name))
    out.append("  end interface\n\ncontains\n")
    for name in sorted(init_size):
        short = name[:-len("_size")]
        struct = short[:-len("_init")]
        out.append(f"""
  !> Fill opts with the library's defaults (the C macro {short}).
  function {short}(opts) result(res)
    type({struct}), intent(inout) :: opts
    integer(c_int) :: res
    res = {name}(opts, c_sizeof(opts))
  end function
""")
    out.append(f"\nend module {module}\n")
    return "".join(out)


def write_outputs(cc, root, check):
    """Writes (or with check, compares) the generated files; the stale ones."""
    model = parse(cc, root)
    mpi_model = parse(cc, root, MPI_HEADER)
    outputs = {PY_OUT: emit_python(model), PY_MPI_OUT: emit_python(mpi_model, base=model),
               F90_OUT: emit_fortran(model), F90_MPI_OUT: emit_fortran(mpi_model, base=model),
               PROBE_OUT: emit_probe(model)}
    stale = []
    for rel, text in outputs.items():
        path = os.path.join(root, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        stale.append(rel)
        if not check:
            with open(path, "w") as f:
                f.write(text)
    return stale


def self_test(cc, root):
    """In a scratch copy: the committed outputs pass --check; a function
    added to a header makes them stale; regenerated, they bind it."""
    import shutil
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(os.path.join(root, "include"), os.path.join(scratch, "include"))
        for rel in (PY_OUT, PY_MPI_OUT, PROBE_OUT):  # the .f90 files are under include/
            os.makedirs(os.path.dirname(os.path.join(scratch, rel)), exist_ok=True)
            shutil.copy(os.path.join(root, rel), os.path.join(scratch, rel))
        failures = []
        if write_outputs(cc, scratch, check=True):
            failures.append("the committed outputs are stale (run scripts/gen_bindings.py)")
        with open(os.path.join(scratch, HEADER), "a") as f:
            f.write("\nSPT_API spt_status spt_self_test_added(spt_context *ctx, const double *x, size_t n);\n")
        stale = write_outputs(cc, scratch, check=True)
        if sorted(stale) != sorted([PY_OUT, F90_OUT]):  # the MPI files keep only what sptensor_mpi.h adds
            failures.append(f"after adding a function, --check reported {stale}, expected {PY_OUT} and {F90_OUT}")
        write_outputs(cc, scratch, check=False)
        if '"spt_self_test_added": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t])' \
                not in open(os.path.join(scratch, PY_OUT)).read():
            failures.append("the added function's Python prototype is missing or wrong")
        if 'bind(c, name="spt_self_test_added")' not in open(os.path.join(scratch, F90_OUT)).read():
            failures.append("the added function's Fortran interface is missing")
    for f in failures:
        print("gen_bindings.py --self-test: FAIL:", f, file=sys.stderr)
    if not failures:
        print("gen_bindings.py --self-test: passed")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler used as the preprocessor")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--self-test", action="store_true", help="check that --check sees a header change")
    ap.add_argument("--dump", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    if args.self_test:
        return self_test(args.cc, root)
    if args.dump:
        model = parse(args.cc, root)
        for name, ret, params in model.functions:
            print(name, ret.c(), [(p, t.c()) for p, t in params])
        for name, fields in model.structs:
            print(name, [(f, t.c()) for f, t in fields])
        print(model.enums)
        print(model.defines)
        return 0
    stale = write_outputs(args.cc, root, args.check)
    if args.check and stale:
        print("gen_bindings.py: out of date with the headers (run scripts/gen_bindings.py and commit):",
              ", ".join(stale), file=sys.stderr)
        return 1
    for rel in stale:
        print("gen_bindings.py: wrote", rel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
