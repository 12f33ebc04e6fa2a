#!/usr/bin/env bash
# cpd --reorder relabels the tensor, decomposes and maps the factors back:
# started from the same --init factors (given in the file's labels), every
# method must end at the same fit and write the same factor files as a run
# without reordering, up to rounding.
# Usage: cpd_reorder.sh SPTENSOR WORK_DIR FILE
set -euo pipefail
cli=$1
work=$2
input=$3
rm -rf "$work"
mkdir -p "$work"

"$cli" cpd "$input" -r 3 --iters 2 --tol 0 --seed 5 -q -o "$work/start" > /dev/null
"$cli" cpd "$input" --init "$work/start" --iters 4 --tol 0 -q -o "$work/plain" | tee "$work/plain.txt"
fit_plain=$(sed -n 's/^final fit \([0-9.eE+-]*\).*/\1/p' "$work/plain.txt")
[[ -n $fit_plain ]] || { echo "FAILED: no 'final fit' line" >&2; exit 1; }

for method in lexi bfs random; do
  "$cli" cpd "$input" --init "$work/start" --iters 4 --tol 0 -q --reorder "$method" -o "$work/$method" \
    | tee "$work/$method.txt"
  grep -q "^reordered ($method) in " "$work/$method.txt" || { echo "FAILED: no 'reordered' line for $method" >&2; exit 1; }
  fit=$(sed -n 's/^final fit \([0-9.eE+-]*\).*/\1/p' "$work/$method.txt")
  awk -v a="$fit_plain" -v b="$fit" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }' \
    || { echo "FAILED: --reorder $method fit $fit differs from $fit_plain" >&2; exit 1; }
  for f in lambda mode-1 mode-2 mode-3; do
    paste -d' ' "$work/plain.$f.txt" "$work/$method.$f.txt" | awk -v what="$method $f" '
      { n = NF / 2; for (i = 1; i <= n; ++i) { d = $i - $(i + n); if (d < 0) d = -d; if (d > 1e-7) {
          printf "FAILED: %s line %d column %d: %s vs %s\n", what, NR, i, $i, $(i + n) > "/dev/stderr"; exit 1 } } }'
  done
  echo "--reorder $method: fit and factors match the run without reordering"
done
