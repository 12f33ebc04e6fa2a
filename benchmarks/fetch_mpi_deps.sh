#!/usr/bin/env bash
# Fills .device-deps-mpi/ (git-ignored via .git/info/exclude) with the Debian
# packages the GPU machine needs for the MPI benchmarks (benchmarks/mpi_suite.sh):
# OpenBLAS/LAPACKE, GoogleTest and Open MPI, plus ../shared/device/setup-env.sh.
# Why not `../shared/device/fetch-deps.sh --mpi`: its list names libefa1,
# which this Debian release does not have, so apt-get download fails. It
# also keeps OpenBLAS's 58 MB static library, and
# liblapack3/libblas3, which OpenBLAS's own copies replace. Dropping those
# brings the folder to about 16 MB, so the 44 MB trigram tensor fits in the
# same 64 MiB carry.
# Then on the device:
#   source .device-deps-mpi/setup-env.sh && source benchmarks/device_mpi_env.sh && ...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dest=$PWD/.device-deps-mpi
grep -qx '/.device-deps-mpi/' .git/info/exclude 2>/dev/null || echo '/.device-deps-mpi/' >> .git/info/exclude
rm -rf "$dest" && mkdir -p "$dest"
pkgs=(libopenblas0 libopenblas0-pthread libopenblas-dev libopenblas-pthread-dev liblapacke liblapacke-dev
      libtmglib3 libgfortran5 libgtest-dev libgmock-dev
      openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libhwloc15 libevent-core-2.1-7
      libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1 librdmacm1 libnl-3-200
      libnl-route-3-200 libpsm2-2 libpsm-infinipath1 libxnvctrl0 libmunge2 libltdl7 libnuma1
      libxxhash-dev libcli11-dev nlohmann-json3-dev)  # the kept header-only libraries (scripts/deps.sh)
apt-cache show libopenblas0 > /dev/null 2>&1 || apt-get update > /dev/null
(cd "$dest" && apt-get download "${pkgs[@]}" > /dev/null)
# OpenBLAS's static library is never linked here: repack its -dev package without it.
dev=$(ls "$dest"/libopenblas-pthread-dev_*.deb)
tmp=$(mktemp -d)
dpkg-deb -R "$dev" "$tmp/p"
find "$tmp/p" -name '*.a' -delete
sed -i '/\.a$/d' "$tmp/p/DEBIAN/md5sums" 2> /dev/null || true
dpkg-deb -b -Zxz "$tmp/p" "$dev" > /dev/null
rm -rf "$tmp"
cp ../shared/device/setup-env.sh "$dest/"
du -sh "$dest" | awk '{print "MPI device deps ready: " $1 " in .device-deps-mpi (carry it)"}'
