#!/usr/bin/env bash
# cpd -o writes lambda and factor files of the right shape, and --init reads
# them back: one more ALS sweep from the written model cannot lower the fit
# (each ALS step solves its least-squares problem exactly), so the fit after
# --init must be at least the saved model's fit.
# Usage: cpd_files.sh SPTENSOR WORK_DIR FILE RANK DIM1 DIM2 ...
set -euo pipefail
cli=$1
work=$2
input=$3
rank=$4
shift 4
dims=("$@")
rm -rf "$work"
mkdir -p "$work"
prefix=$work/model

"$cli" cpd "$input" -r "$rank" --iters 15 --tol 0 --seed 3 -o "$prefix" | tee "$work/first.txt"
fit1=$(sed -n 's/^final fit \([0-9.eE+-]*\).*/\1/p' "$work/first.txt")
[[ -n $fit1 ]] || { echo "FAILED: no 'final fit' line" >&2; exit 1; }

check_shape() {  # file rows cols
  local rows cols
  rows=$(wc -l < "$1")
  cols=$(awk '{ print NF }' "$1" | sort -u | tr '\n' ' ')
  [[ $rows -eq $2 && $cols == "$3 " ]] || { echo "FAILED: $1 is $rows rows x [$cols] columns, expected $2 x $3" >&2; exit 1; }
}
check_shape "$prefix.lambda.txt" "$rank" 1
for k in "${!dims[@]}"; do
  check_shape "$prefix.mode-$((k + 1)).txt" "${dims[$k]}" "$rank"
done
echo "factor files have the expected shapes"

"$cli" cpd "$input" --init "$prefix" --iters 1 | tee "$work/second.txt"
fit2=$(sed -n 's/^final fit \([0-9.eE+-]*\).*/\1/p' "$work/second.txt")
awk -v a="$fit1" -v b="$fit2" 'BEGIN { exit !(b >= a - 1e-9 && b <= 1) }' \
  || { echo "FAILED: fit after --init ($fit2) is below the saved model's fit ($fit1)" >&2; exit 1; }
echo "fit $fit1 -> $fit2 after one sweep from the saved model"
