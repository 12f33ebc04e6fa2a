#!/usr/bin/env bash
# 16-core host (nvidia-h200): ours (bench_mpi) against SPLATT-MPI on one Zipf tensor of about 201M nonzeros
# (212M draws over 20M x 10M x 2M; duplicates summed, empty slices dropped), float32, rank 16, one thread per
# rank, medium-grained, at the P given (default "16 8 4 2"): `bash benchmarks/mpi_vs_splatt_200m.sh "16 8 4 2"`, then "1" (or
# whatever an earlier call skipped: a P is skipped when the time left is short of its estimate).
# Carry: .device-deps-mpi (benchmarks/fetch_mpi_deps.sh) and .data-mpi/splatt-src.tar.xz, a tarball of the
# SPLATT source at 6cb8628 (git clone ShadenSmith/splatt; tar -cJf .data-mpi/splatt-src.tar.xz -C splatt .).
# Both tools read one SPLATT .bin file, written once by `bench_mpi --write-splatt-bin` at 16 ranks into
# /tmp/sm200 (a later call on the same warm machine reuses it, and the builds).
# Output: $OUT/log.txt, $OUT/gen-sm200.jsonl (the file's record), $OUT/mpi-vs-splatt-sm200.jsonl (one
# record per tool and P, from benchmarks/mpi_vs_splatt.py).
# Local run (no builds, no carried deps): SM200_BENCH=path/bench_mpi SM200_SPLATT=path/splatt
# SM200_DRAWS=2000000 SM200_DIMS=200000,100000,20000 SM200_DIR=/tmp/x OUT=/tmp/y bash benchmarks/mpi_vs_splatt_200m.sh "2 1"
set -uo pipefail
ps=${1:-16 8 4 2}
t0=$SECONDS
limit=${SM200_LIMIT:-585}
draws=${SM200_DRAWS:-212000000}
dims=${SM200_DIMS:-20000000,10000000,2000000}
gen_np=${SM200_GEN_NP:-16}
dir=${SM200_DIR:-/tmp/sm200}
bin=$dir/zipf-$draws-${dims//,/x}-p$gen_np.bin
mkdir -p "$OUT" "$dir"
stamp() { echo "[$((SECONDS - t0)) s] $*" | tee -a $OUT/log.txt; }
left() { echo $((limit - (SECONDS - t0))); }
if [ -n "${SM200_BENCH:-}" ] && [ -n "${SM200_SPLATT:-}" ]; then
  bench=$SM200_BENCH splatt=$SM200_SPLATT MPIRUN=${MPIRUN:-mpirun}
else
  source .device-deps-mpi/setup-env.sh && source benchmarks/device_mpi_env.sh
  lscpu | grep -E 'Model name|^CPU\(s\)' | tee -a $OUT/log.txt
  splatt=$(find /tmp/splatt/build -name splatt -type f -perm -u+x 2>/dev/null | head -1)
  if [ -z "$splatt" ]; then
    rm -rf /tmp/splatt && mkdir -p /tmp/splatt && tar -xJf .data-mpi/splatt-src.tar.xz -C /tmp/splatt
    ob=$(find /opt/spt-deps -name "libopenblas*.so*" | head -1)
    ( export CMAKE_POLICY_VERSION_MINIMUM=3.5; cd /tmp/splatt && ./configure --with-mpi --with-mpicc=/opt/spt-deps/usr/bin/mpicc.openmpi \
        --index-size=32 --precision=single --with-blas-lib=$ob --with-lapack-lib=$ob > /tmp/splatt-build.log 2>&1 &&
      make -j8 splatt >> /tmp/splatt-build.log 2>&1 || make -j8 >> /tmp/splatt-build.log 2>&1; echo "splatt rc=$?" >> /tmp/splatt-build.log ) &
    sp=$!
  fi
  cmake -S . -B build-mpi -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_MPI=ON -DSPT_WITH_CUDA=OFF -DSPT_BUILD_TESTS=OFF \
    -DSPT_WITH_FORTRAN=OFF -DSPT_BUILD_CLI=OFF $MPI_CMAKE_ARGS > /tmp/build.log 2>&1 && ninja -C build-mpi -j20 bench_mpi >> /tmp/build.log 2>&1 ||
    { grep -E "error|FAILED" -A3 /tmp/build.log | head -30; cp /tmp/build.log $OUT/; exit 1; }
  bench=build-mpi/mpi/bench_mpi
  if [ -z "$splatt" ]; then
    wait $sp; tail -1 /tmp/splatt-build.log
    splatt=$(find /tmp/splatt/build -name splatt -type f -perm -u+x | head -1)
    [ -n "$splatt" ] || { grep -iE 'error' -A3 /tmp/splatt-build.log | head -30; cp /tmp/splatt-build.log $OUT/; exit 1; }
  fi
fi
stamp "built (splatt: $splatt)"
export OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none PMIX_MCA_pcompress_base_silence_warning=1
flags=${SM200_MPIRUN_FLAGS:-"--oversubscribe --allow-run-as-root --bind-to core --map-by core"}

# The tensor: drawn at gen_np ranks (the draw depends on the rank count), duplicates summed, empty slices
# dropped (SPLATT-MPI needs both), written in parallel.
if [ -s "$bin" ]; then
  stamp "reusing $bin ($(stat -c %s "$bin") bytes)"
else
  rm -f "$bin.part"
  timeout -k 10 $(left) $MPIRUN --oversubscribe --allow-run-as-root --bind-to none -np $gen_np $bench \
    --synthetic $draws --dims $dims --dtype float32 --write-splatt-bin "$bin.part" | tee -a $OUT/gen-sm200.jsonl &&
    mv "$bin.part" "$bin" ||
    { stamp "writing $bin failed"; rm -f "$bin.part"; exit 1; }
  stamp "wrote $bin ($(stat -c %s "$bin") bytes)"
fi

# Which tool goes first alternates with P (fixed per P, so split calls alternate too). A P is skipped when
# less time is left than both tools are expected to need there (seconds at 212M draws, scaled with the draws).
for p in $ps; do
  case $p in 16|4|1) first=ours ;; *) first=splatt ;; esac
  iters=${SM200_ITERS:-$([ $p -ge 8 ] && echo 3 || echo 2)}
  case $p in 16) est=80 ;; 8) est=90 ;; 4) est=120 ;; 2) est=170 ;; *) est=300 ;; esac
  est=$((est * (draws / 1000000) / 212 + 20))
  l=$(left)
  [ $l -gt $est ] || { stamp "skipped P=$p: about $est s needed, $l s left"; continue; }
  timeout -k 10 $l python3 benchmarks/mpi_vs_splatt.py --bench $bench --splatt "$splatt" --tensor "$bin" --ranks $p \
    --iters $iters --dtype float32 --mpirun "$MPIRUN" --mpirun-flags "$flags" --first $first --timeout 900 \
    --out $OUT/mpi-vs-splatt-sm200.jsonl 2>&1 | grep -vE '^\{|pmix|^$' | tee -a $OUT/log.txt
  stamp "P=$p ($first first, $iters sweeps) rc=${PIPESTATUS[0]}"
done

# Both tools at each P this call measured: seconds and MB per sweep, fit, time before the sweeps.
python3 - "$OUT/mpi-vs-splatt-sm200.jsonl" << 'PY' | tee -a $OUT/log.txt
import json, os, sys
if not os.path.exists(sys.argv[1]):
    sys.exit()
rs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("%3s | %9s %9s %5s | %9s %9s | %8s %8s | %7s %7s" %
      ("P", "ours ms", "SPLATT ms", "ratio", "ours MB", "SPLATT MB", "ours fit", "SPL fit", "set-up", "SPLATT"))
for p in sorted({r["ranks"] for r in rs}, reverse=True):
    o = next((r for r in rs if r["ranks"] == p and r["tool"] == "ours"), None)
    s = next((r for r in rs if r["ranks"] == p and r["tool"] == "splatt"), None)
    f = lambda r, k, scale=1.0: "%9.1f" % (r[k] * scale) if r and r.get(k) is not None else "%9s" % "-"
    print("%3d | %s %s %5s | %s %s | %8s %8s | %s %s" % (
        p, f(o, "s_per_iter", 1e3), f(s, "s_per_iter", 1e3),
        "%.2f" % (o["s_per_iter"] / s["s_per_iter"]) if o and s else "-",
        f(o, "bytes_per_iter", 1e-6), f(s, "bytes_per_iter", 1e-6),
        o and o.get("fit"), s and s.get("fit"), f(o, "before_iterations_s"), f(s, "before_iterations_s")))
PY
stamp done
