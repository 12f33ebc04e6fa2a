#!/usr/bin/env bash
# `sptensor cpd --model gcp --missing FILE`: a rank-1 tensor (4 x 3 x 2,
# every entry stored) with one corrupted entry. Listing that coordinate in a
# mask file (one line; the reader sees it as a 1 x 1 x 1 tensor and cpd
# gives it the tensor's dims) leaves it out: rank-1 GCP-OPT (Gaussian) then
# fits the rest exactly (objective below 1e-6), while without the mask the
# corrupted entry costs more than 1. A mask with an index beyond the
# tensor's dims is refused (exit 1, the library names the mismatch).
# Usage: gcp_missing.sh SPTENSOR WORK_DIR
set -euo pipefail
cli=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
a=(1 2 3 4) b=(1 2 1) c=(1 3)
for k in 0 1; do
  for j in 0 1 2; do
    for i in 0 1 2 3; do
      v=$((a[i] * b[j] * c[k]))
      [[ $i$j$k == 000 ]] && v=100  # the corrupted entry (true value 1)
      echo "$((i + 1)) $((j + 1)) $((k + 1)) $v"
    done
  done
done > "$work/x.tns"
echo "1 1 1 1" > "$work/mask.tns"
echo "5 1 1 1" > "$work/bad-mask.tns"

objective() {  # log file -> final objective
  sed -n 's/^final objective \([0-9.eE+-]*\) .*/\1/p' "$1"
}
run=("$cli" cpd "$work/x.tns" -r 1 --model gcp --loss gaussian --iters 500 --tol 1e-12 --seed 2 --quiet)
"${run[@]}" | tee "$work/plain.txt"
"${run[@]}" --missing "$work/mask.tns" | tee "$work/masked.txt"
grep -q "missing entries from --missing" "$work/masked.txt" || { echo "FAILED: no --missing note" >&2; exit 1; }
plain=$(objective "$work/plain.txt")
masked=$(objective "$work/masked.txt")
[[ -n $plain && -n $masked ]] || { echo "FAILED: no 'final objective' line" >&2; exit 1; }
awk -v p="$plain" -v m="$masked" 'BEGIN { exit !(m < 1e-6 && p > 1) }' \
  || { echo "FAILED: objective with the mask $masked (want < 1e-6), without $plain (want > 1)" >&2; exit 1; }
echo "objective without the mask $plain, with it $masked"

if "${run[@]}" --missing "$work/bad-mask.tns" > "$work/bad.txt" 2> "$work/bad.err"; then
  echo "FAILED: a mask beyond the tensor's dims was accepted" >&2
  exit 1
fi
grep -q "must have the tensor's dims" "$work/bad.err" || { cat "$work/bad.err" >&2; echo "FAILED: no dims message" >&2; exit 1; }
echo "a mask beyond the dims is refused: $(head -1 "$work/bad.err")"
