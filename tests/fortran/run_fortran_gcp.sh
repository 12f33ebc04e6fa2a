#!/usr/bin/env bash
# Runs `sptensor cpd --model gcp` (GCP-OPT and GCP-SGD on the same file,
# seeds and threads) and then the Fortran program gcp_check, which must
# reproduce the CLI's objective and estimate through the Fortran module.
# Usage: run_fortran_gcp.sh CLI GCP_CHECK DATA_FILE WORK_DIR
set -euo pipefail
cli=$1
program=$2
data=$3
work=$4
fail() { echo "fortran gcp test: FAILED: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
"$cli" cpd "$data" -r 3 --iters 20 --seed 1 --threads 2 -q --model gcp --loss bernoulli > "$work/opt.out" \
  || { cat "$work/opt.out"; fail "sptensor cpd --model gcp"; }
objective=$(sed -n 's/^final objective \([-+0-9.eE]*\) after.*/\1/p' "$work/opt.out")
[[ -n "$objective" ]] || { cat "$work/opt.out"; fail "no 'final objective' line"; }
"$cli" cpd "$data" -r 3 --iters 4 --seed 1 --threads 2 -q --model gcp --loss bernoulli --optimizer sgd \
  --epoch-iters 50 --rate 0.01 > "$work/sgd.out" || { cat "$work/sgd.out"; fail "sptensor cpd --optimizer sgd"; }
estimate=$(sed -n 's/^final objective estimate \([-+0-9.eE]*\) after.*/\1/p' "$work/sgd.out")
[[ -n "$estimate" ]] || { cat "$work/sgd.out"; fail "no 'final objective estimate' line"; }
echo "CLI: GCP-OPT objective $objective, GCP-SGD estimate $estimate"
"$program" "$data" "$objective" "$estimate"
