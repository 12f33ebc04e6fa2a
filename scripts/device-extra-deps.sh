#!/usr/bin/env bash
# Adds the kept header-only libraries the build needs (scripts/deps.sh's
# libxxhash-dev, libcli11-dev, nlohmann-json3-dev; docs/architecture.md,
# Dependencies) to .device-deps/ for a GPU machine without network.
#
# Run on the development machine, from the project's root, with the shared
# fetch-deps.sh (either order: the packages go to .device-deps/extra/):
#   bash ../shared/device/fetch-deps.sh && bash scripts/device-extra-deps.sh
# Then carry ".device-deps" in the device call and start the command with
#   source .device-deps/setup-env.sh && source .device-deps/extra/setup-extra.sh &&
# setup-extra.sh unpacks the packages into the same prefix as setup-env.sh
# (/opt/spt-deps), so CMake and the compiler find them through the paths
# setup-env.sh sets; it is safe to source on a warm machine.
set -euo pipefail
root="$(pwd)"
if [[ ! -f "$root/scripts/deps.sh" ]]; then
  echo "device-extra-deps.sh: run it from the project's root" >&2
  exit 1
fi
dest="$root/.device-deps/extra"
mkdir -p "$dest"
# Headers only: the library compiles xxHash in (XXH_INLINE_ALL) and CLI11 and
# nlohmann::json are header-only, so no shared library is needed at run time.
pkgs=(libxxhash-dev libcli11-dev nlohmann-json3-dev)
if ! apt-cache show "${pkgs[0]}" > /dev/null 2>&1; then apt-get update > /dev/null; fi
cd "$dest"
rm -f ./*.deb
apt-get download "${pkgs[@]}" > /dev/null 2>&1 || apt-get download "${pkgs[@]}"
cat > setup-extra.sh << 'EOF'
# Source on the GPU machine after .device-deps/setup-env.sh (written by
# scripts/device-extra-deps.sh): unpacks the kept header-only libraries into
# /opt/spt-deps and makes sure the compiler and CMake look there.
_spt_extra_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_spt_prefix=/opt/spt-deps
if [ ! -f "$_spt_prefix/.extra-done" ]; then
  mkdir -p "$_spt_prefix"
  for f in "$_spt_extra_dir"/*.deb; do dpkg -x "$f" "$_spt_prefix"; done
  touch "$_spt_prefix/.extra-done"
fi
case ":${CPATH:-}:" in *":$_spt_prefix/usr/include:"*) ;; *) export CPATH="$_spt_prefix/usr/include${CPATH:+:$CPATH}" ;; esac
case ":${CMAKE_PREFIX_PATH:-}:" in *":$_spt_prefix/usr:"*) ;;
  *) export CMAKE_PREFIX_PATH="$_spt_prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}" ;; esac
echo "spt extra deps: $(ls "$_spt_extra_dir"/*.deb | wc -l) header-only packages under $_spt_prefix"
EOF
du -sh "$dest" | awk '{print "device extra deps ready: " $1 " in .device-deps/extra (carry .device-deps)"}'
