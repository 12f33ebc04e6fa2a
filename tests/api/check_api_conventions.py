#!/usr/bin/env python3
"""Checks the public headers against docs/api-conventions.md.

usage: check_api_conventions.py INCLUDE_DIR     check include/sptensor/*.h
       check_api_conventions.py --self-test [INCLUDE_DIR]
                                                 check that known violations
                                                 (the pre-1.0 shapes) are caught
                                                 in the real headers (default:
                                                 this checkout's include/)

Rules checked (numbers as in docs/api-conventions.md):
  R1  every SPT_API function returns spt_status (ALLOW_NON_STATUS lists the
      exceptions, each with its reason);
  R2  every spt_<object>_free takes exactly the handle and returns spt_status;
  R3  every format handle (FORMATS) has the one lifecycle:
        spt_X_from_coo(spt_context *, const spt_coo *, const spt_X_options *, spt_X **)
        spt_X_info(spt_context *, const spt_X *, spt_X_summary *)
        spt_X_to_coo(spt_context *, const spt_X *, spt_coo **)
        spt_X_free(spt_X *)
        spt_mttkrp_X(spt_context *, const spt_X *, const spt_matrix *const *, uint32_t, spt_matrix *)
      its options (spt_X_options_init_size + the spt_X_options_init macro),
      and a SPT_TENSOR_FORMAT_<X> value;
  R4  every spt_<object>_info takes (ctx, handle, struct *) (ALLOW_OLD_INFO
      lists the exceptions), and every struct an info function fills starts
      with `size_t struct_size`;
  R5  every spt_*_options struct starts with `size_t struct_size` and has an
      spt_*_options_init_size function and spt_*_options_init macro;
  R6  every SPT_API function has a doc comment, and every header that
      declares functions says how they may be used from several threads.
Exit status 0 when every rule holds, 1 with one line per violation.
"""
import glob
import os
import re
import sys

# The formats with their own handle and lifecycle (spt_tensor_format names
# them all, plus COO and AUTO).
FORMATS = ["csf", "hicoo", "fcoo", "hbcsf", "hls"]

# R1 exceptions: functions that cannot fail and return a value directly.
ALLOW_NON_STATUS = {
    "spt_version": "returns the static version string; cannot fail",
    "spt_version_numbers": "fills three ints, any may be NULL; cannot fail",
    "spt_status_string": "names a status code; used to report errors, so it cannot itself return one",
    "spt_last_error": "returns the context's message; used to report errors, so it cannot itself return one",
    "spt_thread_last_error": "returns the thread's message; used to report errors, so it cannot itself return one",
    "spt_mpi_thread_last_error": "as spt_thread_last_error, for the MPI library",
}

# R4 exceptions: info functions allowed another shape, each with its reason.
# None: every spt_<object>_info, the core objects' (COO, sCOO, matrix,
# ktensor, ttensor, dense, permutation, MPI tensor) included, fills a
# struct that starts with struct_size.
ALLOW_OLD_INFO = {}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: " " * len(m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def norm_type(t):
    """'const  spt_coo * x' -> 'const spt_coo*' (the parameter name dropped)."""
    t = " ".join(t.replace("*", " * ").split())
    words = t.split(" ")
    if len(words) > 1 and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and words[-2] != "const" or \
            len(words) > 1 and words[-2] == "*" and re.fullmatch(r"[A-Za-z_]\w*", words[-1]):
        words = words[:-1]
    return " ".join(words).replace(" *", "*")


class Header:
    def __init__(self, name, text):
        self.name = name
        self.text = text
        self.code = strip_comments(text)


def parse(headers):
    """Functions {name: (return type, [param types], header, has_doc)},
    structs {name: [field declarations]}, macros, enumerators."""
    funcs, structs, macros, enumerators, handles = {}, {}, set(), set(), set()
    for h in headers:
        handles.update(re.findall(r"typedef\s+struct\s+spt_(\w+)_s\s+spt_\1\s*;", h.code))
        for m in re.finditer(r"SPT_(?:MPI_)?API\s+([^;{}()]*?)\(?\b(spt_\w+)\)?\s*\(((?:[^()]|\([^()]*\))*)\)\s*;", h.code,
                             flags=re.S):
            ret = " ".join(m.group(1).split()).replace(" *", "*")
            params = [p for p in (x.strip() for x in split_params(m.group(3))) if p]
            if params == ["void"]:
                params = []
            before = h.text[:m.start()].rstrip()
            funcs[m.group(2)] = (ret, [norm_type(p) for p in params], h.name, before.endswith("*/"))
        for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", h.code, flags=re.S):
            fields = [" ".join(f.split()) for f in m.group(2).split(";") if f.strip()]
            structs[m.group(3)] = fields
        macros.update(re.findall(r"#define\s+(spt_\w+)\s*\(", h.code))
        enumerators.update(re.findall(r"\b(SPT_[A-Z0-9_]+)\s*=", h.code))
    return funcs, structs, macros, enumerators, handles


def split_params(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def check(headers):
    funcs, structs, macros, enumerators, handles = parse(headers)
    errors = []

    def err(msg):
        errors.append(msg)

    def starts_with_struct_size(struct):
        fields = structs.get(struct)
        return bool(fields) and fields[0] == "size_t struct_size"

    # R1
    for name, (ret, params, where, _) in sorted(funcs.items()):
        if ret != "spt_status" and name not in ALLOW_NON_STATUS:
            err(f"R1 {where}: {name} returns '{ret}', not spt_status")
    # R2
    for name, (ret, params, where, _) in sorted(funcs.items()):
        if not name.endswith("_free"):
            continue
        obj = name[len("spt_"):-len("_free")]
        if ret != "spt_status":
            err(f"R2 {where}: {name} returns '{ret}'; every *_free returns spt_status")
        if params != [f"spt_{obj}*"]:
            err(f"R2 {where}: {name}({', '.join(params)}) should take exactly (spt_{obj} *)")
    # R3
    for x in FORMATS:
        want = {
            f"spt_{x}_from_coo": ["spt_context*", "const spt_coo*", f"const spt_{x}_options*", f"spt_{x}**"],
            f"spt_{x}_info": ["spt_context*", f"const spt_{x}*", f"spt_{x}_summary*"],
            f"spt_{x}_to_coo": ["spt_context*", f"const spt_{x}*", "spt_coo**"],
            f"spt_{x}_free": [f"spt_{x}*"],
            f"spt_mttkrp_{x}": ["spt_context*", f"const spt_{x}*", "const spt_matrix* const*", "uint32_t",
                                "spt_matrix*"],
            f"spt_{x}_options_init_size": [f"spt_{x}_options*", "size_t"],
        }
        for name, params in want.items():
            if name not in funcs:
                err(f"R3 {x}: {name} is missing")
            elif funcs[name][1] != params or funcs[name][0] != "spt_status":
                err(f"R3 {funcs[name][2]}: {name}({', '.join(funcs[name][1])}) -> {funcs[name][0]}; "
                    f"want spt_status {name}({', '.join(params)})")
        if f"spt_{x}_options_init" not in macros:
            err(f"R3 {x}: the spt_{x}_options_init(opts) macro is missing")
        for struct in (f"spt_{x}_options", f"spt_{x}_summary"):
            if not starts_with_struct_size(struct):
                err(f"R3 {x}: struct {struct} is missing or does not start with size_t struct_size")
        if f"SPT_TENSOR_FORMAT_{x.upper()}" not in enumerators:
            err(f"R3 {x}: spt_tensor_format has no SPT_TENSOR_FORMAT_{x.upper()}")
        for old in (f"spt_{x}_create", f"spt_mttkrp_{x}_mode"):
            if old in funcs:
                err(f"R3 {funcs[old][2]}: {old} is a second builder/entry point; use the one lifecycle")
    # R4
    for name, (ret, params, where, _) in sorted(funcs.items()):
        m = re.fullmatch(r"spt_(\w+)_info", name)
        if not m or name in ALLOW_OLD_INFO or m.group(1) not in handles:
            continue
        obj = m.group(1)
        if len(params) != 3 or params[0] != "spt_context*" or params[1] != f"const spt_{obj}*" \
                or not params[2].endswith("*"):
            err(f"R4 {where}: {name}({', '.join(params)}) should take (spt_context *, const spt_{obj} *, struct *)")
            continue
        struct = params[2][:-1]
        if not starts_with_struct_size(struct):
            err(f"R4 {where}: {struct} (filled by {name}) does not start with size_t struct_size")
    # R5
    for struct in sorted(s for s in structs if s.endswith("_options")):
        if not starts_with_struct_size(struct):
            err(f"R5: {struct} does not start with size_t struct_size")
        if f"{struct}_init_size" not in funcs:
            err(f"R5: {struct} has no {struct}_init_size function")
        if f"{struct}_init" not in macros:
            err(f"R5: {struct} has no {struct}_init(opts) macro")
    # R6
    for name, (ret, params, where, documented) in sorted(funcs.items()):
        if not documented:
            err(f"R6 {where}: {name} has no doc comment right before it")
    for h in headers:
        declares = any(where == h.name for (_, _, where, _) in funcs.values())
        if declares and not re.search(r"thread[- ]saf", h.text, flags=re.I):
            err(f"R6 {h.name}: no thread-safety statement")
    return errors


def load(include_dir):
    paths = sorted(glob.glob(os.path.join(include_dir, "sptensor", "*.h")))
    return [Header(os.path.basename(p), open(p, encoding="utf-8").read()) for p in paths]


# Pre-1.0 shapes every rule must catch (abridged from the headers before
# the lifecycle was unified), each with the rule it breaks.
SELF_TEST_CASES = [
    ("R2", "SPT_API void spt_csf_free(spt_csf *x);"),
    ("R1", "SPT_API uint32_t spt_fcoo_suggest_threadlen(spt_nnz nnz, spt_index rank, spt_dtype dtype, int sms);"),
    ("R3", "SPT_API spt_status spt_csf_create(spt_context *ctx, const spt_coo *x, spt_csf_policy policy, "
           "spt_csf **out);"),
    ("R3", "SPT_API spt_status spt_fcoo_from_coo(spt_context *ctx, const spt_coo *x, spt_fcoo_operation op, "
           "uint32_t mode, uint32_t threadlen, spt_fcoo **out);"),
    ("R3", "SPT_API spt_status spt_hbcsf_from_coo(spt_context *ctx, const spt_coo *x, uint32_t mode, "
           "const spt_hbcsf_options *opts, spt_hbcsf **out);"),
    ("R3", "SPT_API spt_status spt_mttkrp_hls(spt_context *ctx, const spt_hls *h, const spt_matrix *const *factors, "
           "spt_matrix *out);"),
    ("R4", "SPT_API spt_status spt_hicoo_info(const spt_hicoo *h, spt_dtype *dtype, uint32_t *order, spt_nnz *nnz);"),
    ("R4", "SPT_API spt_status spt_coo_info(const spt_coo *x, spt_dtype *dtype, uint32_t *order, spt_nnz *nnz);"),
    ("R4", "SPT_API spt_status spt_matrix_info(const spt_matrix *m, spt_dtype *dtype, spt_nnz *rows, spt_nnz *cols, "
           "spt_layout *layout, spt_nnz *ld);"),
    ("R4", "SPT_API spt_status spt_permutation_info(const spt_permutation *perm, uint32_t *order, spt_index *dims);"),
    ("R4", "SPT_MPI_API spt_status spt_mpi_tensor_info(const spt_mpi_tensor *x, spt_dtype *dtype, uint32_t *order, "
           "spt_nnz *global_nnz, spt_nnz *local_nnz);"),
    ("R4", "SPT_API spt_status spt_ktensor_info(spt_context *ctx, const spt_ktensor *k, spt_index *rank);"),
    ("R4", "typedef struct spt_widget_s spt_widget;\n"
           "typedef struct spt_widget_summary { spt_dtype dtype; size_t struct_size; } spt_widget_summary;\n"
           "/** doc */\nSPT_API spt_status spt_widget_info(spt_context *ctx, const spt_widget *w, "
           "spt_widget_summary *info);"),
    ("R5", "typedef struct spt_widget_options { size_t struct_size; int knob; } spt_widget_options;"),
    ("R6", "SPT_API spt_status spt_widget_undocumented(spt_context *ctx);"),
]


def self_test(include_dir):
    """Each known violation, added to the real headers (or replacing the
    function it shadows), must be reported under its rule."""
    base = load(include_dir) if include_dir else []
    if base and check(base):
        print("self-test: the real headers already fail; run the normal check first")
        return 1
    failures = 0
    for rule, snippet in SELF_TEST_CASES:
        documented = snippet if rule == "R6" or snippet.startswith("typedef") else "/** doc */\n" + snippet
        m = re.search(r"\b(spt_\w+)\s*\(", snippet.split("SPT_API", 1)[-1])
        replaced = m.group(1) if m and "SPT_API" in snippet else None
        headers = []
        for h in base:
            text = h.text
            if replaced:  # drop the current declaration of the same function
                text = re.sub(r"SPT_API[^;]*?\b" + re.escape(replaced) + r"\s*\([^;]*\)\s*;", "", text, flags=re.S)
            headers.append(Header(h.name, text))
        headers.append(Header("selftest.h", "/* Thread safe. */\ntypedef int spt_selftest_int;\n" + documented + "\n"))
        found = [e for e in check(headers) if e.startswith(rule)]
        if not found:
            print(f"self-test FAILED: {rule} not reported for: {snippet}")
            failures += 1
        else:
            print(f"self-test ok: {found[0]}")
    return 1 if failures else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "--self-test":
        here = os.path.dirname(os.path.abspath(__file__))
        return self_test(argv[2] if len(argv) > 2 else os.path.join(here, "..", "..", "include"))
    if len(argv) != 2:
        print(__doc__)
        return 2
    errors = check(load(argv[1]))
    for e in errors:
        print(e)
    if not errors:
        print("api conventions: every rule holds")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
