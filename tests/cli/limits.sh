#!/usr/bin/env bash
# Limits and writer guarantees of the `sptensor` tool (issue 21): convert
# keeps dims and empty tensors, info reports a binary file's stored dtype
# and handles a dimension of 2^32 - 1 in memory proportional to nnz.
#   limits.sh SPTENSOR WORKDIR
set -uo pipefail
cli=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1
fail=0
check() {  # check NAME FILE REGEX: FILE must hold a line matching REGEX
  if ! grep -qE -- "$3" "$2"; then
    echo "FAIL $1: no line matching '$3' in:"
    sed 's/^/  /' "$2"
    fail=$((fail + 1))
  fi
}
run() {  # run NAME ARGS...: must exit 0
  local name=$1
  shift
  "$cli" "$@" > "$name.out" 2> "$name.err"
  local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "FAIL $name: exit status $rc for: $cli $*"
    sed 's/^/  stderr: /' "$name.err"
    fail=$((fail + 1))
  fi
}

# Extended .tns dims survive a conversion to text (plain or compressed).
printf '3\n5 6 7\n1 1 1 1.5\n2 2 2 2.5\n' > ext.tns
for out in out.tns out.tns.gz out.tns.zst; do
  run "convert_$out" convert ext.tns "$out"
  run "info_$out" info "$out"
  check "dims_$out" "info_$out.out" '^dims +5 x 6 x 7$'
done
# An empty tensor (header only) round-trips through every format.
printf '3\n5 6 7\n' > empty.tns
for out in e.tns e.sptb e.bin e.tns.xz e.sptb.xz e.bin.zst; do
  run "convert_empty_$out" convert empty.tns "$out"
  run "info_empty_$out" info "$out"
  check "empty_dims_$out" "info_empty_$out.out" '^dims +5 x 6 x 7$'
  check "empty_nnz_$out" "info_empty_$out.out" '^nnz +0$'
done
# info shows the stored dtype of a binary file and what it was read as.
printf '1 1 1 1.5\n2 2 2 2.5\n' > small.tns
run convert_f32 convert small.tns f32.sptb --dtype float32
run info_f32 info f32.sptb
check stored_dtype info_f32.out '^dtype +float32 \(stored in the file; read as float64\)$'
run info_f32_as_f32 info f32.sptb --dtype float32
check stored_dtype_same info_f32_as_f32.out '^dtype +float32$'
# A valid 2-nonzero file with a dimension of 4,294,967,295: per-slice
# statistics without a table per index.
printf '1 1 1.0\n4294967295 2 2.0\n' > huge_dim.tns
run info_huge_dim info huge_dim.tns
check huge_dims info_huge_dim.out '^dims +4294967295 x 2$'
check huge_mode1 info_huge_dim.out '^1 +4294967295 +2 +4294967293 +1 +1\.00 +0\.00 +2$'
# File names are printed escaped.
name=$(printf 'we\x1b[1mird\tname.tns')
cp small.tns "$name"
run info_escaped info "$name"
check escaped_name info_escaped.out '^file +we\\x1b\[1mird\\tname\.tns$'

echo "limits.sh: $fail failed"
[[ $fail -eq 0 ]]
