#!/usr/bin/env bash
# MPI CP-ALS scaling suite (libsptensor_mpi, bench_mpi), for a multi-core
# host without network (e.g. the GPU machine's 16-core host), run from the
# repository root after `source .device-deps/setup-env.sh` when Open MPI
# comes from .device-deps.
#
#   benchmarks/mpi_suite.sh [FILE ...]
#
# For P in $RANKS (default "1 2 4 8 16"), one OpenMP thread per rank:
#   - every FILE given (default: the largest *.tns* in ../shared/data or .data/xz)
#   - a synthetic Zipf-like tensor of $SYN_NNZ nonzeros (default 200000000)
#     generated in parallel (SYN_NNZ=0 skips it)
# both decompositions (medium- and coarse-grained), rank $RANK (default 16),
# $ITERS sweeps (default 10). One JSON line per run goes to
# $OUT/mpi_<host>_<date>.jsonl (OUT default benchmarks/results/mpi-local); the
# table at the end gives ms/iteration, bytes/iteration measured vs the
# medium-grained model vs coarse-grained, imbalance and strong-scaling
# efficiency (T1 / (P * TP)).
# On the GPU machine: benchmarks/fetch_mpi_deps.sh here first, carry .device-deps-mpi, then
#   source .device-deps-mpi/setup-env.sh && source benchmarks/device_mpi_env.sh && bash benchmarks/mpi_suite.sh
# Env: BUILD (default build-mpi-bench; configured here when missing), JOBS,
# MPIRUN, MPI_CMAKE_ARGS (benchmarks/device_mpi_env.sh sets both), RANKS, RANK, ITERS, SYN_NNZ, SKIP_FILES (1: synthetic only), SYN_DIMS (I,J,K; bench_mpi's default
# scales 20M x 10M x 2M with SYN_NNZ), DECOMP (both | medium | coarse), FORMAT (auto |
# coo | csf | hicoo), MPIRUN_FLAGS.
#
# Time budget: a 2M-nonzero synthetic tensor takes ~0.7-1 s per sweep on one
# core (rank 16, 2-core VM), so 200M nonzeros at P = 1 need ~1-2 minutes per
# sweep plus setup. On a machine with a per-command time limit, split the
# runs, e.g. `RANKS=1 ITERS=3 ...` then `RANKS="2 4 8 16" ...`: the table at
# the end reads every mpi_*.jsonl in $OUT, so strong-scaling efficiency uses
# the P = 1 line of an earlier call.
set -uo pipefail
out="${OUT:-benchmarks/results/mpi-local}"
mkdir -p "$out"
build="${BUILD:-build-mpi-bench}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
ranks="${RANKS:-1 2 4 8 16}"
rank="${RANK:-16}"
iters="${ITERS:-10}"
syn_nnz="${SYN_NNZ:-200000000}"
decomp="${DECOMP:-both}"
format="${FORMAT:-auto}"
flags="${MPIRUN_FLAGS:---oversubscribe --allow-run-as-root --bind-to core --map-by core}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
export OMPI_MCA_btl_vader_single_copy_mechanism=none
jsonl="$out/mpi_$(hostname -s)_$(date -u +%Y%m%dT%H%M%SZ).jsonl"

if [ ! -x "$build/mpi/bench_mpi" ]; then
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_MPI=ON -DSPT_WITH_CUDA=OFF \
    -DSPT_BUILD_TESTS=OFF ${MPI_CMAKE_ARGS:-} > "$out/mpi_build.log" 2>&1 || { tail -40 "$out/mpi_build.log"; exit 1; }
  ninja -C "$build" -j"$jobs" bench_mpi >> "$out/mpi_build.log" 2>&1 ||
    { grep -E "error|FAILED" -A3 "$out/mpi_build.log" | head -60; exit 1; }
fi
bench="$build/mpi/bench_mpi"

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  largest=$(ls -S ../shared/data/*.tns* .data/xz/*.tns* 2>/dev/null | head -1)
  [ -n "$largest" ] && files=("$largest")
fi
[ "${SKIP_FILES:-0}" = 1 ] && files=()  # synthetic tensor only

run() {  # P, args...
  local p=$1; shift
  echo "== P=$p $*" >&2
  "${MPIRUN:-mpirun}" $flags -np "$p" "$bench" -r "$rank" --iters "$iters" --decomposition "$decomp" --format "$format" "$@" |
    tee -a "$jsonl"
}
for f in "${files[@]}"; do
  for p in $ranks; do run "$p" --file "$f"; done
done
if [ "$syn_nnz" != "0" ]; then
  syn_args=(--synthetic "$syn_nnz")
  [ -n "${SYN_DIMS:-}" ] && syn_args+=(--dims "$SYN_DIMS")
  for p in $ranks; do run "$p" "${syn_args[@]}"; done
fi

python3 - "$out" <<'PY'
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "mpi_*.jsonl"))):
    rows += [json.loads(l) for l in open(path) if l.startswith("{")]
base = {}
for r in rows:
    if r["ranks"] == 1:
        base[(r["tensor"], r["decomposition"])] = r["ms_median"]
print(f"{'tensor':32} {'dec':6} {'P':>3} {'grid':>9} {'ms/iter':>9} {'eff':>5} {'MB/iter':>9} {'model MB':>9} {'dense MB':>9} {'imbal':>6} {'mttkrp':>8} {'exch':>8}")
for r in rows:
    t1 = base.get((r["tensor"], r["decomposition"]))
    eff = t1 / (r["ranks"] * r["ms_median"]) if t1 and r["ms_median"] else float("nan")
    print(f"{r['tensor'][:32]:32} {r['decomposition']:6} {r['ranks']:>3} {r['grid']:>9} {r['ms_median']:9.2f} {eff:5.2f} "
          f"{r['bytes_per_iter']/1e6:9.3f} {r['model_bytes_per_iter']/1e6:9.3f} {r['dense_bound_bytes_per_iter']/1e6:9.3f} {r['imbalance']:6.3f} "
          f"{r.get('ms_mttkrp', 0):8.1f} {r.get('ms_exchange', 0):8.1f}")
PY
echo "results: $jsonl"
