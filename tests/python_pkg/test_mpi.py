#!/usr/bin/env python3
"""Test of the optional module sptensor.mpi (mpi4py), run under
`mpirun -np 2` by tests/python_pkg/run_mpi.sh:

  test_mpi.py DATA_DIR

On MPI.COMM_WORLD and on a communicator from Split (a handle other than
COMM_WORLD's): the distributed CP-ALS of nations.tns.xz (medium- and
coarse-grained, and of a tensor built from rank-local numpy arrays) has the
fit of the serial sptensor.cp_als from the same seed (within 1e-10), the
gathered factors equal the serial ones, every nonzero and every factor row
lives on exactly one rank, and a bad grid raises the same error on every
rank. Rank 0 prints the verdict; the exit status is 1 on every rank when
any rank failed.
"""
import os
import sys
import traceback

import numpy as np
from mpi4py import MPI

import sptensor
import sptensor.mpi as smpi

comm = MPI.COMM_WORLD
me, nranks = comm.rank, comm.size
NATIONS = os.path.join(sys.argv[1], "nations.tns.xz")
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL [rank {me}] {what}", flush=True)
    elif me == 0:
        print(f"ok    {what}", flush=True)


def run(fn):
    try:
        fn()
    except Exception:  # a failure on one rank must still reach the final agreement
        failures.append(fn.__name__ + " raised")
        print(f"FAIL [rank {me}] {fn.__name__} raised:\n{traceback.format_exc()}", flush=True)


ctx = sptensor.Context(backend="cpu", threads=1)
serial = sptensor.cp_als(sptensor.read(NATIONS, ctx=ctx), 4, max_iters=8, tol=0.0, seed=1, ctx=ctx)


def test_read_and_cp_als():
    X = smpi.read(NATIONS, comm=comm, ctx=ctx)
    check(X.shape == (14, 55, 14) and X.nnz == 1992, "distributed nations: 14 x 55 x 14, 1992 nonzeros")
    check(comm.allreduce(X.local_nnz) == X.nnz, "every nonzero is on exactly one rank")
    check(X.local().nnz == X.local_nnz, "local() copies this rank's nonzeros")
    for decomposition in ("medium", "coarse"):
        r = smpi.cp_als(X, 4, max_iters=8, tol=0.0, seed=1, decomposition=decomposition, ctx=ctx)
        check(abs(r.fit - serial.fit) <= 1e-10, f"{decomposition}-grained fit {r.fit:.12f} equals serial {serial.fit:.12f}")
        check(r.iterations == 8 and not r.converged, "8 sweeps, not converged")
        np.testing.assert_allclose(r.weights, serial.weights, rtol=1e-8)
        grid_ok = (int(np.prod(r.stats["grid"])) == nranks if decomposition == "medium"
                   else r.stats["grid"] == [nranks] * 3)  # coarse: P in every mode
        check(r.stats["ranks"] == nranks and grid_ok and comm.allreduce(r.stats["local_nnz"]) >= X.nnz,
              f"stats: ranks {r.stats['ranks']}, grid {r.stats['grid']}, local nonzeros")
        for m, n in enumerate(X.shape):
            rows = comm.allgather(r.local_rows[m])
            check(np.array_equal(np.sort(np.concatenate(rows)), np.arange(n)), f"factor {m}: every row has one owner")
            check(r.local_factors[m].shape == (len(r.local_rows[m]), 4), f"factor {m}: local rows shape")
        if me == 0:
            check(r.factors is not None, "gathered factors on the root")
            for m in range(3):
                np.testing.assert_allclose(r.factors[m], serial.factors[m], rtol=1e-6, atol=1e-8)
                np.testing.assert_allclose(r.factors[m][r.local_rows[m].astype(np.intp)], r.local_factors[m],
                                           rtol=0, atol=0)
            check(r.to_cpresult().fit == r.fit, "to_cpresult on the root")
        else:
            check(r.factors is None, "no gathered factors off the root")


def test_local_arrays_and_split():
    # A communicator other than COMM_WORLD (reversed rank order), and a tensor
    # from rank-local numpy arrays: nonzeros me, me + P, ...
    sub = comm.Split(0, nranks - 1 - me)
    try:
        full = sptensor.read(NATIONS, ctx=ctx)
        subs, vals = full.subs, full.vals
        r_me = sub.rank
        X = smpi.tensor(subs[r_me::nranks], vals[r_me::nranks], shape=full.shape, comm=sub, ctx=ctx)
        check(X.nnz == full.nnz and X.comm is sub, "tensor from local arrays on a split communicator")
        r = smpi.cp_als(X, 4, max_iters=8, tol=0.0, seed=1, gather=False, ctx=ctx)
        check(abs(r.fit - serial.fit) <= 1e-10, f"fit from local arrays {r.fit:.12f} equals serial")
        check(r.factors is None, "gather=False keeps the factors distributed")
        G = X.gather(root=0, ctx=ctx)
        if sub.rank == 0:
            check(G is not None and G.nnz == full.nnz, "gathered tensor on the root")
            check(abs(G.norm() - full.norm()) <= 1e-12 * full.norm(), "gathered tensor has the same norm")
        else:
            check(G is None, "no gathered tensor off the root")
        empty = smpi.tensor(np.zeros((0, 3), dtype=np.uint32) if r_me else subs, np.zeros(0) if r_me else vals,
                            comm=sub, ctx=ctx)
        check(empty.shape == full.shape and empty.nnz == full.nnz, "a rank may pass no nonzeros (dims inferred)")
    finally:
        sub.Free()


def test_errors():
    X = smpi.read(NATIONS, comm=comm, ctx=ctx)
    try:
        smpi.cp_als(X, 4, grid=[nranks + 1, 1, 1], ctx=ctx)
        check(False, "a bad grid raises")
    except sptensor.InvalidArgumentError as e:
        messages = comm.allgather(e.message)
        check(all(m == messages[0] for m in messages) and "grid" in e.message,
              f"bad grid: the same message on every rank: {e.message}")
    try:
        smpi.read("/nonexistent/x.tns", comm=comm, ctx=ctx)
        check(False, "a missing file raises")
    except sptensor.FileIOError as e:
        check(e.status_name == "SPT_ERR_IO", "missing file: SPT_ERR_IO on every rank")
    try:
        smpi.cp_als(X, 4, decomposition="fine", ctx=ctx)
        check(False, "an unknown decomposition raises")
    except sptensor.InvalidArgumentError:
        check(True, "unknown decomposition rejected")


for t in (test_read_and_cp_als, test_local_arrays_and_split, test_errors):
    run(t)

total = comm.allreduce(len(failures))
if me == 0:
    print(f"python mpi (P = {nranks}): " + ("all checks passed" if total == 0 else f"{total} check(s) FAILED"),
          flush=True)
sys.exit(1 if total else 0)
