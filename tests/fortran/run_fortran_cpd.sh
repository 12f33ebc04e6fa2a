#!/usr/bin/env bash
# Runs the `sptensor` CLI (CP-ALS, Tucker and CP-APR on the same file, same
# seeds and threads) and then the Fortran program cpd_check, which must
# reproduce the CLI's fits, lambda, factors and log-likelihood through the
# Fortran module.
# Usage: run_fortran_cpd.sh CLI CPD_CHECK DATA_FILE WORK_DIR
set -euo pipefail
cli=$1
program=$2
data=$3
work=$4
fail() { echo "fortran cpd test: FAILED: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
"$cli" cpd "$data" -r 4 --iters 8 --tol 0 --seed 1 --threads 2 -q -o "$work/cli" > "$work/cpd.out" \
  || { cat "$work/cpd.out"; fail "sptensor cpd"; }
cpd_fit=$(sed -n 's/^final fit \([0-9.]*\) after.*/\1/p' "$work/cpd.out")
[[ -n "$cpd_fit" ]] || { cat "$work/cpd.out"; fail "no 'final fit' line from sptensor cpd"; }
"$cli" tucker "$data" -r 3,4,3 --iters 5 --tol 0 --threads 2 -q > "$work/tucker.out" \
  || { cat "$work/tucker.out"; fail "sptensor tucker"; }
tucker_fit=$(sed -n 's/^final fit \([0-9.]*\) after.*/\1/p' "$work/tucker.out")
[[ -n "$tucker_fit" ]] || { cat "$work/tucker.out"; fail "no 'final fit' line from sptensor tucker"; }
"$cli" cpd "$data" -r 3 --iters 5 --tol 0 --seed 2 --model poisson --threads 2 -q > "$work/apr.out" \
  || { cat "$work/apr.out"; fail "sptensor cpd --model poisson"; }
apr_loglik=$(sed -n 's/^final log-likelihood \([-+0-9.eE]*\) after.*/\1/p' "$work/apr.out")
[[ -n "$apr_loglik" ]] || { cat "$work/apr.out"; fail "no 'final log-likelihood' line from sptensor cpd --model poisson"; }
echo "CLI: CP-ALS fit $cpd_fit, Tucker fit $tucker_fit, CP-APR log-likelihood $apr_loglik"
"$program" "$data" "$cpd_fit" "$work/cli" "$tucker_fit" "$apr_loglik"
