#!/usr/bin/env python3
"""Cross-check spt_cp_apr (CP-APR, multiplicative updates) against pyttb.cp_apr(algorithm="mu").

Both run from the same nonnegative initial factors (uniform [0,1) drawn with
numpy from a fixed seed; SPT_CP_APR_INIT_USER / pyttb init=ktensor) with the
same parameters (stoptol, maxiters, maxinneriters, kappa, kappatol,
epsDivZero) for a fixed number of outer iterations, on small FROSTT count
tensors read with plain numpy and on a synthetic Poisson count tensor drawn
from a planted nonnegative rank-3 model. The final Poisson log-likelihoods
(pyttb tt_loglikelihood; our spt_ktensor_result fit slot) must agree to 1e-6
relative (issue 4's acceptance check), and our value must equal an
independent numpy evaluation of the same formula on our returned model.

usage: check_cp_apr_pyttb.py LIBSPTENSOR_SO DATA_DIR [DATA_DIR ...]

Exit status: 0 agreement, 1 mismatch or error, 77 pyttb/numpy missing
(ctest SKIP_RETURN_CODE) -- unless the environment has CI=true, where a
missing pyttb is a failure.
"""
import ctypes
import sys

from crosscheck_common import (
    SKIP, SPT_OK, SPT_WARN_NOT_CONVERGED, call_inputs, capi, check, copy_factors, find, init_options,
    ktensor_lambda, load_library, np, read_tns, run_main, ttb)

LL_RTOL = 1e-6

# (file or "synthetic", rank, outer iterations, stoptol). stoptol 1e-4 (the
# default) lets inner loops stop early on the KKT test in both codes.
CASES = [
    ("kinship.tns.xz", 4, 10, 1e-4),
    ("kinship.tns.xz", 16, 6, 1e-4),  # rank 8/16/32 take the unrolled Phi kernels
    ("umls.tns.xz", 8, 5, 0.0),
    ("nations.tns.xz", 3, 12, 1e-4),
    ("umls.tns.xz", 5, 8, 1e-4),
    ("synthetic", 3, 25, 1e-4),
    ("synthetic", 5, 15, 0.0),
    ("synthetic", 6, 60, 1e-4),  # overfactored: zeros appear, so the kappa "scooching" runs
]


# The C API: the generated ctypes view (python/sptensor/_capi.py).
CpAprOptions = capi.CpAprOptions
SPT_CP_APR_INIT_USER = capi.SPT_CP_APR_INIT_USER


def run_sptensor(lib, subs, vals, shape, rank, iters, tol, init_factors):
    """spt_cp_apr from init_factors; returns (loglik, iterations, lambda, factors)."""
    order = len(shape)
    with call_inputs(lib, subs, vals, shape, init_factors, lib.spt_ktensor_free) as (x, init_ptr, k):
        opts = init_options(lib, "spt_cp_apr_options_init", CpAprOptions)
        opts.rank = rank
        opts.max_outer_iters = iters
        opts.tol = tol
        opts.init = SPT_CP_APR_INIT_USER
        opts.init_factors = init_ptr
        check(lib, lib.spt_cp_apr(None, x, ctypes.byref(opts), ctypes.byref(k)), "spt_cp_apr",
              (SPT_OK, SPT_WARN_NOT_CONVERGED))
        ll = ctypes.c_double()
        iterations = ctypes.c_int()
        check(lib, lib.spt_ktensor_result(k, ctypes.byref(ll), ctypes.byref(iterations), None), "result")
        lam = ktensor_lambda(lib, k, rank)
        factors = copy_factors(lib, lib.spt_ktensor_factor, k, shape, [rank] * order)
        return ll.value, iterations.value, lam, factors


def synthetic_counts(rank, seed):
    """Poisson counts from a planted nonnegative rank-`rank` model on a 20 x 15 x 12 x 10 grid."""
    rng = np.random.default_rng(seed)
    shape = (20, 15, 12, 10)
    factors = [rng.gamma(0.3, 1.0, (d, rank)) for d in shape]
    model = np.einsum("ir,jr,kr,lr->ijkl", *factors) * 3.0
    counts = rng.poisson(model)
    subs = np.argwhere(counts > 0)
    vals = counts[counts > 0].astype(np.float64)
    return subs, vals, shape


def numpy_loglik(subs, vals, lam, factors):
    rows = lam[None, :] * np.prod([factors[n][subs[:, n], :] for n in range(len(factors))], axis=0)
    total = float(np.sum(lam * np.prod([f.sum(axis=0) for f in factors], axis=0)))
    return float(np.sum(vals * np.log(rows.sum(axis=1)))) - total


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 1
    lib = load_library(argv[1])
    data_dirs = argv[2:]
    failures = 0
    ran = 0
    for case_no, (name, rank, iters, tol) in enumerate(CASES):
        if name == "synthetic":
            subs, vals, shape = synthetic_counts(3, 7 + case_no)
        else:
            path = find(name, data_dirs)
            if path is None:
                print(f"{name}: not found in {data_dirs}, skipped")
                continue
            subs, vals, shape = read_tns(path)
        rng = np.random.default_rng(20241123 + rank + case_no)
        init = [rng.uniform(0.0, 1.0, (shape[n], rank)) for n in range(len(shape))]
        X = ttb.sptensor(subs, vals.reshape(-1, 1), shape)
        M, _, out = ttb.cp_apr(X, rank, algorithm="mu", stoptol=tol, maxiters=iters,
                               init=ttb.ktensor([f.copy() for f in init]), printitn=0)
        ll_ref = float(out["obj"])
        ll, done, lam, factors = run_sptensor(lib, subs, vals, shape, rank, iters, tol, init)
        ll_np = numpy_loglik(subs, vals, lam, factors)
        ran += 1
        diff = abs(ll - ll_ref)
        ok = diff <= LL_RTOL * abs(ll_ref) and abs(ll_np - ll) <= 1e-9 * abs(ll)
        status = "ok" if ok else "MISMATCH"
        print(f"{name} order {len(shape)} nnz {len(vals)} rank {rank} iters {iters} (done {done}) tol {tol}: "
              f"loglik pyttb {ll_ref:.12e} ours {ll:.12e} (numpy on ours {ll_np:.12e}) "
              f"rel diff {diff / abs(ll_ref):.3e} -> {status}")
        if not ok:
            failures += 1
    if ran == 0:
        print("SKIP: none of the data files were found")
        return SKIP
    return 1 if failures else 0


if __name__ == "__main__":
    run_main(main)
