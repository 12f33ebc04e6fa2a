#!/usr/bin/env python3
"""Tests of the installed Python package `sptensor` (python/).

usage: test_package.py DATA_DIR [LAYOUT_PROBE]

Run by ctest (tests/python_pkg.cmake) after `pip install ./python` into the
test virtual environment, with SPTENSOR_LIBRARY pointing at the built
library. Checks: read/write round trips, COO from numpy (copy and
zero-copy), MTTKRP on COO/HiCOO/CSF against a numpy einsum reference,
cp_als and tucker against pyttb from the same initial factors (fits to 1e-6
relative), TTV/TTM (single, chains, semi-sparse) against pyttb's ttv/ttm and
numpy, TTMc and F-COO kernels against numpy and the COO kernels, dense
tensors, reordering round trips, elementwise ops and unfoldings against
numpy, cp_apr against pyttb's cp_apr (mu) from the same initial factors,
error mapping, backend selection, library discovery, and the
ctypes struct layouts against the C header (LAYOUT_PROBE prints
sizeof/offsetof).

Exit status: 0 pass, 1 failure, 77 (ctest skip) when numpy is missing; a
missing pyttb skips the pyttb cases, except with CI=true, where it fails.
"""
import contextlib
import ctypes
import io
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

SKIP = 77
IN_CI = os.environ.get("CI", "").lower() == "true"

try:
    import numpy as np
except ImportError as e:  # pragma: no cover
    print(("FAIL: " if IN_CI else "SKIP: ") + f"cannot import numpy ({e})")
    sys.exit(1 if IN_CI else SKIP)

try:
    import pyttb as ttb
except ImportError as e:  # pragma: no cover
    ttb = None
    PYTTB_ERROR = str(e)

import sptensor
from sptensor import _lib

DATA_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data")
PROBE = sys.argv[2] if len(sys.argv) > 2 else None
NATIONS = os.path.join(DATA_DIR, "nations.tns.xz")
JF17K = os.path.join(DATA_DIR, "jf17k-4ary.tns.xz")


def random_tensor(rng, shape, nnz, dtype=np.float64):
    subs = np.stack([rng.integers(0, d, nnz) for d in shape], axis=1)
    vals = rng.uniform(-1, 1, nnz).astype(dtype)
    return subs, vals


def dense_from(subs, vals, shape):
    out = np.zeros(shape)
    np.add.at(out, tuple(subs.T), vals)
    return out


def mttkrp_reference(subs, vals, factors, mode):
    """out(i, r) = sum_k vals[k] * prod_{m != mode} U_m(subs[k, m], r), via einsum per nonzero."""
    rank = next(f.shape[1] for m, f in enumerate(factors) if m != mode)
    prod = np.ones((len(vals), rank))
    for m, f in enumerate(factors):
        if m != mode:
            prod = np.einsum("kr,kr->kr", prod, f[subs[:, m]])
    out = np.zeros((factors[mode].shape[0] if factors[mode] is not None else subs[:, mode].max() + 1, rank))
    np.add.at(out, subs[:, mode], vals[:, None] * prod)
    return out


class InstalledPackage(unittest.TestCase):
    def test_imported_from_site_packages(self):
        # The test runs the pip-installed copy, not the source tree.
        self.assertIn("site-packages", sptensor.__file__)
        self.assertTrue(sptensor.library_version().startswith(f"{sptensor._lib.ABI_MAJOR}."))
        self.assertTrue(os.path.exists(sptensor.library_path()))


class ReadWrite(unittest.TestCase):
    def test_round_trips(self):
        X = sptensor.read(NATIONS)
        self.assertEqual(X.shape, (14, 55, 14))
        self.assertEqual(X.nnz, 1992)
        with tempfile.TemporaryDirectory() as d:
            for name in ("x.tns", "x.sptb", "x.bin", "x.tns.gz"):
                p = os.path.join(d, name)
                X.write(p)
                Y = sptensor.read(p)
                self.assertEqual(Y.shape, X.shape, name)
                np.testing.assert_array_equal(Y.subs, X.subs, name)
                np.testing.assert_array_equal(Y.vals, X.vals, name)
            # 0-based text output read back with index_base=0.
            p = os.path.join(d, "zero.tns")
            sptensor.write(X, p, index_base=0)
            Y = sptensor.read(p, index_base=0, shape=X.shape)
            np.testing.assert_array_equal(Y.subs, X.subs)

    def test_float32(self):
        X = sptensor.read(NATIONS, dtype=np.float32)
        self.assertEqual(X.dtype, np.float32)
        X64 = sptensor.read(NATIONS)
        np.testing.assert_allclose(X.vals, X64.vals.astype(np.float32))
        self.assertEqual(X64.astype("float32").dtype, np.float32)


class FromNumpy(unittest.TestCase):
    def test_copy_and_view(self):
        rng = np.random.default_rng(1)
        shape = (7, 5, 9)
        subs, vals = random_tensor(rng, shape, 40)
        X = sptensor.coo(subs, vals, shape=shape)  # int64 subs: copied
        self.assertFalse(X.is_view)
        np.testing.assert_array_equal(X.subs, subs)
        np.testing.assert_array_equal(X.vals, vals)
        np.testing.assert_allclose(X.to_numpy(), dense_from(subs, vals, shape))
        # Repeated coordinates are summed (as pyttb's sptensor does).
        dense = dense_from(subs, vals, shape)
        self.assertAlmostEqual(X.norm(), float(np.linalg.norm(dense)), places=12)
        self.assertEqual(X.count_distinct(), len({tuple(s) for s in subs.tolist()}))

        fsubs = np.asfortranarray(subs, dtype=np.uint32)
        V = sptensor.coo(fsubs, vals, shape=shape, copy=False)
        self.assertTrue(V.is_view)
        # Zero copy: the library reads the caller's arrays in place.
        p = ctypes.c_void_p()
        _lib.check(_lib.lib().spt_coo_values(V._h, ctypes.byref(p)), "spt_coo_values")
        self.assertEqual(p.value, vals.ctypes.data)
        _lib.check(_lib.lib().spt_coo_indices(V._h, 1, ctypes.byref(p)), "spt_coo_indices")
        self.assertEqual(p.value, fsubs.ctypes.data + 4 * len(vals))
        np.testing.assert_array_equal(V.subs, subs)
        # Views are read-only in the library.
        with self.assertRaises(sptensor.ReadOnlyError) as cm:
            V.coalesce()
        self.assertEqual(cm.exception.status, -10)
        W = V.copy().coalesce()
        self.assertFalse(W.is_view)
        np.testing.assert_allclose(W.to_numpy(), dense_from(subs, vals, shape))

    def test_one_based_and_inferred_shape(self):
        subs = np.array([[1, 1], [3, 2], [2, 4]])
        X = sptensor.coo(subs, [1.0, 2.0, 3.0], index_base=1)
        self.assertEqual(X.shape, (3, 4))
        np.testing.assert_array_equal(X.subs, subs - 1)

    def test_copy_false_needs_viewable_layout(self):
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.coo(np.array([[0, 0]]), [1.0], copy=False)  # int64, C order


class Mttkrp(unittest.TestCase):
    def test_formats_against_einsum(self):
        rng = np.random.default_rng(2)
        for shape, nnz in (((20, 30, 10), 500), ((6, 8, 5, 7), 300)):
            subs, vals = random_tensor(rng, shape, nnz)
            X = sptensor.coo(subs, vals, shape=shape)
            U = [rng.uniform(-1, 1, (d, 6)) for d in shape]
            U[1] = np.asfortranarray(U[1])  # column-major passes without a copy too
            for fmt in (X, X.to_hicoo(), X.to_csf("onemode"), X.to_csf("allmode")):
                for mode in range(len(shape)):
                    ref = mttkrp_reference(subs, vals, U, mode)
                    got = sptensor.mttkrp(fmt, U, mode)
                    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12, err_msg=f"{fmt!r} mode {mode}")

    def test_float32(self):
        rng = np.random.default_rng(3)
        shape = (10, 12, 8)
        subs, vals = random_tensor(rng, shape, 200, np.float32)
        X = sptensor.coo(subs, vals, shape=shape)
        self.assertEqual(X.dtype, np.float32)
        U = [rng.uniform(-1, 1, (d, 4)) for d in shape]
        got = sptensor.mttkrp(X, U, 2)
        self.assertEqual(got.dtype, np.float32)
        np.testing.assert_allclose(got, mttkrp_reference(subs, vals.astype(np.float64), U, 2), rtol=1e-4, atol=1e-5)

    def test_real_tensor_with_out(self):
        X = sptensor.read(JF17K)
        rng = np.random.default_rng(4)
        U = [rng.uniform(0, 1, (d, 8)) for d in X.shape]
        out = np.empty((X.shape[3], 8))
        r = sptensor.mttkrp(X, U, 3, out=out)
        self.assertIs(r, out)
        np.testing.assert_allclose(out, mttkrp_reference(X.subs.astype(np.int64), X.vals, U, 3), rtol=1e-10)


class Formats(unittest.TestCase):
    def test_conversions(self):
        X = sptensor.read(NATIONS)
        H = X.to_hicoo(block_size=8)
        self.assertEqual(H.stats()["block_size"], 8)
        Y = H.to_coo()
        np.testing.assert_allclose(Y.to_numpy(), X.to_numpy())
        C = X.to_csf("allmode")
        info = C.info()
        self.assertEqual(info["policy"], "allmode")
        self.assertEqual(info["trees"], 3)
        self.assertIn(sptensor.suggest_format(X, 8)["format"], ("coo", "csf", "hicoo"))


def reference_init(shape, rank, seed):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.0, 1.0, (d, rank)) for d in shape]


def random_binary(rng, shape, rank, density):
    """A random 0/1 tensor (ones with probability `density`) as a dense array
    and a sptensor.coo, and uniform [0, 1) initial factors of `rank` columns,
    all drawn from rng in that order."""
    binary = (rng.uniform(size=shape) < density).astype(np.float64)
    subs = np.argwhere(binary > 0)
    X = sptensor.coo(subs, np.ones(len(subs)), shape=shape)
    return binary, X, [rng.uniform(0.0, 1.0, (d, rank)) for d in shape]


class Decompositions(unittest.TestCase):
    def test_cp_als_result(self):
        X = sptensor.read(NATIONS)
        r = sptensor.cp_als(X, 4, max_iters=30, seed=7)
        self.assertEqual(r.weights.shape, (4,))
        self.assertEqual([f.shape for f in r.factors], [(14, 4), (55, 4), (14, 4)])
        self.assertEqual(len(r.fit_history), r.iterations)
        self.assertAlmostEqual(r.fit_history[-1], r.fit)
        self.assertTrue(np.all(np.diff(r.weights) <= 0))  # sorted by decreasing weight
        # fit = 1 - ||X - M|| / ||X||, recomputed densely.
        M = np.einsum("r,ir,jr,kr->ijk", r.weights, *r.factors)
        D = X.to_numpy()
        self.assertAlmostEqual(1 - np.linalg.norm(D - M) / np.linalg.norm(D), r.fit, places=8)
        # Same seed, same result; CSF input gives the same model.
        r2 = sptensor.cp_als(X.to_csf(), 4, max_iters=30, seed=7)
        self.assertAlmostEqual(r2.fit, r.fit, places=8)

    def test_printitn_prints_like_pyttb(self):
        X = sptensor.read(NATIONS)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            sptensor.cp_als(X, 3, max_iters=4, tol=0.0, printitn=2)
            sptensor.tucker(X, [2, 2, 2], max_iters=3, tol=0.0, printitn=3)
        lines = out.getvalue().splitlines()
        self.assertEqual([l.split(":")[0] for l in lines], [" Iter  2", " Iter  4", " Iter  3"])
        self.assertIn("f-delta", lines[0])
        with self.assertRaises(TypeError):
            sptensor.cp_als(X, 3, printitn=0.5)

    def test_ctrl_c_stops_and_keeps_the_model(self):
        if threading.current_thread() is not threading.main_thread():
            self.skipTest("signals reach the main thread only")
        X = sptensor.read(NATIONS)
        before = signal.getsignal(signal.SIGINT)
        for run in (lambda: sptensor.cp_als(X, 6, max_iters=2_000_000, tol=0.0),
                    lambda: sptensor.tucker(X, [3, 3, 3], max_iters=2_000_000, tol=0.0)):
            timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            started = time.monotonic()
            with self.assertRaises(KeyboardInterrupt) as cm:
                run()
            timer.join()
            self.assertLess(time.monotonic() - started, 10.0)
            r = cm.exception.result  # the model so far
            self.assertGreater(r.iterations, 0)
            self.assertLess(r.iterations, 2_000_000)
            self.assertTrue(0.0 < r.fit < 1.0)
            self.assertIs(signal.getsignal(signal.SIGINT), before)  # the caller's handler is back

    def test_pyttb_objects_accepted(self):
        try:
            import pyttb  # noqa: F401
        except ImportError:
            self.skipTest("pyttb is not installed")
        X = sptensor.read(NATIONS)
        P = X.to_pyttb()
        r = sptensor.cp_als(X, 3, max_iters=10, tol=0.0, seed=7)
        rp = sptensor.cp_als(P, 3, max_iters=10, tol=0.0, seed=7)  # used to raise AttributeError
        self.assertAlmostEqual(rp.fit, r.fit, places=12)
        # A pyttb.ktensor as init: its factor matrices, as pyttb's cp_als.
        rk = sptensor.cp_als(X, 3, max_iters=2, tol=0.0, init=r.to_pyttb())
        rl = sptensor.cp_als(X, 3, max_iters=2, tol=0.0, init=[f.copy() for f in r.to_pyttb().factor_matrices])
        self.assertAlmostEqual(rk.fit, rl.fit, places=12)
        t = sptensor.tucker(X, [2, 3, 2], max_iters=5, tol=0.0)
        tp = sptensor.tucker(P, [2, 3, 2], max_iters=5, tol=0.0)
        self.assertAlmostEqual(tp.fit, t.fit, places=12)
        # TuckerResult.to_pyttb: a pyttb.ttensor of the same model.
        T = t.to_pyttb()
        M = np.einsum("abc,ia,jb,kc->ijk", t.core, *t.factors)
        self.assertLess(np.abs(T.full().data - M).max(), 1e-12 * max(1.0, np.abs(M).max()))
        self.assertEqual(sptensor.suggest_format(P, 4)["format"], sptensor.suggest_format(X, 4)["format"])

    def test_tucker_result(self):
        X = sptensor.read(NATIONS)
        t = sptensor.tucker(X, [3, 4, 5], max_iters=10)
        self.assertEqual(t.core.shape, (3, 4, 5))
        for U in t.factors:
            np.testing.assert_allclose(U.T @ U, np.eye(U.shape[1]), atol=1e-10)
        D = X.to_numpy()
        M = np.einsum("abc,ia,jb,kc->ijk", t.core, *t.factors)
        self.assertAlmostEqual(1 - np.linalg.norm(D - M) / np.linalg.norm(D), t.fit, places=8)
        # ttmc: every CPU method gives the same fit; a bad name is an error.
        ctx = sptensor.Context(backend="cpu")
        for method in ("one_shot", "chain"):
            tm = sptensor.tucker(X, [3, 4, 5], max_iters=10, ttmc=method, ctx=ctx)
            self.assertAlmostEqual(tm.fit, t.fit, places=8, msg=method)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.tucker(X, [3, 4, 5], ttmc="fastest")

    @unittest.skipIf(ttb is None, "pyttb is not installed")
    def test_cp_als_against_pyttb(self):
        X = sptensor.read(NATIONS)
        subs = X.subs.astype(np.int64)
        vals = X.vals
        for rank, iters in ((4, 15), (8, 10)):
            init = reference_init(X.shape, rank, 20240601 + rank)
            T = ttb.sptensor(subs, vals.reshape(-1, 1), X.shape)
            M, _, out = ttb.cp_als(T, rank, stoptol=0.0, maxiters=iters, init=ttb.ktensor([f.copy() for f in init]),
                                   printitn=0)
            r = sptensor.cp_als(X, rank, max_iters=iters, tol=0.0, init=init)
            self.assertEqual(r.iterations, iters)
            fit_ref = float(out["fit"])
            self.assertLessEqual(abs(r.fit - fit_ref), 1e-6 * abs(fit_ref), f"rank {rank}: {r.fit} vs {fit_ref}")
            np.testing.assert_allclose(r.weights, np.asarray(M.weights), rtol=1e-4)
            for n in range(3):
                np.testing.assert_allclose(r.factors[n], M.factor_matrices[n], rtol=1e-4, atol=1e-6)

    @unittest.skipIf(ttb is None, "pyttb is not installed")
    def test_pyttb_interop(self):
        X = sptensor.read(NATIONS)
        T = X.to_pyttb()
        self.assertEqual(tuple(T.shape), X.shape)
        self.assertAlmostEqual(T.norm(), X.norm(), places=10)
        Y = sptensor.from_pyttb(T)
        np.testing.assert_array_equal(Y.subs, X.subs)
        np.testing.assert_array_equal(Y.vals, X.vals)
        r = sptensor.cp_als(X, 3, max_iters=5, seed=2)
        K = r.to_pyttb()
        # pyttb's own fit of our model matches ours: 1 - ||X - K|| / ||X||.
        fit = 1 - np.sqrt(T.norm() ** 2 + K.norm() ** 2 - 2 * T.innerprod(K)) / T.norm()
        self.assertAlmostEqual(fit, r.fit, places=8)

    @unittest.skipIf(ttb is None, "pyttb is not installed")
    def test_dense_pyttb_tensor_accepted(self):
        # A dense pyttb.tensor: from_pyttb keeps its nonzero entries, and a
        # decomposition takes it as it takes the sparse tensor.
        X = sptensor.read(NATIONS)
        D = X.to_pyttb().full()
        Y = sptensor.from_pyttb(D)
        self.assertEqual(Y.shape, X.shape)
        np.testing.assert_array_equal(Y.to_pyttb().full().data, D.data)
        a = sptensor.cp_als(D, 2, max_iters=3, tol=0.0, seed=1)
        b = sptensor.cp_als(X, 2, max_iters=3, tol=0.0, seed=1)
        self.assertAlmostEqual(a.fit, b.fit, places=10)

    @unittest.skipIf(ttb is None, "pyttb is not installed")
    def test_tucker_against_pyttb(self):
        X = sptensor.read(NATIONS)
        T = ttb.sptensor(X.subs.astype(np.int64), X.vals.reshape(-1, 1), X.shape)
        ranks = [3, 4, 5]
        rng = np.random.default_rng(20241123)
        init = [np.linalg.qr(rng.uniform(0.0, 1.0, (d, r)))[0] for d, r in zip(X.shape, ranks)]
        M, _, out = ttb.tucker_als(T, ranks, stoptol=0.0, maxiters=6, init=[f.copy() for f in init], printitn=0)
        t = sptensor.tucker(X, ranks, max_iters=6, tol=0.0, init=init)
        fit_ref = float(out["fit"])
        self.assertLessEqual(abs(t.fit - fit_ref), 1e-6 * abs(fit_ref), f"{t.fit} vs {fit_ref}")
        for n in range(3):
            A, B = t.factors[n], np.asarray(M.factor_matrices[n])
            self.assertLess(np.linalg.norm(B - A @ (A.T @ B), 2), 1e-6)  # same subspace
        # Same model up to the factors' rotation: compare reconstructions.
        ours = np.einsum("abc,ia,jb,kc->ijk", t.core, *t.factors)
        theirs = M.full().data
        np.testing.assert_allclose(ours, theirs, atol=1e-8)


def ttb_dense(r):
    """A pyttb result (sptensor, tensor or scalar) as a numpy array or float."""
    if isinstance(r, ttb.sptensor):
        return r.full().data
    if isinstance(r, ttb.tensor):
        return r.data
    return r


def ttm_reference(D, U, mode):
    """D x_mode U^T for U of shape (D.shape[mode], R), densely."""
    return np.moveaxis(np.tensordot(D, U, axes=([mode], [0])), -1, mode)


def unfold(D, mode):
    """Kolda's mode-n unfolding (lowest other mode fastest)."""
    return np.moveaxis(D, mode, 0).reshape(D.shape[mode], -1, order="F")


class TensorTimes(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(11)
        self.rng = rng
        self.shape = (6, 7, 5)
        self.subs, self.vals = random_tensor(rng, self.shape, 70)
        self.X = sptensor.coo(self.subs, self.vals, shape=self.shape)
        self.D = dense_from(self.subs, self.vals, self.shape)
        self.T = ttb.sptensor(self.subs.astype(np.int64), self.vals.reshape(-1, 1), self.shape) if ttb else None

    def test_ttv(self):
        vecs = [self.rng.uniform(-1, 1, d) for d in self.shape]
        for mode in range(3):
            Y = sptensor.ttv(self.X, vecs[mode], mode)
            self.assertEqual(Y.shape, tuple(d for m, d in enumerate(self.shape) if m != mode))
            ref = np.tensordot(self.D, vecs[mode], axes=([mode], [0]))
            np.testing.assert_allclose(Y.to_numpy(), ref, rtol=1e-12, atol=1e-14)
            others = [vecs[m] for m in range(3) if m != mode]
            got = sptensor.ttv_chain(self.X, [None if m == mode else vecs[m] for m in range(3)], mode)
            ref_chain = self.D
            for m in (2, 1, 0):  # highest first, so the remaining axes keep their numbers
                if m != mode:
                    ref_chain = np.tensordot(ref_chain, vecs[m], axes=([m], [0]))
            np.testing.assert_allclose(got, ref_chain, rtol=1e-12, atol=1e-14)
            if ttb:
                np.testing.assert_allclose(ttb_dense(self.T.ttv(vecs[mode], mode)), ref, rtol=1e-12, atol=1e-14)
                np.testing.assert_allclose(got, ttb_dense(self.T.ttv(others, exclude_dims=mode)), rtol=1e-12,
                                           atol=1e-14)
        total = sptensor.ttv_all(self.X, vecs)
        self.assertAlmostEqual(total, float(np.einsum("ijk,i,j,k->", self.D, *vecs)), places=12)
        if ttb:
            self.assertAlmostEqual(total, float(self.T.ttv(vecs)), places=12)
        X32 = self.X.astype(np.float32)
        Y32 = sptensor.ttv(X32, vecs[1], 1)
        self.assertEqual(Y32.dtype, np.float32)
        np.testing.assert_allclose(Y32.to_numpy(), np.tensordot(self.D, vecs[1], axes=([1], [0])), rtol=1e-5,
                                   atol=1e-5)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.ttv(self.X, np.ones(3), 0)

    def test_ttm(self):
        U = [self.rng.uniform(-1, 1, (d, r)) for d, r in zip(self.shape, (3, 4, 2))]
        for mode in range(3):
            Y = sptensor.ttm(self.X, U[mode], mode)
            self.assertEqual(Y.dense_modes, (mode,))
            ref = ttm_reference(self.D, U[mode], mode)
            self.assertEqual(Y.shape, ref.shape)
            np.testing.assert_allclose(Y.to_numpy(), ref, rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(Y.to_coo().to_numpy(), ref, rtol=1e-12, atol=1e-14)
            self.assertEqual(Y.blocks.shape, (Y.nfibers, U[mode].shape[1]))
            if ttb:
                np.testing.assert_allclose(ttb_dense(self.T.ttm(U[mode], mode, transpose=True)), ref, rtol=1e-12,
                                           atol=1e-14)
            # Semi-sparse TTM in a second mode, and the same as one chain.
            other = (mode + 1) % 3
            Z = Y.ttm(U[other], other)
            ref2 = ttm_reference(ref, U[other], other)
            self.assertEqual(Z.dense_modes, tuple(sorted((mode, other))))
            np.testing.assert_allclose(Z.to_numpy(), ref2, rtol=1e-12, atol=1e-13)
            C = sptensor.ttm_chain(self.X, [U[mode], U[other]], [mode, other])
            np.testing.assert_allclose(C.to_numpy(), ref2, rtol=1e-12, atol=1e-13)
            if ttb:
                np.testing.assert_allclose(
                    ttb_dense(self.T.ttm([U[mode], U[other]], [mode, other], transpose=True)), ref2, rtol=1e-12,
                    atol=1e-13)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.ttm(self.X, U[0], 1)  # wrong row count

    def test_ttmc_and_fcoo(self):
        ranks = (2, 3, 4)
        U = [self.rng.uniform(-1, 1, (d, r)) for d, r in zip(self.shape, ranks)]
        for mode in range(3):
            ref_core = self.D
            for m in range(3):
                if m != mode:
                    ref_core = ttm_reference(ref_core, U[m], m)
            ref = unfold(ref_core, mode)
            got = sptensor.ttmc(self.X, [None if m == mode else U[m] for m in range(3)], mode)
            self.assertEqual(got.shape, (self.shape[mode], int(np.prod([r for m, r in enumerate(ranks) if m != mode]))))
            np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13)
            if ttb:
                np.testing.assert_allclose(unfold(ttb_dense(self.T.ttm(U, exclude_dims=mode, transpose=True)), mode),
                                           ref, rtol=1e-12, atol=1e-13)
            F = sptensor.FCOO(self.X, "mttkrp", mode, threadlen=8)
            info = F.info()
            self.assertEqual((info["operation"], info["mode"], info["threadlen"], info["shape"]),
                             ("mttkrp", mode, 8, self.shape))
            self.assertLessEqual(info["segments"], self.shape[mode])
            np.testing.assert_allclose(F.ttmc(U), ref, rtol=1e-12, atol=1e-13)
            W = [self.rng.uniform(-1, 1, (d, 5)) for d in self.shape]
            np.testing.assert_allclose(F.mttkrp(W), sptensor.mttkrp(self.X, W, mode), rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(F.to_coo().to_numpy(), self.D, rtol=0, atol=0)
            Ft = sptensor.FCOO(self.X, "ttm", mode)
            np.testing.assert_allclose(Ft.ttm(U[mode]).to_numpy(), ttm_reference(self.D, U[mode], mode), rtol=1e-12,
                                       atol=1e-13)
            with self.assertRaises(sptensor.UnsupportedError):
                sptensor.mttkrp(Ft, W, mode)  # built for TTM
            with self.assertRaises(sptensor.UnsupportedError):
                sptensor.mttkrp(F, W, (mode + 1) % 3)  # built for another mode
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.FCOO(self.X, "mttkrp", 3)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.FCOO(self.X, "mttkrp", 0, threadlen=7)
        self.assertIn(sptensor.fcoo_suggest_threadlen(10 ** 6, 32, np.float32), (8, 16, 32))

    def test_hbcsf(self):
        W = [self.rng.uniform(-1, 1, (d, 5)) for d in self.shape]
        for mode in range(3):
            for plain in (False, True):
                # small limits force fiber and slice splits on this small tensor
                H = sptensor.HBCSF(self.X, mode, fiber_threshold=2, slice_split_nnz=3, plain=plain)
                info = H.info()
                self.assertEqual((info["order"], info["root_mode"], info["nnz"]), (3, mode, self.X.nnz))
                self.assertEqual(info["coo_nnz"] + info["csl_nnz"] + info["bcsf_nnz"], self.X.nnz)
                if plain:
                    self.assertEqual(info["bcsf_nnz"], self.X.nnz)
                np.testing.assert_allclose(H.mttkrp(W), sptensor.mttkrp(self.X, W, mode), rtol=1e-12, atol=1e-13)
                np.testing.assert_allclose(H.to_coo().to_numpy(), self.D, rtol=0, atol=0)
                for other in range(3):  # every mode from this one tree
                    np.testing.assert_allclose(sptensor.mttkrp(H, W, other), sptensor.mttkrp(self.X, W, other),
                                               rtol=1e-12, atol=1e-13)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.HBCSF(self.X, 3)

    def test_hls(self):
        W = [self.rng.uniform(-1, 1, (d, 5)) for d in self.shape]
        U = [self.rng.uniform(-1, 1, (d, r)) for d, r in zip(self.shape, (2, 3, 4))]
        for mode in range(3):
            # threshold 1: every tile dense; the default (78 cells) leaves this small tensor sparse
            for threshold in (1, 0):
                # exact: the products must match on a GPU context too
                H = sptensor.HLS(self.X, mode, dense_threshold=threshold, precision="exact")
                info = H.info()
                self.assertEqual((info["order"], info["root_mode"], info["input_nnz"]), (3, mode, self.X.nnz))
                self.assertEqual(info["dense_nnz"] + info["sparse_nnz"], info["nnz"])
                self.assertEqual(info["dense_tiles"] + info["sparse_tiles"], info["tiles"])
                self.assertEqual(info["precision"], 4)
                if info["threshold_calibrated"]:  # measured on the GPU
                    self.assertEqual(threshold, 0)
                    self.assertTrue(1 <= info["dense_threshold"] <= 4096)
                else:
                    self.assertEqual(info["dense_threshold"], threshold or 78)
                if threshold == 1:
                    self.assertEqual(info["sparse_nnz"], 0)
                elif not info["threshold_calibrated"]:
                    self.assertEqual(info["dense_nnz"], 0)
                np.testing.assert_allclose(H.mttkrp(W), sptensor.mttkrp(self.X, W, mode), rtol=1e-12, atol=1e-13)
                np.testing.assert_allclose(H.ttmc(U), sptensor.ttmc(self.X, U, mode), rtol=1e-12, atol=1e-13)
                np.testing.assert_allclose(H.to_coo().to_numpy(), self.D, rtol=0, atol=1e-15)
            with self.assertRaises(sptensor.UnsupportedError):
                sptensor.mttkrp(H, W, (mode + 1) % 3)  # rooted elsewhere
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.HLS(self.X, 3)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.HLS(self.X, 0, slab_depth=3)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.HLS(self.X, 0, precision=9)
        with self.assertRaises(ValueError):
            sptensor.HLS(self.X, 0, precision="fp8")
        self.assertEqual(sptensor.HLS(self.X, 0, precision="bf16").info()["precision"], 2)

    def test_dense(self):
        np.testing.assert_allclose(sptensor.to_dense(self.X), self.D, rtol=0, atol=1e-15)
        np.testing.assert_allclose(self.X.to_dense(), self.D, rtol=0, atol=1e-15)
        with self.assertRaises(sptensor.OutOfMemoryError):
            sptensor.to_dense(self.X, max_bytes=100)
        Y = sptensor.from_dense(self.D)
        self.assertEqual(Y.nnz, int(np.count_nonzero(self.D)))
        np.testing.assert_array_equal(Y.to_numpy(), self.D)
        Y32 = sptensor.from_dense(self.D.astype(np.float32))
        self.assertEqual(Y32.dtype, np.float32)
        X = sptensor.read(NATIONS)
        D = sptensor.to_dense(X)
        self.assertEqual(D.shape, X.shape)
        self.assertAlmostEqual(float(np.linalg.norm(D)), X.norm(), places=10)
        if ttb:
            np.testing.assert_array_equal(D, X.to_pyttb().full().data)

    def test_reorder(self):
        X = sptensor.read(NATIONS)
        D = X.to_numpy()
        for method in ("lexi", "bfs_mcs", "random"):
            P = sptensor.reorder(X, method, seed=3)
            self.assertEqual(P.shape, X.shape)
            perms = P.perms
            for m, p in enumerate(perms):
                np.testing.assert_array_equal(np.sort(p), np.arange(X.shape[m]))
            R = sptensor.relabel(X, P)
            # Coordinate i of mode m became perms[m][i].
            np.testing.assert_array_equal(R.to_numpy()[np.ix_(*[p.astype(np.intp) for p in perms])], D)
            back = sptensor.relabel(R, P.inverse())
            np.testing.assert_array_equal(back.to_numpy(), D)
        P = sptensor.reorder(X)
        R = sptensor.relabel(X, P)
        A = self.rng.uniform(size=(X.shape[1], 3))
        B = P.permute_rows(A, 1)
        np.testing.assert_array_equal(B[P.perms[1].astype(np.intp)], A)
        np.testing.assert_array_equal(P.unpermute_rows(B, 1), A)
        # A model of the relabelled tensor, unpermuted, models the original as well.
        r = sptensor.cp_als(R, 3, max_iters=5, tol=0.0, seed=4)
        u = P.unpermute(r)
        M = np.einsum("r,ir,jr,kr->ijk", u.weights, *u.factors)
        self.assertAlmostEqual(1 - np.linalg.norm(D - M) / np.linalg.norm(D), r.fit, places=8)
        ident = sptensor.Permutation.from_arrays([np.arange(1, d + 1) for d in X.shape], index_base=1)
        np.testing.assert_array_equal(sptensor.relabel(X, ident).to_numpy(), D)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.Permutation.from_arrays([np.zeros(3), np.arange(2)])
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.reorder(X, "nope")

    def test_elementwise_and_unfold(self):
        Y = sptensor.coo(self.subs[::2], self.vals[::2] * 3, shape=self.shape)
        DY = dense_from(self.subs[::2], self.vals[::2] * 3, self.shape)
        np.testing.assert_allclose((self.X + Y).to_numpy(), self.D + DY, atol=1e-14)
        np.testing.assert_allclose((self.X - Y).to_numpy(), self.D - DY, atol=1e-14)
        np.testing.assert_allclose((self.X * Y).to_numpy(), self.D * DY, atol=1e-14)
        np.testing.assert_allclose((self.X * 2.5).to_numpy(), self.D * 2.5, atol=1e-14)
        with self.assertRaises(sptensor.InvalidArgumentError):
            self.X / 0.0
        for mode in range(3):
            row_ptr, col_ind, vals, shape = sptensor.unfold(self.X, mode)
            ref = unfold(self.D, mode)
            self.assertEqual(shape, ref.shape)
            got = np.zeros(shape)
            for i in range(shape[0]):
                got[i, col_ind[row_ptr[i]:row_ptr[i + 1]].astype(np.intp)] = vals[row_ptr[i]:row_ptr[i + 1]]
            np.testing.assert_allclose(got, ref, atol=1e-14)

    def test_cp_apr(self):
        rng = np.random.default_rng(5)
        shape, rank = (12, 10, 8), 3
        model = np.einsum("ir,jr,kr->ijk", *[rng.gamma(0.3, 1.0, (d, rank)) for d in shape]) * 3.0
        counts = rng.poisson(model)
        subs = np.argwhere(counts > 0)
        vals = counts[counts > 0].astype(np.float64)
        X = sptensor.coo(subs, vals, shape=shape)
        init = [rng.uniform(0.0, 1.0, (d, rank)) for d in shape]
        r = sptensor.cp_apr(X, rank, max_outer_iters=20, tol=0.0, init=init)
        self.assertEqual(r.iterations, 20)
        self.assertTrue(np.all(r.weights >= 0) and np.all(np.diff(r.weights) <= 0))
        for f in r.factors:
            self.assertTrue(np.all(f >= 0))
            np.testing.assert_allclose(f.sum(axis=0), 1.0, rtol=1e-10)
        # The log-likelihood of the returned model, recomputed with numpy.
        M = np.einsum("r,ir,jr,kr->ijk", r.weights, *r.factors)
        self.assertAlmostEqual(float(np.sum(vals * np.log(M[tuple(subs.T)])) - M.sum()), r.loglik, places=6)
        if ttb:
            T = ttb.sptensor(subs.astype(np.int64), vals.reshape(-1, 1), shape)
            _, _, out = ttb.cp_apr(T, rank, algorithm="mu", stoptol=0.0, maxiters=20,
                                   init=ttb.ktensor([f.copy() for f in init]), printitn=0)
            self.assertLessEqual(abs(r.loglik - float(out["obj"])), 1e-6 * abs(float(out["obj"])))
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.cp_apr(X * -1.0, 2)  # negative values

    def test_gcp_opt(self):
        rng = np.random.default_rng(8)
        shape, rank = (7, 6, 5), 2
        binary, X, init = random_binary(rng, shape, rank, 0.4)
        r = sptensor.gcp_opt(X, rank, loss="bernoulli_odds", init=init, maxiter=15)
        self.assertEqual(r.iterations, 15)
        self.assertEqual(len(r.objective_history), 15)
        self.assertTrue(np.all(np.diff(r.objective_history) <= 0))
        np.testing.assert_array_equal(r.weights, 1.0)
        for f in r.factors:
            self.assertTrue(np.all(f >= 0))  # the loss's own lower bound
        # The objective of the returned model, recomputed with numpy (pyttb's handle).
        M = np.einsum("ir,jr,kr->ijk", *r.factors)
        self.assertAlmostEqual(float(np.sum(np.log(M + 1) - binary * np.log(M + 1e-10))), r.objective, places=9)
        if ttb:
            from pyttb.gcp.handles import Objectives
            from pyttb.gcp.optimizers import LBFGSB
            _, _, info = ttb.gcp_opt(ttb.tensor(binary.copy()), rank, Objectives.BERNOULLI_ODDS, LBFGSB(maxiter=15),
                                     init=[f.copy() for f in init], printitn=0)
            self.assertLessEqual(abs(r.objective - info["final_f"]), 1e-8 * abs(info["final_f"]))
            self.assertIsInstance(r.to_pyttb(), ttb.ktensor)
            # pyttb's dense mask (1 = observed) and an Objectives member are accepted.
            mask = (rng.uniform(size=shape) < 0.7).astype(np.float64)
            r2 = sptensor.gcp_opt(X, rank, loss=Objectives.GAUSSIAN, init=init, maxiter=10, missing=mask)
            M2 = np.einsum("ir,jr,kr->ijk", *r2.factors)
            self.assertAlmostEqual(float(np.sum(mask * (M2 - binary) ** 2)), r2.objective, places=9)
        with self.assertRaises(sptensor.UnsupportedError):
            sptensor.gcp_opt(X, 2, optimizer="sgd", missing=X)  # GCP-SGD takes no missing entries
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.gcp_opt(X * 2.0, 2, loss="bernoulli_logit")  # not binary
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.gcp_opt(X, 2, loss="cauchy")

    def test_gcp_opt_sgd(self):
        rng = np.random.default_rng(9)
        shape, rank = (9, 8, 7), 2
        binary, X, init = random_binary(rng, shape, rank, 0.3)
        kw = dict(loss="bernoulli_logit", init=init, optimizer="sgd", maxiter=6, epoch_iters=50, rate=0.01, seed=3,
                  gradient_samples=(40, 60), function_samples=100)
        r = sptensor.gcp_opt(X, rank, **kw)
        self.assertEqual(r.iterations, len(r.objective_history))
        self.assertTrue(np.all(np.diff(r.objective_history) <= 0))  # the kept estimate never rises
        self.assertEqual(r.objective, r.objective_history[-1])
        again = sptensor.gcp_opt(X, rank, **kw)  # the same seed: the same run
        for a, b in zip(r.factors, again.factors):
            np.testing.assert_array_equal(a, b)
        other = sptensor.gcp_opt(X, rank, **dict(kw, seed=4))
        self.assertFalse(all(np.array_equal(a, b) for a, b in zip(r.factors, other.factors)))
        # The exact objective (numpy) went down from the start.
        def exact(factors):
            M = np.einsum("ir,jr,kr->ijk", *factors)
            return float(np.sum(np.logaddexp(0, M) - binary * M))
        start = sptensor.gcp_opt(X, rank, **dict(kw, rate=1e-12, maxiter=1))
        self.assertLess(exact(r.factors), exact(start.factors))
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.gcp_opt(X, rank, **dict(kw, rate=0.0))
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.gcp_opt(X, rank, **dict(kw, gradient_samples=(1, 2, 3)))
        if ttb:
            from pyttb.gcp.optimizers import Adam
            from pyttb.gcp.samplers import StratifiedCount
            # A pyttb Adam instance's settings are used (its max_iters = epochs).
            adam = Adam(rate=0.01, epoch_iters=50, max_iters=6, printitn=0)
            r3 = sptensor.gcp_opt(X, rank, loss="bernoulli_logit", init=init, optimizer=adam, seed=3,
                                  gradient_samples=StratifiedCount(num_zeros=60, num_nonzeros=40),
                                  function_samples=100)
            for a, b in zip(r.factors, r3.factors):
                np.testing.assert_array_equal(a, b)

    def test_backend_device(self):
        info = sptensor.backend_info()
        if not info["cuda_available"]:
            with self.assertRaises(sptensor.DeviceError):
                sptensor.set_device(0, ctx=sptensor.Context(backend="cpu"))
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.set_device(-1, ctx=sptensor.Context(backend="cpu"))


def ktensor_dense(weights, factors):
    """The dense array sum_r weights[r] * outer(factors[0][:, r], ...)."""
    letters = "abcdefgh"[:len(factors)]
    return np.einsum(",".join(f"{l}r" for l in letters) + ",r->" + letters, *factors, weights)


class WrappedRawFunctions(unittest.TestCase):
    """The C functions that were callable only through sptensor._lib.lib()
    and now have Pythonic wrappers, each against numpy."""

    def setUp(self):
        self.rng = np.random.default_rng(11)

    def test_khatri_rao(self):
        A, B, C = (self.rng.random((n, 3)) for n in (4, 5, 2))
        K = sptensor.khatri_rao(A, B)
        self.assertEqual(K.shape, (20, 3))
        np.testing.assert_allclose(K, np.einsum("ir,jr->ijr", A, B).reshape(20, 3), rtol=1e-15)
        K3 = sptensor.khatri_rao([A, B, C])  # a list, as pyttb's khatrirao
        np.testing.assert_allclose(K3, np.einsum("ir,jr,kr->ijkr", A, B, C).reshape(40, 3), rtol=1e-15)
        if ttb is not None:
            np.testing.assert_allclose(K3, ttb.khatrirao(A, B, C), rtol=1e-15)
        self.assertEqual(sptensor.khatri_rao(A.astype(np.float32), B.astype(np.float32)).dtype, np.float32)
        self.assertEqual(sptensor.khatri_rao(A.astype(np.float32), B).dtype, np.float64)
        np.testing.assert_array_equal(sptensor.khatri_rao(A), A)
        with self.assertRaisesRegex(ValueError, r"matrices\[1\] has 2 columns"):
            sptensor.khatri_rao(A, B[:, :2])
        with self.assertRaisesRegex(ValueError, r"matrices\[0\] must be a 2-D array"):
            sptensor.khatri_rao(A[:, 0], B)
        with self.assertRaisesRegex(TypeError, r"matrices\[1\]"):
            sptensor.khatri_rao(A, "B")
        with self.assertRaises(ValueError):
            sptensor.khatri_rao()

    def test_kronecker(self):
        A, B = self.rng.random((2, 3)), self.rng.random((4, 5))
        np.testing.assert_allclose(sptensor.kronecker(A, B), np.kron(A, B), rtol=1e-15)
        np.testing.assert_allclose(sptensor.kronecker(A.T, B), np.kron(A.T, B), rtol=1e-15)  # column-major input
        with self.assertRaisesRegex(ValueError, "^b must be a 2-D array"):
            sptensor.kronecker(A, np.ones(3))
        with self.assertRaisesRegex(TypeError, "^a must be"):
            sptensor.kronecker(None, B)

    def test_ktensor_norm_innerprod_loglikelihood(self):
        X = sptensor.read(NATIONS)
        r = sptensor.cp_als(X, 3, max_iters=5, tol=0.0, seed=2)
        M = ktensor_dense(r.weights, r.factors)
        D = X.to_numpy()
        self.assertAlmostEqual(sptensor.ktensor_norm(r), np.linalg.norm(M), delta=1e-10 * np.linalg.norm(M))
        self.assertAlmostEqual(r.norm(), np.linalg.norm(M), delta=1e-10 * np.linalg.norm(M))
        inner = float(np.sum(D * M))
        self.assertAlmostEqual(sptensor.innerprod(X, r), inner, delta=1e-10 * abs(inner))
        self.assertAlmostEqual(r.innerprod(X), inner, delta=1e-10 * abs(inner))
        # The fit the library reports is 1 - ||X - M|| / ||X||, from these terms.
        fit = 1 - np.sqrt(max(X.norm() ** 2 + r.norm() ** 2 - 2 * inner, 0)) / X.norm()
        self.assertAlmostEqual(fit, r.fit, places=6)
        # A (weights, factors) pair and a pyttb.ktensor give the same.
        self.assertAlmostEqual(sptensor.ktensor_norm((r.weights, r.factors)), r.norm(), places=10)
        if ttb is not None:
            K = r.to_pyttb()
            self.assertAlmostEqual(sptensor.ktensor_norm(K), K.norm(), delta=1e-10 * K.norm())
            self.assertAlmostEqual(sptensor.innerprod(X.to_pyttb(), K), K.innerprod(X.to_pyttb()),
                                   delta=1e-10 * abs(inner))
        # Poisson log-likelihood of a nonnegative model on count data.
        counts = sptensor.coo(np.array([[0, 0, 0], [1, 2, 0], [2, 1, 3]]), np.array([1.0, 2.0, 3.0]), (3, 3, 4))
        a = sptensor.cp_apr(counts, 2, max_outer_iters=5, seed=1)
        Ma = ktensor_dense(a.weights, a.factors)
        Dc = counts.to_numpy()
        expected = float(np.sum(Dc[Dc > 0] * np.log(Ma[Dc > 0])) - Ma.sum())
        self.assertAlmostEqual(sptensor.loglikelihood(counts, a), expected, delta=1e-9 * abs(expected))
        self.assertAlmostEqual(sptensor.loglikelihood(counts, a), a.loglik, delta=1e-9 * abs(expected))
        # Argument checks name the argument.
        with self.assertRaisesRegex(TypeError, "^model must be"):
            sptensor.ktensor_norm("model")
        with self.assertRaisesRegex(ValueError, r"model factors\[1\] has 2 columns for 3 weights"):
            sptensor.ktensor_norm((np.ones(3), [np.ones((4, 3)), np.ones((5, 2))]))
        with self.assertRaisesRegex(ValueError, "model has shape"):
            sptensor.innerprod(X, (np.ones(3), [np.ones((4, 3))] * 3))
        with self.assertRaisesRegex(TypeError, "^tensor must be"):
            sptensor.innerprod(np.ones((2, 2)), r)

    def test_sort_and_file_dtype(self):
        subs, vals = random_tensor(self.rng, (6, 7, 8), 60)
        X = sptensor.coo(subs, vals, shape=(6, 7, 8))
        for mode_order in (None, [2, 0, 1]):
            Y = X.copy().sort(mode_order)
            keys = Y.subs[:, mode_order or [0, 1, 2]].astype(np.int64)
            self.assertTrue(all(tuple(keys[i]) <= tuple(keys[i + 1]) for i in range(len(keys) - 1)))
            np.testing.assert_allclose(Y.to_numpy(), X.to_numpy(), rtol=0, atol=0)  # same tensor
        Z = X.copy().sort_morton()
        np.testing.assert_allclose(Z.to_numpy(), X.to_numpy(), rtol=0, atol=0)
        def morton(c):  # interleaved bits, mode 0 highest at each level
            key = 0
            for bit in range(3, -1, -1):
                for m in range(3):
                    key = (key << 1) | ((int(c[m]) >> bit) & 1)
            return key
        keys = [morton(c) for c in Z.subs]
        self.assertEqual(keys, sorted(keys))
        with self.assertRaisesRegex(ValueError, "mode_order must be a permutation"):
            X.sort([0, 0, 1])
        with self.assertRaisesRegex(TypeError, r"mode_order\[1\] must be an integer"):
            X.sort([0, 1.5, 2])
        view = sptensor.coo(np.asfortranarray(subs, dtype=np.uint32), vals, shape=(6, 7, 8), copy=False)
        with self.assertRaises(sptensor.ReadOnlyError):
            view.sort()
        self.assertIsNone(X.file_dtype)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.sptb")
            X.astype(np.float32).write(path)
            Y = sptensor.read(path)  # float64 values from a float32 file
            self.assertEqual((Y.dtype, Y.file_dtype), (np.float64, np.float32))

    def test_append(self):
        subs, vals = random_tensor(self.rng, (5, 6, 7), 30)
        X = sptensor.coo(subs[:20], vals[:20], shape=(5, 6, 7))
        X.append(subs[20:], vals[20:])
        self.assertEqual((X.nnz, X.shape), (30, (5, 6, 7)))
        np.testing.assert_allclose(X.to_numpy(), dense_from(subs, vals, (5, 6, 7)), rtol=0, atol=0)
        X.append([[1, 1, 1]], [2.0], index_base=1)  # coordinate (0, 0, 0)
        self.assertEqual(X.nnz, 31)
        with self.assertRaises(sptensor.InvalidArgumentError):  # outside the shape, not grown
            X.append([[5, 0, 0]], [1.0])
        self.assertEqual((X.nnz, X.shape), (31, (5, 6, 7)))  # unchanged on error
        X.append([[9, 0, 0]], [1.0], grow=True)
        self.assertEqual((X.nnz, X.shape), (32, (10, 6, 7)))
        with self.assertRaisesRegex(ValueError, r"subs must have shape \(n, 3\)"):
            X.append([[1, 2]], [1.0])
        with self.assertRaisesRegex(ValueError, "vals has 2 values for 1 coordinates"):
            X.append([[1, 2, 3]], [1.0, 2.0])
        with self.assertRaisesRegex(TypeError, "subs must hold integers"):
            X.append([[1.5, 2, 3]], [1.0])
        view = sptensor.coo(np.asfortranarray(subs, dtype=np.uint32), vals, shape=(5, 6, 7), copy=False)
        with self.assertRaises(sptensor.ReadOnlyError):
            view.append([[0, 0, 0]], [1.0])

    def test_csf_fibers_and_hicoo_mode_stats(self):
        subs = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 2]])
        X = sptensor.coo(subs, np.ones(5), shape=(2, 2, 3))
        C = X.to_csf("onemode")
        order = C.info()["mode_order"][0]
        fibers = C.fibers(0)
        # Distinct prefixes of the coordinates in the tree's mode order, per level.
        expected = [len({tuple(c[order[:level + 1]]) for c in subs}) for level in range(3)]
        self.assertEqual(fibers, expected)
        self.assertEqual(fibers[-1], 5)
        with self.assertRaisesRegex(ValueError, "tree must be between"):
            C.fibers(C.info()["trees"])
        H = X.to_hicoo()
        stats = H.mode_stats(1)
        self.assertGreaterEqual(stats["slabs"], 1)
        self.assertLessEqual(stats["max_slab_nnz"], 5)
        self.assertIn(stats["strategy"], ("direct", "privatized"))
        with self.assertRaisesRegex(ValueError, "mode must be between 0 and 2"):
            H.mode_stats(3)
        with self.assertRaisesRegex(TypeError, "mode must be an integer"):
            H.mode_stats(1.0)

    def test_log_messages(self):
        import logging
        X = sptensor.read(NATIONS)
        ctx = sptensor.Context(threads=1)
        messages = []
        ctx.set_log(lambda level, message: messages.append((level, message)), verbosity=2)
        sptensor.cp_als(X, 2, max_iters=3, tol=0.0, ctx=ctx)
        self.assertTrue(any(level == 2 and "iteration 3" in m for level, m in messages), messages)
        self.assertTrue(all(isinstance(m, str) and level in (1, 2) for level, m in messages), messages)
        # A logging.Logger: details at DEBUG.
        logger = logging.getLogger("sptensor.test")
        with self.assertLogs(logger, level="DEBUG") as logs:
            ctx.set_log(logger, verbosity=2)
            sptensor.cp_als(X, 2, max_iters=2, tol=0.0, ctx=ctx)
        self.assertTrue(any("iteration 2" in line for line in logs.output), logs.output)
        # Off again: nothing more arrives.
        ctx.set_log(None)
        count = len(messages)
        sptensor.cp_als(X, 2, max_iters=2, tol=0.0, ctx=ctx)
        self.assertEqual(len(messages), count)
        # A failing callback warns and the run goes on.
        def failing(level, message):
            raise RuntimeError("log sink broken")
        ctx.set_log(failing, verbosity=2)
        with self.assertWarnsRegex(RuntimeWarning, "log sink broken"):
            r = sptensor.cp_als(X, 2, max_iters=2, tol=0.0, ctx=ctx)
        self.assertEqual(r.iterations, 2)
        ctx.set_log(None)
        with self.assertRaisesRegex(TypeError, "^callback must be"):
            ctx.set_log(42)
        with self.assertRaisesRegex(ValueError, "verbosity"):
            ctx.set_log(print, verbosity=-1)


class Errors(unittest.TestCase):
    def test_status_and_message(self):
        with self.assertRaises(sptensor.FileIOError) as cm:
            sptensor.read("/nonexistent/x.tns")
        e = cm.exception
        self.assertIsInstance(e, OSError)
        self.assertEqual((e.status, e.status_name, e.function), (-2, "SPT_ERR_IO", "spt_read"))
        self.assertIn("/nonexistent/x.tns", e.message)
        self.assertIsInstance(e, FileNotFoundError)  # a missing file, as open() reports it
        with tempfile.TemporaryDirectory() as d:  # a directory exists: not a FileNotFoundError
            with self.assertRaises(sptensor.FileIOError) as cm:
                sptensor.read(d)
            self.assertNotIsInstance(cm.exception, FileNotFoundError)

        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bad.tns")
            with open(p, "w") as f:
                f.write("1 1 1 1.0\n2 2 x 3.0\n")
            with self.assertRaises(sptensor.ParseError) as cm:
                sptensor.read(p)
            self.assertEqual(cm.exception.status_name, "SPT_ERR_PARSE")
            self.assertIn(":2", cm.exception.message)  # file:line

        X = sptensor.read(NATIONS)
        with self.assertRaises(sptensor.InvalidArgumentError) as cm:
            sptensor.cp_als(X, 0)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertEqual(cm.exception.status, -1)
        self.assertTrue(cm.exception.message)
        with self.assertRaises(sptensor.InvalidArgumentError):
            sptensor.cp_als(X, 2, format="nope")
        for fmt in ("hbcsf", "hls"):  # named formats CP-ALS does not run on
            with self.assertRaises(sptensor.UnsupportedError) as cm:
                sptensor.cp_als(X, 2, format=fmt)
            self.assertIn("CP-ALS does not run on", cm.exception.message)
        with self.assertRaises(sptensor.SptensorError):
            sptensor.coo(np.array([[0, 5]]), [1.0], shape=(2, 2))  # index outside dims

    def test_counts_are_checked_by_name(self):
        X = sptensor.read(NATIONS)
        with self.assertRaises(ValueError) as cm:
            sptensor.cp_als(X, -1)  # was an out-of-memory error (wrapped to 2^32 - 1)
        self.assertIn("rank", str(cm.exception))
        for bad in (2.5, True, "3", None):  # 2.5 used to run rank 2
            with self.assertRaises(TypeError) as cm:
                sptensor.cp_als(X, bad)
            self.assertIn("rank", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            sptensor.cp_als(X, 2, max_iters=2**40)  # would wrap in the C int
        self.assertIn("max_iters", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            sptensor.tucker(X, [3, 4.0, 5])
        self.assertIn("ranks[1]", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            sptensor.tucker(X, [3, 0, 5])
        self.assertIn("ranks[1]", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            sptensor.cp_apr(X, 2.0)
        self.assertIn("rank", str(cm.exception))
        with self.assertRaises(ValueError):
            sptensor.suggest_format(X, -3)
        # numpy integers are integers.
        r = sptensor.cp_als(X, np.int64(2), max_iters=np.int32(2), tol=0.0)
        self.assertEqual((r.weights.shape, r.iterations), ((2,), 2))

    def test_not_converged_is_not_an_error(self):
        X = sptensor.read(NATIONS)
        r = sptensor.cp_als(X, 3, max_iters=2, tol=0.0)
        self.assertFalse(r.converged)
        self.assertEqual(r.iterations, 2)


class Backends(unittest.TestCase):
    def test_cpu_isa(self):
        ctx = sptensor.Context(backend="cpu", threads=1)
        self.assertEqual(ctx.cpu_isa, "auto")
        self.assertIn(ctx.backend_info()["cpu_isa"], ("baseline", "x86-64-v3"))
        X = sptensor.read(NATIONS, ctx=ctx)
        U = reference_init(X.shape, 3, 5)
        wide = sptensor.mttkrp(X, U, 0, ctx=ctx)
        ctx.cpu_isa = "baseline"
        self.assertEqual((ctx.cpu_isa, ctx.backend_info()["cpu_isa"]), ("baseline", "baseline"))
        np.testing.assert_allclose(sptensor.mttkrp(X, U, 0, ctx=ctx), wide, rtol=1e-12)
        with self.assertRaises(sptensor.InvalidArgumentError):
            ctx.cpu_isa = "avx9000"
        self.assertEqual(ctx.cpu_isa, "baseline")

    def test_select_and_info(self):
        ctx = sptensor.Context(backend="reference", threads=1)
        self.assertEqual(ctx.backend, "reference")
        self.assertEqual(ctx.threads, 1)
        info = ctx.backend_info()
        self.assertEqual(info["backend"], "reference")
        X = sptensor.read(NATIONS, ctx=ctx)
        U = reference_init(X.shape, 3, 5)
        ref = sptensor.mttkrp(X, U, 0, ctx=ctx)
        ctx.backend = "cpu"
        np.testing.assert_allclose(sptensor.mttkrp(X, U, 0, ctx=ctx), ref, rtol=1e-12)
        with self.assertRaises(sptensor.InvalidArgumentError):
            ctx.backend = "quantum"
        sptensor.set_backend("cpu")
        self.assertEqual(sptensor.get_backend(), "cpu")
        sptensor.set_backend("auto")
        if not sptensor.backend_info()["cuda_available"]:
            with self.assertRaises(sptensor.DeviceError) as cm:
                ctx.backend = "cuda"
            self.assertTrue(cm.exception.message)
            self.assertEqual(ctx.backend, "cpu")  # unchanged on error


class Discovery(unittest.TestCase):
    def run_python(self, code, env):
        full = {k: v for k, v in os.environ.items() if k not in ("SPTENSOR_LIBRARY", "PKG_CONFIG_PATH")}
        full.update(env)
        return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=60)

    def test_missing_library_raises_at_first_use(self):
        code = ("import sptensor\n"
                "try:\n    sptensor.library_version()\n"
                "except sptensor.LibraryNotFoundError as e:\n    print('NOTFOUND', e)\n")
        r = self.run_python(code, {"SPTENSOR_LIBRARY": "/nonexistent/libsptensor.so.1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("NOTFOUND", r.stdout)
        self.assertIn("SPTENSOR_LIBRARY", r.stdout)

    def test_directory_and_pkg_config(self):
        libdir = os.path.dirname(os.path.abspath(sptensor.library_path()))
        code = "import sptensor; print(sptensor.library_path()); print(sptensor.library_version())"
        r = self.run_python(code, {"SPTENSOR_LIBRARY": libdir})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith(libdir), r.stdout)
        if subprocess.run(["sh", "-c", "command -v pkg-config"], capture_output=True).returncode == 0:
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "sptensor.pc"), "w") as f:
                    f.write(f"libdir={libdir}\nName: sptensor\nDescription: test\nVersion: 1.0.0\nLibs: -lsptensor\n")
                r = self.run_python(code, {"PKG_CONFIG_PATH": d})
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertTrue(r.stdout.startswith(libdir), r.stdout)


class Layouts(unittest.TestCase):
    # Every struct of the headers, as generated into sptensor/_capi.py; the
    # probe (generated from the same headers) prints the compiler's layout.
    MIRRORS = {s.__name__: s for s in _lib.STRUCTS}

    def test_options_init_sizes(self):
        inits = [(name, getattr(_lib, name[:-len("_init_size")])) for name in _lib.SIGNATURES
                 if name.endswith("_options_init_size")]
        self.assertGreaterEqual(len(inits), 10)
        for init, struct in inits:
            opts = _lib.init_options(init, struct)
            self.assertEqual(opts.struct_size, ctypes.sizeof(struct), init)

    def test_friendly_names(self):
        self.assertIs(_lib.CpdOptions, _lib.spt_cpd_options)
        self.assertIs(_lib.HicooStatistics, _lib.spt_hicoo_statistics)
        self.assertIs(_lib.CALLBACK, _lib.spt_tucker_callback)  # same signature, one ctypes type

    @unittest.skipIf(PROBE is None, "no layout probe given")
    def test_against_c_header(self):
        lines = subprocess.run([PROBE], capture_output=True, text=True, check=True).stdout.split("\n")
        seen = set()
        for line in filter(None, lines):
            struct, field, value = line.split()
            mirror = self.MIRRORS[struct]
            if field == "-":
                self.assertEqual(ctypes.sizeof(mirror), int(value), f"sizeof({struct})")
            else:
                self.assertEqual(getattr(mirror, field).offset, int(value), f"offsetof({struct}, {field})")
                seen.add((struct, field))
        for struct, mirror in self.MIRRORS.items():
            for name, _ in mirror._fields_:
                self.assertIn((struct, name), seen, f"{struct}.{name} is not checked by the probe")


if __name__ == "__main__":
    argv = [sys.argv[0]] + ["-v"]
    result = unittest.main(argv=argv, exit=False).result
    if ttb is None:
        print(("FAIL: " if IN_CI else "NOTE: ") + f"pyttb not importable ({PYTTB_ERROR}); the pyttb cases were skipped")
        if IN_CI:
            sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
