#!/usr/bin/env bash
# Experiment: base (.gpu-base) vs variants A (.), B (.exp-B), C (.exp-C): bench_gpu float32.
set -uo pipefail
source .device-deps/setup-env.sh
t0=$SECONDS
# Variant trees: this tree with the variant's cuda/ on top.
for v in B D E; do
  mkdir -p /tmp/src-$v && cp -r $(ls -A | grep -v '^\.\|^build') /tmp/src-$v/
  cp -r .exp-$v/cuda/. /tmp/src-$v/cuda/
done
build() {  # SRC BUILD
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSPT_WITH_MPI=OFF -DSPT_WITH_FORTRAN=OFF -DSPT_BUILD_TESTS=OFF > "$2.cfg.log" 2>&1 || { tail -20 "$2.cfg.log"; return 1; }
  ninja -C "$2" -j3 bench_gpu sptensor_cuda > "$2.build.log" 2>&1 || { grep -E "error|FAILED" -A3 "$2.build.log" | head -30; return 1; }
}
declare -A src=([base]=.gpu-base [A]=. [B]=/tmp/src-B [D]=/tmp/src-D [E]=/tmp/src-E)
declare -A bdir=([base]=/tmp/b-base [A]=/tmp/b-A [B]=/tmp/b-B [D]=/tmp/b-D [E]=/tmp/b-E)
for v in base A B D E; do build "${src[$v]}" "${bdir[$v]}" & done
wait
echo "built at $((SECONDS - t0)) s"
for v in base A B D E; do ls "${bdir[$v]}/benchmarks/bench_gpu" > /dev/null || exit 1; done
args=(--ranks 16,32 --repeats 10 --cpd 3 --synthetic 20000000)
mkdir -p /tmp/runs
run() {  # VARIANT ROUND
  SPT_PLUGIN_PATH="${bdir[$1]}" "${bdir[$1]}/benchmarks/bench_gpu" "${args[@]}" --json /tmp/runs/$1-$2.jsonl \
    .gpu-email/email-eu-day.tns > /tmp/runs/$1-$2.log 2>&1 || tail -5 /tmp/runs/$1-$2.log
  echo "$1 round $2 done at $((SECONDS - t0)) s"
}
tables() {
  for v in A B D E; do
    d=/tmp/t-$v; rm -rf $d; mkdir -p $d
    for f in /tmp/runs/base-*.jsonl; do cp $f $d/; done
    for f in /tmp/runs/$v-*.jsonl; do cp $f $d/new-${f##*-}; done
    python3 benchmarks/tools/before_after_table.py $d > $OUT/table-$v.txt 2>&1
  done
}
for v in base A B D E; do run $v 1; done
tables
if [ $((SECONDS - t0)) -lt 380 ]; then
  for v in E D B A base; do run $v 2; [ $((SECONDS - t0)) -gt 520 ] && break; done
  tables
fi
for v in A B D E; do echo "== $v vs base"; tail -8 $OUT/table-$v.txt; done
