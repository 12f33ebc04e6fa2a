#!/usr/bin/env bash
# Runs `sptensor cpd --model gcp` (GCP-OPT and GCP-SGD on the same file,
# seeds and threads) and then the Fortran program gcp_check, which must
# reproduce the CLI's objective and estimate through the Fortran module.
# Usage: run_fortran_gcp.sh CLI GCP_CHECK DATA_FILE WORK_DIR
set -euo pipefail
# shellcheck source=tests/fortran/cli_runs.sh
source "$(dirname "${BASH_SOURCE[0]}")/cli_runs.sh" gcp "$@"

objective=$(cli_value opt 'final objective' 'sptensor cpd --model gcp' \
  cpd "$data" -r 3 --iters 20 --seed 1 --threads 2 -q --model gcp --loss bernoulli)
estimate=$(cli_value sgd 'final objective estimate' 'sptensor cpd --optimizer sgd' \
  cpd "$data" -r 3 --iters 4 --seed 1 --threads 2 -q --model gcp --loss bernoulli --optimizer sgd \
  --epoch-iters 50 --rate 0.01)
echo "CLI: GCP-OPT objective $objective, GCP-SGD estimate $estimate"
"$program" "$data" "$objective" "$estimate"
