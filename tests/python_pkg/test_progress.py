#!/usr/bin/env python3
"""Tests of the optional progress bars of the installed package (progress=True).

usage: test_progress.py DATA_DIR

Run by tests/python_pkg/run.sh after test_package.py (same installed
package and library). With tqdm installed: sptensor.read draws a bar fed by
the library's read-progress callback that reaches 100 %, sptensor.write
one fed by the write-progress callback (text, compressed, .sptb, .bin), cp_als / tucker /
cp_apr draw one step per iteration with the fit (log-likelihood) as postfix,
printitn output is unchanged beside the bar, and a KeyboardInterrupt inside
the read or write callback reaches the caller. Without tqdm (its import
blocked): progress=True warns once per process
(ProgressUnavailableWarning), runs without a bar and gives the same result.
A missing tqdm skips the tqdm cases, except with CI=true, where it fails.
"""
import contextlib
import io
import os
import sys
import tempfile
import unittest
import warnings
from unittest import mock

IN_CI = os.environ.get("CI", "").lower() == "true"

import numpy as np  # run.sh has checked numpy

import sptensor
from sptensor import _progress

try:
    import tqdm  # noqa: F401
    TQDM_ERROR = None
except ImportError as e:
    TQDM_ERROR = str(e)

DATA_DIR = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data")
NATIONS = os.path.join(DATA_DIR, "nations.tns.xz")


def captured_stderr(fn):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        result = fn()
    return result, err.getvalue()


@unittest.skipIf(TQDM_ERROR is not None, f"tqdm is not installed ({TQDM_ERROR})")
class WithTqdm(unittest.TestCase):
    def test_read_bar_follows_the_library_callback(self):
        X, err = captured_stderr(lambda: sptensor.read(NATIONS, progress=True))
        self.assertIn("read nations.tns.xz", err)
        # The bar is only moved by the library's callback (nothing fills it
        # afterwards): 100% means the reader reported the end of the file.
        self.assertIn("100%", err)
        self.assertEqual(X.nnz, sptensor.read(NATIONS).nnz)
        # No callback stays installed on the context: a later read is silent.
        _, err = captured_stderr(lambda: sptensor.read(NATIONS))
        self.assertEqual(err, "")

    def test_write_bar_follows_the_library_callback(self):
        X = sptensor.read(NATIONS)
        with tempfile.TemporaryDirectory() as d:
            for name in ("x.tns", "x.tns.gz", "x.sptb", "x.bin"):
                with self.subTest(name):
                    path = os.path.join(d, name)
                    _, err = captured_stderr(lambda: sptensor.write(X, path, progress=True))
                    self.assertIn("write " + name, err)
                    self.assertIn("100%", err)  # moved only by the writer's callback
                    Y = sptensor.read(path)
                    self.assertEqual((Y.shape, Y.nnz), (X.shape, X.nnz))
                    _, err = captured_stderr(lambda: X.write(path))  # no callback left installed
                    self.assertEqual(err, "")
            # A pyttb.sptensor is written as well (copied first).
            try:
                X.to_pyttb()
            except ImportError:
                pass
            else:
                path = os.path.join(d, "p.tns")
                sptensor.write(X.to_pyttb(), path)
                self.assertEqual(sptensor.read(path).nnz, X.nnz)
            with self.assertRaisesRegex(TypeError, "tensor must be"):
                sptensor.write(np.zeros((2, 2)), os.path.join(d, "z.tns"))

    def test_ctrl_c_in_the_write_callback_is_raised_after_the_write(self):
        class Interrupting(_progress._tqdm_class()):
            def update(self, n=1):
                raise KeyboardInterrupt

        X = sptensor.read(NATIONS)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.tns")
            with mock.patch.object(_progress, "_tqdm_class", lambda: Interrupting):
                with self.assertRaises(KeyboardInterrupt):
                    captured_stderr(lambda: sptensor.write(X, path, progress=True))
            self.assertEqual(sptensor.read(path).nnz, X.nnz)  # the write itself completed

    def test_ctrl_c_in_the_read_callback_is_raised_after_the_read(self):
        # SIGINT while the library calls back runs Python's handler inside
        # the callback; the KeyboardInterrupt must reach the caller once the
        # read returns (as without a bar), not vanish inside ctypes.
        class Interrupting(_progress._tqdm_class()):
            def update(self, n=1):
                raise KeyboardInterrupt

        with mock.patch.object(_progress, "_tqdm_class", lambda: Interrupting):
            with self.assertRaises(KeyboardInterrupt):
                captured_stderr(lambda: sptensor.read(NATIONS, progress=True))
        _, err = captured_stderr(lambda: sptensor.read(NATIONS))  # the callback is gone again
        self.assertEqual(err, "")

    def test_decomposition_bars_count_iterations(self):
        X = sptensor.read(NATIONS)
        runs = (("cp_als", lambda p: sptensor.cp_als(X, 3, max_iters=6, tol=0.0, seed=1, progress=p), "fit="),
                ("tucker", lambda p: sptensor.tucker(X, [2, 2, 2], max_iters=6, tol=0.0, progress=p), "fit="),
                ("cp_apr", lambda p: sptensor.cp_apr(X, 2, max_outer_iters=6, tol=0.0, seed=1, progress=p),
                 "loglik="))
        for name, run, postfix in runs:
            with self.subTest(name):
                r, err = captured_stderr(lambda: run(True))
                self.assertEqual(r.iterations, 6)
                self.assertIn(name, err)
                self.assertIn("6/6", err)  # one step per iteration, all of them
                self.assertIn(postfix, err)
                # The bar changes nothing in the result.
                plain, quiet = captured_stderr(lambda: run(False))
                self.assertEqual(quiet, "")
                self.assertEqual(plain.iterations, r.iterations)
                np.testing.assert_allclose(plain.factors[0], r.factors[0], rtol=0, atol=0)

    def test_printitn_beside_the_bar(self):
        X = sptensor.read(NATIONS)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            _, err = captured_stderr(lambda: sptensor.cp_als(X, 3, max_iters=4, tol=0.0, printitn=2, progress=True))
        self.assertEqual([l.split(":")[0] for l in out.getvalue().splitlines()], [" Iter  2", " Iter  4"])
        self.assertIn("4/4", err)


class WithoutTqdm(unittest.TestCase):
    def test_warns_once_and_runs_without_a_bar(self):
        X = sptensor.read(NATIONS)
        expected = sptensor.cp_als(X, 3, max_iters=5, tol=0.0, seed=1)
        # None in sys.modules makes `import tqdm.auto` raise ImportError.
        with mock.patch.dict(sys.modules, {"tqdm": None, "tqdm.auto": None}), \
                mock.patch.object(_progress, "_warned", False), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (r, _), err = captured_stderr(lambda: (sptensor.cp_als(X, 3, max_iters=5, tol=0.0, seed=1, progress=True),
                                                   sptensor.read(NATIONS, progress=True)))
            sptensor.tucker(X, [2, 2, 2], max_iters=2, progress=True)
        relevant = [w for w in caught if issubclass(w.category, sptensor.ProgressUnavailableWarning)]
        self.assertEqual(len(relevant), 1, [str(w.message) for w in caught])
        self.assertIn("tqdm", str(relevant[0].message))
        self.assertEqual(err, "")  # no bar
        self.assertEqual(r.iterations, expected.iterations)
        np.testing.assert_allclose(r.factors[0], expected.factors[0], rtol=0, atol=0)

    def test_progress_false_needs_nothing(self):
        with mock.patch.dict(sys.modules, {"tqdm": None, "tqdm.auto": None}), \
                mock.patch.object(_progress, "_warned", False), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sptensor.read(NATIONS)
        self.assertEqual([w for w in caught if issubclass(w.category, sptensor.ProgressUnavailableWarning)], [])


if __name__ == "__main__":
    result = unittest.main(argv=[sys.argv[0], "-v"], exit=False).result
    if TQDM_ERROR is not None:
        print(("FAIL: " if IN_CI else "NOTE: ") + f"tqdm not importable ({TQDM_ERROR}); the tqdm cases were skipped")
        if IN_CI:
            sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
