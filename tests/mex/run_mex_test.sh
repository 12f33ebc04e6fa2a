#!/usr/bin/env bash
# MEX client test: builds the example gateways (examples/mex/) with Octave's
# `mkoctfile --mex` against the library installed into a temporary prefix,
# runs the `sptensor` CLI on the same tensor with the same seed and threads,
# and checks from octave-cli (tests/mex/check_mex.m) that the gateways give
# the CLI's results. Exits 77 (CTest SKIP_RETURN_CODE) when mkoctfile or
# octave-cli is not installed.
# Usage: run_mex_test.sh BUILD_DIR WORK_DIR CMAKE_COMMAND CLI DATA_FILE [SANITIZERS]
# Also exits 77 for a sanitized build (SANITIZERS non-empty): Octave would
# need the sanitizer runtime preloaded to load the library.
set -euo pipefail
if [[ -n "${6:-}" ]]; then
  echo "mex test: SKIPPED: the build uses -fsanitize=$6 (see scripts/sanitize.sh)"
  exit 77
fi
for tool in mkoctfile octave-cli xz; do
  if ! command -v "$tool" > /dev/null 2>&1; then
    echo "mex test: SKIPPED: $tool not found (apt-get install octave liboctave-dev xz-utils)"
    exit 77
  fi
done

build_dir=$1
work_dir=$2
cmake_command=$3
cli=$4
data_file=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mex_src=$(cd "$here/../../examples/mex" && pwd)
fail() { echo "mex test: FAILED: $*" >&2; exit 1; }

rm -rf "$work_dir"
mkdir -p "$work_dir/mex"
prefix=$work_dir/prefix
echo "== install into $prefix"
"$cmake_command" --install "$build_dir" --prefix "$prefix" > "$work_dir/install.log" \
  || { cat "$work_dir/install.log" >&2; fail "cmake --install"; }
lib=$(find "$prefix" -name 'libsptensor.so' | head -n 1)
[[ -n "$lib" ]] || fail "libsptensor.so not installed"
libdir=$(dirname "$lib")

echo "== mkoctfile --mex"
for g in sptensor_read sptensor_cpd sptensor_tucker sptensor_mttkrp sptensor_gcp; do
  # mkoctfile takes the C flags from the environment: build as strictly as
  # the library's own C tests (any warning fails below).
  (cd "$work_dir/mex" && CFLAGS="-std=c99 -O2 -fPIC -Wall -Wextra -pedantic" \
      mkoctfile --mex -I"$prefix/include" "$mex_src/$g.c" -o "$g.mex" \
      -L"$libdir" -lsptensor -Wl,-rpath,"$libdir") > "$work_dir/mex/$g.log" 2>&1 \
    || { cat "$work_dir/mex/$g.log" >&2; fail "building $g"; }
  if grep -qi 'warning' "$work_dir/mex/$g.log"; then cat "$work_dir/mex/$g.log" >&2; fail "$g: compiler warnings"; fi
done

# The .m files carry the help text (`help sptensor_cpd`); the MEX files
# beside them must still be what runs.
cp "$mex_src"/sptensor_*.m "$work_dir/mex/"

echo "== CLI reference results"
final_fit() { sed -n 's/^final fit \([0-9.]*\) after.*/\1/p' "$1"; }
"$cli" cpd "$data_file" -r 4 --iters 8 --tol 0 --seed 1 --threads 2 -q -o "$work_dir/cli" > "$work_dir/cpd.out"
final_fit "$work_dir/cpd.out" > "$work_dir/cpd.fit"
"$cli" cpd "$data_file" --init "$work_dir/cli" --iters 2 --tol 0 --threads 2 -q -o "$work_dir/cli_init" \
  > "$work_dir/cpd_init.out"
final_fit "$work_dir/cpd_init.out" > "$work_dir/cpd_init.fit"
"$cli" tucker "$data_file" -r 3,4,3 --iters 5 --tol 0 --threads 2 -q -o "$work_dir/tucker" > "$work_dir/tucker.out"
final_fit "$work_dir/tucker.out" > "$work_dir/tucker.fit"
"$cli" cpd "$data_file" -r 3 --iters 20 --seed 1 --threads 2 -q --model gcp --loss bernoulli > "$work_dir/gcp.out"
sed -n 's/^final objective \([0-9.e+-]*\) after.*/\1/p' "$work_dir/gcp.out" > "$work_dir/gcp.objective"
"$cli" cpd "$data_file" -r 3 --iters 4 --seed 1 --threads 2 -q --model gcp --loss bernoulli --optimizer sgd \
  --epoch-iters 50 --rate 0.01 > "$work_dir/gcp_sgd.out"
sed -n 's/^final objective estimate \([0-9.e+-]*\) after.*/\1/p' "$work_dir/gcp_sgd.out" > "$work_dir/gcp_sgd.objective"
for f in cpd.fit cpd_init.fit tucker.fit gcp.objective gcp_sgd.objective; do [[ -s "$work_dir/$f" ]] || fail "no final fit in the CLI output ($f)"; done
xz -dc "$data_file" > "$work_dir/plain.tns"

echo "== octave-cli"
octave() { octave-cli --no-gui --norc --no-history --quiet --no-window-system "$@"; }
SPT_MEX_DIR="$work_dir/mex" SPT_WORK="$work_dir" SPT_DATA="$data_file" octave "$here/check_mex.m"

echo "== docs/mex.md: the Octave build commands and the example, as written"
docs=$here/../../docs/mex.md
# The first fenced block of language $1 that contains the text $2.
doc_block() {
  awk -v lang="$1" -v pat="$2" '
    $0 == "```" lang { inside = 1; text = ""; next }
    inside && $0 == "```" { inside = 0; if (index(text, pat)) { printf "%s", text; exit } next }
    inside { text = text $0 "\n" }' "$docs"
}
doc_dir=$work_dir/docs
mkdir -p "$doc_dir"
ln -s "$mex_src/.." "$doc_dir/examples"  # the commands name examples/mex/... from the repository's top
doc_block sh mkoctfile > "$doc_dir/build.sh"
doc_block matlab sptensor_cpd > "$doc_dir/example.m"
[[ -s $doc_dir/build.sh && -s $doc_dir/example.m ]] || fail "docs/mex.md: no Octave build block or no example block"
# libdir is $PREFIX/lib for a prefix outside /usr (GNUInstallDirs), as the page assumes.
(cd "$doc_dir" && PREFIX=$prefix bash -euo pipefail build.sh) > "$doc_dir/build.log" 2>&1 \
  || { cat "$doc_dir/build.log" >&2; fail "docs/mex.md: the Octave build commands failed"; }
for g in sptensor_read sptensor_cpd sptensor_tucker sptensor_mttkrp; do
  [[ -f $doc_dir/$g.mex && -f $doc_dir/$g.m ]] || fail "docs/mex.md: the build commands made no $g.mex / $g.m"
done
cp "$data_file" "$doc_dir/nations.tns.xz"
(cd "$doc_dir" && octave example.m) > "$doc_dir/example.out" 2>&1 \
  || { cat "$doc_dir/example.out" >&2; fail "docs/mex.md: the example failed in Octave"; }
cat "$doc_dir/example.out"
grep -Eq '^ Iter +10: f = [0-9.e+-]+ f-delta' "$doc_dir/example.out" || fail "docs/mex.md example: no display line"
grep -Eq '^ans = 0\.[0-9]+' "$doc_dir/example.out" || fail "docs/mex.md example: no fit printed"

# Ctrl-C: SIGINT once the run is inside the gateway (it has printed an
# iteration); the run must end with sptensor:interrupted. DISPLAY is
# opts.display: with 1, every iteration flushes its line through the
# interpreter, so the key often lands inside that flush.
interrupt_test() {
  local gateway=$1 display=$2 out=$work_dir/interrupt-$1-$2-$3.out
  echo "== Ctrl-C during sptensor_$gateway (opts.display = $display, run $3)"
  # A background job of a non-interactive shell starts with SIGINT ignored,
  # as if the key did nothing: env restores the default. ($! must be
  # octave-cli's pid, so not through the shell function.)
  SPT_MEX_DIR="$work_dir/mex" SPT_DATA="$data_file" SPT_GATEWAY=$gateway SPT_DISPLAY=$display \
    env --default-signal=INT \
    octave-cli --no-gui --norc --no-history --quiet --no-window-system \
    "$here/interrupt.m" > "$out" 2>&1 &
  octave_pid=$!
  # Never leave it running, also when this script is stopped early.
  trap 'kill -KILL "$octave_pid" 2> /dev/null || true' EXIT TERM INT
  for _ in $(seq 3000); do
    grep -q '^ Iter' "$out" 2> /dev/null && break
    kill -0 "$octave_pid" 2> /dev/null || break
    sleep 0.1
  done
  local signalled
  signalled=$(date +%s.%N)
  kill -INT "$octave_pid" 2> /dev/null || true
  # A run that ignored the key would go on for hours: give it up to 60 s.
  for _ in $(seq 600); do
    kill -0 "$octave_pid" 2> /dev/null || break
    sleep 0.1
  done
  if kill -0 "$octave_pid" 2> /dev/null; then
    kill -KILL "$octave_pid"
    fail "Ctrl-C did not stop sptensor_$gateway"
  fi
  wait "$octave_pid" || true
  echo "octave-cli exited $(awk -v a="$signalled" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after SIGINT"
  tail -n 2 "$out"
  grep -q "^ Iter  *$display: f = " "$out" || { cat "$out" >&2; fail "sptensor_$gateway: no display line"; }
  grep -q '^caught sptensor:interrupted: .*interrupted (Ctrl-C)' "$out" \
    || { cat "$out" >&2; fail "Ctrl-C: no sptensor:interrupted error from sptensor_$gateway"; }
}
interrupt_test cpd 100 1
interrupt_test tucker 100 1
# A Ctrl-C inside the flush once gave SPT_ERR_INTERNAL; about every second
# run lands there, so five runs of each catch that again.
for run in 1 2 3 4 5; do
  interrupt_test cpd 1 "$run"
  interrupt_test tucker 1 "$run"
done
echo "mex test: docs build commands and example, Ctrl-C: ok"
