#!/usr/bin/env bash
# Runs the `sptensor` CLI (CP-ALS, Tucker and CP-APR on the same file, same
# seeds and threads) and then the Fortran program cpd_check, which must
# reproduce the CLI's fits, lambda, factors and log-likelihood through the
# Fortran module.
# Usage: run_fortran_cpd.sh CLI CPD_CHECK DATA_FILE WORK_DIR
set -euo pipefail
# shellcheck source=tests/fortran/cli_runs.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_runs.sh" cpd "$@"

cpd_fit=$(cli_value cpd 'final fit' 'sptensor cpd' \
  cpd "$data" -r 4 --iters 8 --tol 0 --seed 1 --threads 2 -q -o "$work/cli")
tucker_fit=$(cli_value tucker 'final fit' 'sptensor tucker' \
  tucker "$data" -r 3,4,3 --iters 5 --tol 0 --threads 2 -q)
apr_loglik=$(cli_value apr 'final log-likelihood' 'sptensor cpd --model poisson' \
  cpd "$data" -r 3 --iters 5 --tol 0 --seed 2 --model poisson --threads 2 -q)
echo "CLI: CP-ALS fit $cpd_fit, Tucker fit $tucker_fit, CP-APR log-likelihood $apr_loglik"
"$program" "$data" "$cpd_fit" "$work/cli" "$tucker_fit" "$apr_loglik"
