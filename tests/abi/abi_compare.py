#!/usr/bin/env python3
"""Compares two libabigail ABI descriptions (abidw XML) of libsptensor under
the library's compatibility rules, and the real library's exported symbols
with the stored list.

usage: abi_compare.py BASELINE.abi CURRENT.abi [BASELINE_SYMBOLS CURRENT_SYMBOLS]

Rules (a violation is an incompatible change; exit 1):
  - every function of the baseline still exists with the same return and
    parameter types (new functions are fine);
  - every struct keeps each member at the same offset with the same type;
    members may be appended after the old end only in structs whose first
    member is `struct_size` (the options/info structs that grow through the
    spt_X_options_init_size pattern); other structs keep their size;
  - every enumerator keeps its value (new enumerators are fine) and enums
    keep their size;
  - typedefs keep their underlying type;
  - every symbol in BASELINE_SYMBOLS is still exported (CURRENT_SYMBOLS).
Types are compared by their spelled-out structure (typedef names, pointer
and const levels, array bounds, function pointer signatures), which is what
a C caller's compiled code depends on. Compatible additions are listed.
"""
import sys
import xml.etree.ElementTree as ET


class Corpus:
    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.soname = root.get("soname", "")
        self.by_id = {}
        self.functions = {}
        self.structs = {}
        self.enums = {}
        self.typedefs = {}
        for el in root.iter():
            if el.get("id"):
                self.by_id[el.get("id")] = el
        for el in root.iter():
            tag = el.tag
            name = el.get("name")
            if tag == "function-decl" and name:
                self.functions[name] = el
            elif tag in ("class-decl", "union-decl") and name and el.get("is-declaration-only") != "yes":
                self.structs[name] = el
            elif tag == "enum-decl" and name:
                self.enums[name] = el
            elif tag == "typedef-decl" and name:
                self.typedefs[name] = el

    def sig(self, type_id, depth=0):
        """A spelled-out description of a type, stable across builds."""
        if depth > 50:
            return "..."
        el = self.by_id.get(type_id)
        if el is None:
            return f"<unknown {type_id}>"
        tag = el.tag
        if tag == "type-decl":
            return el.get("name")
        if tag == "typedef-decl":
            return el.get("name")
        if tag == "pointer-type-def":
            return self.sig(el.get("type-id"), depth + 1) + "*"
        if tag == "qualified-type-def":
            quals = " ".join(q for q in ("const", "volatile", "restrict") if el.get(q) == "yes")
            inner = self.by_id.get(el.get("type-id"))
            if inner is not None and inner.tag == "pointer-type-def":  # C spelling: T* const
                return self.sig(el.get("type-id"), depth + 1) + " " + quals
            return quals + " " + self.sig(el.get("type-id"), depth + 1)
        if tag in ("class-decl", "union-decl"):
            return ("union " if tag == "union-decl" else "struct ") + (el.get("name") or "<anonymous>")
        if tag == "enum-decl":
            return "enum " + (el.get("name") or "<anonymous>")
        if tag == "array-type-def":
            dims = "".join(f"[{s.get('length')}]" for s in el.findall("subrange"))
            return self.sig(el.get("type-id"), depth + 1) + dims
        if tag == "function-type":
            params = [("..." if p.get("is-variadic") == "yes" else self.sig(p.get("type-id"), depth + 1))
                      for p in el.findall("parameter")]
            ret = el.find("return")
            return f"fn({', '.join(params)}) -> {self.sig(ret.get('type-id'), depth + 1) if ret is not None else 'void'}"
        return f"<{tag}>"

    def function_sig(self, name):
        el = self.functions[name]
        params = [("..." if p.get("is-variadic") == "yes" else self.sig(p.get("type-id")))
                  for p in el.findall("parameter")]
        ret = el.find("return")
        return f"{self.sig(ret.get('type-id')) if ret is not None else 'void'} {name}({', '.join(params)})"

    def members(self, name):
        el = self.structs[name]
        out = []
        for dm in el.findall("data-member"):
            var = dm.find("var-decl")
            out.append((var.get("name"), int(dm.get("layout-offset-in-bits", "0")), self.sig(var.get("type-id"))))
        return out

    def enumerators(self, name):
        return {e.get("name"): int(e.get("value")) for e in self.enums[name].findall("enumerator")}


def compare(base, cur):
    errors, additions = [], []
    for name in sorted(base.functions):
        if name not in cur.functions:
            errors.append(f"function removed: {base.function_sig(name)}")
        elif base.function_sig(name) != cur.function_sig(name):
            errors.append(f"function changed: {base.function_sig(name)}\n                      now: {cur.function_sig(name)}")
    additions += [f"function added: {cur.function_sig(n)}" for n in sorted(set(cur.functions) - set(base.functions))]

    for name in sorted(base.structs):
        if name not in cur.structs:
            errors.append(f"struct {name}: no longer defined in the public headers")
            continue
        old, new = base.members(name), cur.members(name)
        old_size = int(base.structs[name].get("size-in-bits", "0"))
        new_size = int(cur.structs[name].get("size-in-bits", "0"))
        extensible = bool(old) and old[0][0] == "struct_size"
        new_by_name = {m[0]: m for m in new}
        for m in old:
            if m[0] not in new_by_name:
                errors.append(f"struct {name}: member '{m[0]}' removed")
            elif new_by_name[m[0]] != m:
                n = new_by_name[m[0]]
                errors.append(f"struct {name}: member '{m[0]}' changed from offset {m[1] // 8} type '{m[2]}' "
                              f"to offset {n[1] // 8} type '{n[2]}'")
        old_names = {m[0] for m in old}
        for m in new:
            if m[0] in old_names:
                continue
            if not extensible:
                errors.append(f"struct {name}: member '{m[0]}' added, but the struct has no struct_size field "
                              f"(callers allocate it: its layout is fixed)")
            elif m[1] < old_size:
                errors.append(f"struct {name}: member '{m[0]}' inserted at offset {m[1] // 8}, inside the old "
                              f"struct ({old_size // 8} bytes): fields may only be appended")
            else:
                additions.append(f"struct {name}: member '{m[0]}' appended at offset {m[1] // 8}")
        if new_size != old_size and not (extensible and new_size > old_size):
            errors.append(f"struct {name}: size changed from {old_size // 8} to {new_size // 8} bytes")

    for name in sorted(base.enums):
        if name not in cur.enums:
            errors.append(f"enum {name}: no longer defined in the public headers")
            continue
        old, new = base.enumerators(name), cur.enumerators(name)
        for e, v in old.items():
            if e not in new:
                errors.append(f"enum {name}: enumerator {e} removed")
            elif new[e] != v:
                errors.append(f"enum {name}: {e} changed from {v} to {new[e]}")
        additions += [f"enum {name}: enumerator {e} = {new[e]} added" for e in sorted(set(new) - set(old))]
        if base.enums[name].get("size-in-bits") != cur.enums[name].get("size-in-bits"):
            errors.append(f"enum {name}: size changed")

    for name in sorted(base.typedefs):
        if name in cur.typedefs:
            old = base.sig(base.typedefs[name].get("type-id"))
            new = cur.sig(cur.typedefs[name].get("type-id"))
            if old != new:
                errors.append(f"typedef {name}: was '{old}', now '{new}'")
    return errors, additions


def read_symbols(path):
    with open(path) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def main(argv):
    if len(argv) not in (3, 5):
        print(__doc__)
        return 2
    base, cur = Corpus(argv[1]), Corpus(argv[2])
    errors, additions = compare(base, cur)
    if len(argv) == 5:
        old_syms, new_syms = read_symbols(argv[3]), read_symbols(argv[4])
        errors += [f"symbol no longer exported by the library: {s}" for s in sorted(old_syms - new_syms)]
        additions += [f"symbol exported: {s}" for s in sorted(new_syms - old_syms)]
    for a in additions:
        print(f"  compatible: {a}")
    for e in errors:
        print(f"  INCOMPATIBLE: {e}")
    print(f"abi_compare: {len(base.functions)} baseline functions, {len(base.structs)} structs, "
          f"{len(base.enums)} enums; {len(additions)} compatible additions, {len(errors)} incompatible changes")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
