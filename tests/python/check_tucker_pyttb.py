#!/usr/bin/env python3
"""Cross-check spt_tucker_hooi against pyttb.tucker_als.

Both run from the same initial factors (random orthonormal, drawn with numpy
from a fixed seed; SPT_TUCKER_INIT_USER / pyttb init=list) for a fixed number
of sweeps (tolerance 0), on real FROSTT tensors read with plain numpy. The
final fits must agree to 1e-6 relative and every factor's subspace to a
principal-angle sine below 1e-6 (issue 4's acceptance checks); ranks differ
per mode.

usage: check_tucker_pyttb.py LIBSPTENSOR_SO DATA_DIR [DATA_DIR ...]

Exit status: 0 agreement, 1 mismatch or error, 77 pyttb/numpy missing or no
data files found (ctest SKIP_RETURN_CODE) -- unless the environment has
CI=true, where a missing pyttb is a failure.
"""
import ctypes
import sys

from crosscheck_common import (
    SKIP, SPT_OK, SPT_WARN_NOT_CONVERGED, call_inputs, capi, check, copy_factors, find, init_options, load_library,
    np, read_tns, run_main, ttb)

FIT_RTOL = 1e-6
ANGLE_TOL = 1e-6

# (file, ranks, iterations, init): "user" = the same random orthonormal
# factors for both; "hosvd" = each side's own HOSVD (pyttb init="nvecs",
# SPT_TUCKER_INIT_HOSVD), which checks the sparse initialisation too.
CASES = [
    ("nations.tns.xz", (3, 4, 5), 8, "user"),
    ("kinship.tns.xz", (4, 4, 3), 6, "user"),
    ("umls.tns.xz", (5, 4, 6), 6, "user"),
    ("nations.tns.xz", (4, 3, 2), 5, "hosvd"),
    ("umls.tns.xz", (3, 5, 4), 4, "hosvd"),
    # Larger / higher-order files (jf17k-4ary, ciao) are left out: pyttb's
    # sptensor.ttm materialises a dense intermediate of prod(dims) rows there.
]


# The C API: the generated ctypes view (python/sptensor/_capi.py).
TuckerOptions = capi.TuckerOptions
TtensorSummary = capi.TtensorSummary
SPT_TUCKER_INIT_HOSVD = capi.SPT_TUCKER_INIT_HOSVD
SPT_TUCKER_INIT_USER = capi.SPT_TUCKER_INIT_USER


def run_sptensor(lib, subs, vals, shape, ranks, iters, init_factors):
    """spt_tucker_hooi from init_factors (None: HOSVD init); returns (fit, iterations, factors)."""
    order = len(shape)
    with call_inputs(lib, subs, vals, shape, init_factors, lib.spt_ttensor_free) as (x, init_ptr, t):
        rank_array = (ctypes.c_uint32 * order)(*ranks)
        opts = init_options(lib, "spt_tucker_options_init", TuckerOptions)
        opts.ranks = rank_array
        opts.ranks_count = order
        opts.max_iters = iters
        opts.tol = 0.0
        if init_ptr is None:
            opts.init = SPT_TUCKER_INIT_HOSVD
        else:
            opts.init = SPT_TUCKER_INIT_USER
            opts.init_factors = init_ptr
        check(lib, lib.spt_tucker_hooi(None, x, ctypes.byref(opts), ctypes.byref(t)), "spt_tucker_hooi",
              (SPT_OK, SPT_WARN_NOT_CONVERGED))
        summary = TtensorSummary()
        summary.struct_size = ctypes.sizeof(summary)
        check(lib, lib.spt_ttensor_info(None, t, ctypes.byref(summary)), "info")
        factors = copy_factors(lib, lib.spt_ttensor_factor, t, shape, ranks)
        return summary.fit, summary.iterations, factors


def max_principal_angle_sine(a, b):
    """sin of the largest principal angle between span(a) and span(b) (orthonormal columns, same
    count): the spectral norm of b's component outside span(a) (accurate for small angles, unlike
    sqrt(1 - cos^2))."""
    return float(np.linalg.norm(b - a @ (a.T @ b), 2))


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 1
    lib = load_library(argv[1])
    data_dirs = argv[2:]
    failures = 0
    ran = 0
    for name, ranks, iters, init_kind in CASES:
        path = find(name, data_dirs)
        if path is None:
            print(f"{name}: not found in {data_dirs}, skipped")
            continue
        subs, vals, shape = read_tns(path)
        if len(ranks) != len(shape):
            raise RuntimeError(f"{name} has order {len(shape)} but the case gives {len(ranks)} ranks")
        rng = np.random.default_rng(20241123 + sum(ranks))
        init = [np.linalg.qr(rng.uniform(0.0, 1.0, (shape[n], ranks[n])))[0] for n in range(len(shape))]

        X = ttb.sptensor(subs, vals.reshape(-1, 1), shape)
        pyttb_init = [f.copy() for f in init] if init_kind == "user" else "nvecs"
        M, _, out = ttb.tucker_als(X, list(ranks), stoptol=0.0, maxiters=iters, init=pyttb_init, printitn=0)
        fit_ref = float(out["fit"])

        fit, done, factors = run_sptensor(lib, subs, vals, shape, ranks, iters, init if init_kind == "user" else None)
        ran += 1
        fit_diff = abs(fit - fit_ref)
        fit_ok = fit_diff <= FIT_RTOL * abs(fit_ref) and done == iters
        angle = max(max_principal_angle_sine(factors[n], np.asarray(M.factor_matrices[n]))
                    for n in range(len(shape)))
        angle_ok = angle <= ANGLE_TOL
        status = "ok" if fit_ok and angle_ok else "MISMATCH"
        print(f"{name} order {len(shape)} nnz {len(vals)} ranks {ranks} iters {iters} init {init_kind}: fit pyttb {fit_ref:.15f} "
              f"ours {fit:.15f} |diff| {fit_diff:.3e} (rel {fit_diff / abs(fit_ref):.3e}); "
              f"max principal-angle sine {angle:.3e} -> {status}")
        if not (fit_ok and angle_ok):
            failures += 1
    if ran == 0:
        print("SKIP: none of the data files were found")
        return SKIP
    return 1 if failures else 0


if __name__ == "__main__":
    run_main(main)
