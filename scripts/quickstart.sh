#!/usr/bin/env bash
# Quick start on a fresh Debian/Ubuntu machine: install what is missing,
# build libsptensor and the `sptensor` tool (Release, into build/), and run a
# rank-16 CP decomposition of the bundled real tensor email-eu-day
# (979 x 979 x 804 email co-membership counts, 894,892 nonzeros), printing the
# fit after every iteration.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/deps.sh

jobs=$(nproc 2> /dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel "$jobs" --target sptensor_cli

tensor=tests/data/email-eu-day.tns.xz
if [[ ! -f $tensor && -f ../shared/data/email-eu-day.tns.xz ]]; then
  tensor=../shared/data/email-eu-day.tns.xz
fi
echo
echo "+ build/sptensor cpd $tensor -r 16 --iters 20 --seed 1"
build/sptensor cpd "$tensor" -r 16 --iters 20 --seed 1
