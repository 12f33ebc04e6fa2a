#!/usr/bin/env python3
"""GCP-SGD time to a given loss: libsptensor (spt_gcp_opt, optimizer SGD,
through the Python package) against pyttb.gcp_opt with its Adam solver, on
the same tensor, loss, rank, initial factors, Adam settings and stratified
sample sizes (pyttb's defaults on both sides), on the same machine.

The target loss is pyttb's: the exact objective over the full tensor of the
model pyttb returns after --epochs epochs of --epoch-iters Adam steps. Our
time to that loss is found by running ours for 1, 2, ... epochs (a run of k
epochs is the first k epochs of a longer one: same seed, same samples) and
taking the first run whose exact objective is at or below the target. Wall
and CPU time (process time, every thread) are measured around the whole
gcp_opt call, sampler set-up included (pyttb sorts the nonzeros' linear
indices; ours too); reading the tensor is not timed. The two run in turn,
--repeats rounds, alternating which goes first. The exact objective is
computed here with numpy from the factors, for both models the same way:
Poisson sum(m) - sum_nz x log(m + 1e-10) (sum(m) from the factors' column
sums), Gaussian ||X||^2 - 2 <X, M> + ||M||^2.

  benchmarks/gcp_sgd_vs_pyttb.py [--data ../shared/data] [--tensor text-trigrams-mc100]
      [--loss poisson] [--rank 10] [--epochs 2] [--epoch-iters 10] [--repeats 2]
      [--threads 2] [--backends cpu[,cuda]] [--out benchmarks/results/X.jsonl]

--backends runs ours once per listed backend in each round (cuda: the
sampled MTTKRPs on the GPU through the CUDA plugin, which the library finds
as usual, e.g. SPT_PLUGIN_PATH); pyttb runs once per round.

Needs numpy and pyttb (pip install pyttb) and the Python package of this
tree (PYTHONPATH=python SPTENSOR_LIBRARY=build/libsptensor.so).
OMP_WAIT_POLICY=passive and OPENBLAS_NUM_THREADS=1 are set here.
"""
import argparse
import json
import os
import platform
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import pyttb as ttb  # noqa: E402
from pyttb.gcp.handles import Objectives  # noqa: E402
from pyttb.gcp.optimizers import Adam  # noqa: E402

import sptensor  # noqa: E402

EPS = 1e-10


def model_at(factors, subs):
    """Model values at the nonzeros' coordinates (in blocks, bounded memory)."""
    out = np.empty(len(subs))
    for start in range(0, len(subs), 1 << 20):
        block = subs[start:start + (1 << 20)]
        p = factors[0][block[:, 0]].copy()
        for n in range(1, len(factors)):
            p *= factors[n][block[:, n]]
        out[start:start + len(block)] = p.sum(axis=1)
    return out


def exact_objective(loss, factors, subs, vals):
    m = model_at(factors, subs)
    if loss == "poisson":
        total = np.prod([f.sum(axis=0) for f in factors], axis=0).sum()  # sum of every model entry
        return float(total - np.sum(vals * np.log(m + EPS)))
    gram = np.ones((factors[0].shape[1],) * 2)
    for f in factors:
        gram *= f.T @ f
    return float(np.sum(vals * vals) - 2 * np.sum(vals * m) + gram.sum())


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    ap.add_argument("--tensor", default="text-trigrams-mc100")
    ap.add_argument("--loss", default="poisson", choices=["poisson", "gaussian"])
    ap.add_argument("--rank", type=int, default=10)
    ap.add_argument("--epochs", type=int, default=2, help="pyttb's epochs (its run sets the target loss)")
    ap.add_argument("--epoch-iters", type=int, default=10)
    ap.add_argument("--rate", type=float, default=1e-3)
    ap.add_argument("--max-our-epochs", type=int, default=0, help="ours tries 1..this many epochs (0: 2 x --epochs)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--backends", default="cpu", help="comma-separated backends ours runs on: cpu, cuda")
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    path = os.path.join(args.data, args.tensor + ".tns.xz")
    if not os.path.exists(path):
        path = os.path.join(args.data, args.tensor + ".tns")
    X, read_wall, _ = timed(lambda: sptensor.read(path))
    subs = np.ascontiguousarray(X.subs.astype(np.int64))
    vals = np.ascontiguousarray(X.vals.astype(np.float64))
    shape = tuple(int(d) for d in X.shape)
    pyttb_X = ttb.sptensor(subs, vals.reshape(-1, 1), shape, copy=False)
    print(f"{args.tensor}: shape {shape}, {len(vals)} nonzeros, read in {read_wall:.1f} s", flush=True)

    rng = np.random.default_rng(args.seed)
    init = [rng.uniform(0.0, 1.0, (d, args.rank)) for d in shape]
    objective = Objectives.POISSON if args.loss == "poisson" else Objectives.GAUSSIAN
    adam = dict(rate=args.rate, epoch_iters=args.epoch_iters, max_fails=1000000)
    max_ours = args.max_our_epochs or 2 * args.epochs
    machine = dict(host=platform.node(), cpu=platform.processor() or platform.machine(), cores=os.cpu_count(),
                   load_before=os.getloadavg())
    records = []

    def run_pyttb(round_no):
        np.random.seed(args.seed + round_no)
        (M, _, info), wall, cpu = timed(lambda: ttb.gcp_opt(
            pyttb_X, args.rank, objective, Adam(max_iters=args.epochs, printitn=0, **adam),
            init=[f.copy() for f in init], printitn=0))
        f = exact_objective(args.loss, M.factor_matrices, subs, vals)
        rec = dict(impl="pyttb", round=round_no, epochs=args.epochs, wall_s=wall, cpu_s=cpu, exact_objective=f,
                   f_est=float(info["f_est_trace"][-1]))
        print(f"  pyttb {args.epochs} epochs: exact objective {f:.8e}, wall {wall:.1f} s, cpu {cpu:.1f} s", flush=True)
        return rec

    def run_ours(round_no, target, backend):
        sptensor.set_backend(backend)
        reached = None
        tried = []
        for k in range(1, max_ours + 1):
            r, wall, cpu = timed(lambda: sptensor.gcp_opt(
                X, args.rank, loss=args.loss, init=[f.copy() for f in init], optimizer="sgd", maxiter=k,
                seed=args.seed + 100 * round_no, **adam))
            f = exact_objective(args.loss, r.factors, subs, vals)
            tried.append(dict(epochs=k, wall_s=wall, cpu_s=cpu, exact_objective=f))
            print(f"  ours ({backend}) {k} epochs: exact objective {f:.8e}, wall {wall:.1f} s, cpu {cpu:.1f} s", flush=True)
            if target is not None and f <= target:
                reached = tried[-1]
                break
        return dict(impl="libsptensor", backend=backend, round=round_no, runs=tried, reached=reached)

    sptensor.set_threads(args.threads)
    backends = [b for b in args.backends.split(",") if b]
    for round_no in range(args.repeats):
        # Alternate which goes first; ours needs pyttb's target, so when
        # ours goes first it runs against the previous round's target.
        if round_no % 2 == 0:
            p = run_pyttb(round_no)
            o = [run_ours(round_no, p["exact_objective"], b) for b in backends]
        else:
            prev = [r for r in records if r["impl"] == "pyttb"][-1]["exact_objective"]
            o = [run_ours(round_no, prev, b) for b in backends]
            p = run_pyttb(round_no)
        records += [p] + o

    common = dict(benchmark="gcp_sgd_vs_pyttb", tensor=args.tensor, shape=shape, nnz=len(vals), loss=args.loss,
                  rank=args.rank, rate=args.rate, epoch_iters=args.epoch_iters, threads=args.threads,
                  pyttb_version=getattr(ttb, "__version__", "?"), numpy_version=np.__version__,
                  machine=dict(machine, load_after=os.getloadavg()),
                  date=time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()))
    lines = [json.dumps(dict(common, **r)) for r in records]
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
