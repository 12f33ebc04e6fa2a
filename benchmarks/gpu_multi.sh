#!/usr/bin/env bash
# CP-ALS seconds per iteration on one GPU against several GPUs of one host
# (docs/guide.md "Several GPUs"), run on the GPU machine from the
# repository root with the CLI built (BUILD, default build-gpu):
#   benchmarks/gpu_multi.sh FILE...
# Env: RANK (32), ITERS (10), DTYPE (float32), DEVICES (the device lists to
# compare, default one GPU, then 2, 4 and 8 as far as the host has them).
# Per file and device list: the median of the
# per-iteration times (the first sweep left out: it includes the first
# kernel launches), the final fit, the nonzeros per device and each
# device's MTTKRP / exchange seconds, one JSON line each on stdout; the
# runs' logs go to $OUT (or /tmp). NCCL must be loadable (libnccl.so.2 on
# the loader path, the nvidia-nccl-cu13 Python package of the active
# environment, or the file NCCL_LIBRARY names: passed as --nccl-library).
set -uo pipefail
build=${BUILD:-build-gpu}
rank=${RANK:-32}
iters=${ITERS:-10}
dtype=${DTYPE:-float32}
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
default_lists="0"
for n in 2 4 8; do [ "$gpus" -ge "$n" ] && default_lists="$default_lists $(seq -s, 0 $((n - 1)))"; done
lists=${DEVICES:-$default_lists}
out=${OUT:-/tmp}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
for file in "$@"; do
  for list in $lists; do
    log="$out/gpu_multi_$(basename "$file")_${list//,/-}.log"
    "$build/sptensor" cpd "$file" -r "$rank" -n "$iters" --tol 0 --dtype "$dtype" \
      --backend cuda --devices "$list" ${NCCL_LIBRARY:+--nccl-library "$NCCL_LIBRARY"} -v > "$log" 2>&1 || { echo "failed: $file on $list" >&2; tail -5 "$log" >&2; continue; }
    median=$(awk '/^iter /{ if ($2 > 1) print $(NF-1) }' "$log" | sort -g |
      awk '{ t[n++] = $1 } END { if (!n) print "null"; else print (n % 2 ? t[(n-1)/2] : (t[n/2-1] + t[n/2]) / 2) }')
    fit=$(awk '/^final fit/{ print $3 }' "$log")
    split=$(grep -o "nonzeros per device [0-9 /]*" "$log" | head -1)
    times=$(grep -o "per device: device .*" "$log" | head -1 | sed 's/^per device: //')
    printf '{"gpu":"%s","file":"%s","devices":"%s","rank":%s,"dtype":"%s","median_s_per_iter":%s,"fit":%s,"split":"%s","mttkrp_exchange_s":"%s"}\n' \
      "$gpu" "$(basename "$file")" "$list" "$rank" "$dtype" "$median" "${fit:-null}" "$split" "$times"
  done
done
