#!/usr/bin/env python3
"""Cross-check spt_cpd_als against pyttb.cp_als.

Both run from the same initial factors (drawn with numpy, fixed seed) for a
fixed number of sweeps (tolerance 0), on real FROSTT tensors read with plain
numpy (independent of libsptensor's reader). The final fits must agree to
1e-6 relative (DESIGN.md "Numerics users expect"); the arranged factor
matrices and weights are compared and reported too.

usage: check_cp_als_pyttb.py LIBSPTENSOR_SO DATA_DIR [DATA_DIR ...]

Exit status: 0 agreement, 1 mismatch or error, 77 pyttb/numpy missing or no
data files found (ctest SKIP_RETURN_CODE) -- unless the environment has
CI=true, where a missing pyttb is a failure.
"""
import ctypes
import sys

from crosscheck_common import (
    SKIP, SPT_OK, SPT_WARN_NOT_CONVERGED, call_inputs, capi, check, copy_factors, find, init_options,
    ktensor_lambda, load_library, np, read_tns, run_main, ttb)

FIT_RTOL = 1e-6
FACTOR_RTOL = 1e-4  # arranged factors: loose, iterates amplify rounding

# (file, rank, iterations)
CASES = [
    ("nations.tns.xz", 4, 15),
    ("nations.tns.xz", 8, 20),
    ("ciao-user-item-category-month.tns.xz", 4, 10),
    ("ciao-user-item-category-month.tns.xz", 8, 12),
    ("jf17k-4ary.tns.xz", 4, 10),
]


# The C API: the generated ctypes view (python/sptensor/_capi.py).
CpdOptions = capi.CpdOptions
SPT_CPD_INIT_USER = capi.SPT_CPD_INIT_USER


def run_sptensor(lib, subs, vals, shape, rank, iters, init_factors):
    """spt_cpd_als from init_factors; returns (fit, fits per iteration, weights, factors)."""
    order = len(shape)
    with call_inputs(lib, subs, vals, shape, init_factors, lib.spt_ktensor_free) as (x, init_ptr, k):
        opts = init_options(lib, "spt_cpd_options_init", CpdOptions)
        opts.rank = rank
        opts.max_iters = iters
        opts.tol = 0.0
        opts.init = SPT_CPD_INIT_USER
        opts.init_factors = init_ptr
        check(lib, lib.spt_cpd_als(None, x, ctypes.byref(opts), ctypes.byref(k)), "spt_cpd_als",
              (SPT_OK, SPT_WARN_NOT_CONVERGED))
        fit = ctypes.c_double()
        count = ctypes.c_int()
        iterations = ctypes.c_int()
        fits = ctypes.POINTER(ctypes.c_double)()
        check(lib, lib.spt_ktensor_result(k, ctypes.byref(fit), ctypes.byref(iterations), None), "result")
        check(lib, lib.spt_ktensor_history(k, ctypes.byref(count), ctypes.byref(fits), None), "history")
        history = [fits[i] for i in range(count.value)]
        weights = ktensor_lambda(lib, k, rank)
        factors = copy_factors(lib, lib.spt_ktensor_factor, k, shape, [rank] * order)
        assert iterations.value == iters == len(history)
        return fit.value, history, weights, factors


def rel_diff(a, b):
    scale = max(np.max(np.abs(b)), 1e-300)
    return float(np.max(np.abs(a - b)) / scale)


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 1
    lib = load_library(argv[1])
    data_dirs = argv[2:]
    failures = 0
    ran = 0
    tensors = {}
    for name, rank, iters in CASES:
        path = find(name, data_dirs)
        if path is None:
            print(f"{name}: not found in {data_dirs}, skipped")
            continue
        if name not in tensors:
            tensors[name] = read_tns(path)
        subs, vals, shape = tensors[name]
        rng = np.random.default_rng(20240601 + rank)
        init = [rng.uniform(0.0, 1.0, (shape[n], rank)) for n in range(len(shape))]

        X = ttb.sptensor(subs, vals.reshape(-1, 1), shape)
        M, _, out = ttb.cp_als(X, rank, stoptol=0.0, maxiters=iters, init=ttb.ktensor([f.copy() for f in init]),
                               printitn=0)
        fit_ref = float(out["fit"])

        fit, history, weights, factors = run_sptensor(lib, subs, vals, shape, rank, iters, init)
        ran += 1
        fit_diff = abs(fit - fit_ref)
        fit_ok = fit_diff <= FIT_RTOL * abs(fit_ref)
        weight_diff = rel_diff(weights, np.asarray(M.weights))
        factor_diff = max(rel_diff(factors[n], M.factor_matrices[n]) for n in range(len(shape)))
        factors_ok = weight_diff <= FACTOR_RTOL and factor_diff <= FACTOR_RTOL
        status = "ok" if fit_ok and factors_ok else "MISMATCH"
        print(f"{name} order {len(shape)} nnz {len(vals)} rank {rank} iters {iters}: fit pyttb {fit_ref:.15f} "
              f"ours {fit:.15f} |diff| {fit_diff:.3e} (rel {fit_diff / abs(fit_ref):.3e}); "
              f"arranged weights max rel diff {weight_diff:.3e}, factors {factor_diff:.3e} -> {status}")
        if not (fit_ok and factors_ok):
            failures += 1
    if ran == 0:
        print("SKIP: none of the data files were found")
        return SKIP
    return 1 if failures else 0


if __name__ == "__main__":
    run_main(main)
