#!/usr/bin/env bash
# Quick GPU check on the device machine: builds only the GPU targets
# (plugin, test_cuda, test_fcoo, bench_gpu; MPI and Fortran off), runs the
# F-COO GPU tests, the MTTKRP benchmark (COO, HiCOO and F-COO with its
# threadlen sweep) on mathsx, flights and synthetic Zipf tensors of 16M and
# 50M nonzeros, then the rest of test_cuda. Results under $OUT.
#   carry: [".device-deps", ".data/xz"]; run: bash benchmarks/gpu_quick.sh
source .device-deps/setup-env.sh && set -uo pipefail
out="${OUT:-benchmarks/results/gpu-local}"
mkdir -p "$out"
b=build-dev
cmake -S . -B $b -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPT_WITH_MPI=OFF -DSPT_WITH_FORTRAN=OFF > "$out/cfg.log" 2>&1 || { tail -30 "$out/cfg.log"; exit 1; }
ninja -C $b -j16 sptensor_cuda test_cuda test_fcoo bench_gpu > "$out/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1; }
echo "build OK"
export SPT_PLUGIN_PATH=$PWD/$b/libsptensor_cuda.so OMP_NUM_THREADS=16
unxz_to() { python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "$1" "$2"; }
mkdir -p .data/plain
for f in tests/data/*.tns.xz; do unxz_to "$f" ".data/plain/$(basename "${f%.xz}")"; done
export SPT_TEST_DATA_PLAIN=$PWD/.data/plain
timeout 300 $b/tests/test_cuda --gtest_filter='*Fcoo*' > "$out/test_fcoo_gpu.log" 2>&1
echo "F-COO GPU tests rc=$?"; grep -E "FAILED|PASSED|Failure" "$out/test_fcoo_gpu.log" | head -20
for t in mathsx-user-tag-week flights-2001; do unxz_to .data/xz/$t.tns.xz .data/plain/$t.tns; done
timeout 400 $b/benchmarks/bench_gpu --ranks 16,32 --repeats 10 --json "$out/fcoo.jsonl" --cpd 5 \
  --synthetic "${SYNTHETIC:-16000000,50000000}" .data/plain/mathsx-user-tag-week.tns .data/plain/flights-2001.tns \
  > "$out/bench.log" 2>&1
echo "bench rc=$?"
grep -E "F-COO|CP-ALS" "$out/bench.log" | head -70
timeout 150 $b/tests/test_cuda --gtest_filter='-*Fcoo*' > "$out/test_cuda_rest.log" 2>&1
echo "rest of test_cuda rc=$?"; tail -3 "$out/test_cuda_rest.log"
