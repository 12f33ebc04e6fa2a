#!/usr/bin/env python3
"""GCP with a Poisson loss on count data and a Bernoulli loss on binary data,
and GCP-SGD on the whole e-mail tensor (docs/gcp.md). usage: gcp_counts.py DATA_DIR (the folder with
email-eu-day.tns.xz and nations.tns.xz)."""
import os
import sys

import numpy as np

import sptensor

data = sys.argv[1] if len(sys.argv) > 1 else "tests/data"

# Counts: e-mails sent (sender x receiver x day) in a European research
# institution. Keep the 30 busiest senders and receivers and sum the days
# into weeks: a 30 x 30 x 115 tensor of weekly e-mail counts.
X = sptensor.read(os.path.join(data, "email-eu-day.tns.xz"))
subs, vals = X.subs.astype(np.int64), X.vals
senders = np.argsort(-np.bincount(subs[:, 0], weights=vals))[:30]
receivers = np.argsort(-np.bincount(subs[:, 1], weights=vals))[:30]
keep = np.isin(subs[:, 0], senders) & np.isin(subs[:, 1], receivers)
sender_pos = {int(u): i for i, u in enumerate(senders)}
receiver_pos = {int(u): i for i, u in enumerate(receivers)}
weekly = np.zeros((30, 30, (X.shape[2] + 6) // 7))
for (s, r, day), v in zip(subs[keep], vals[keep]):
    weekly[sender_pos[int(s)], receiver_pos[int(r)], day // 7] += v
counts = sptensor.coo(np.argwhere(weekly > 0), weekly[weekly > 0], shape=weekly.shape)

fit = sptensor.gcp_opt(counts, rank=4, loss="poisson", seed=1, maxiter=200)
print(f"email counts {counts.shape}, {counts.nnz} nonzeros: Poisson GCP rank 4, objective "
      f"{fit.objective:.6e} after {fit.iterations} iterations (converged: {fit.converged})")
M = np.einsum("ir,jr,kr->ijk", *fit.factors)
print(f"  total e-mails {weekly.sum():.0f}, in the model {M.sum():.1f}")  # Poisson GCP keeps the total
assert abs(M.sum() - weekly.sum()) < 1e-2 * weekly.sum()
assert all((f >= 0).all() for f in fit.factors)

# Binary: which of 14 nations had which of 55 relations with which other.
nations = sptensor.read(os.path.join(data, "nations.tns.xz"))
links = sptensor.gcp_opt(nations, rank=5, loss="bernoulli_logit", seed=2, maxiter=100)
P = 1 / (1 + np.exp(-np.einsum("ir,jr,kr->ijk", *links.factors)))  # link probabilities
truth = np.zeros(nations.shape)
truth[tuple(nations.subs.astype(np.int64).T)] = 1
accuracy = float(((P > 0.5) == (truth > 0)).mean())
print(f"nations {nations.shape}: Bernoulli-logit GCP rank 5, objective {links.objective:.6e}, "
      f"{accuracy:.1%} of the entries predicted right at p > 0.5")
assert accuracy > 0.85

# GCP-SGD: the whole e-mail tensor (979 x 979 x 804, 7.7e8 entries: too
# many for GCP-OPT) with the Poisson loss; zeros are sampled.
sgd = sptensor.gcp_opt(X, rank=8, loss="poisson", optimizer="sgd", epoch_iters=100, maxiter=5, rate=1e-2, seed=3)
print(f"email-eu-day {X.shape}, {X.nnz} nonzeros: Poisson GCP-SGD rank 8, objective estimate "
      f"{sgd.objective:.6e} after {sgd.iterations} epochs (first epoch {sgd.objective_history[0]:.6e})")
assert np.isfinite(sgd.objective) and sgd.objective <= sgd.objective_history[0]
assert all((f >= 0).all() for f in sgd.factors)
