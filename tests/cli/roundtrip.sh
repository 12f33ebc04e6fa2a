#!/usr/bin/env bash
# Format round trips through the CLI: FILE.tns.xz -> OUT.{sptb,bin,tns.gz}
# -> .tns must reproduce the decompressed input byte for byte (the input is
# sorted, duplicate-free FROSTT text and the writer prints shortest
# round-trip values).
# Usage: roundtrip.sh SPTENSOR WORK_DIR FILE.tns.xz
set -euo pipefail
cli=$1
work=$2
input=$3
rm -rf "$work"
mkdir -p "$work"
xz -dc "$input" > "$work/original.tns"
for via in sptb bin tns.gz; do
  "$cli" convert "$input" "$work/copy.$via"
  "$cli" convert "$work/copy.$via" "$work/back-from-$via.tns"
  if ! cmp "$work/original.tns" "$work/back-from-$via.tns"; then
    echo "FAILED: round trip through .$via changed the tensor" >&2
    diff "$work/original.tns" "$work/back-from-$via.tns" | head -n 5 >&2
    exit 1
  fi
  echo "round trip through .$via: identical"
done
# The opt-in zero-copy mapping (--mmap) reads the same tensor as the default copy.
"$cli" convert --mmap "$work/copy.sptb" "$work/back-mapped.tns"
if ! cmp "$work/original.tns" "$work/back-mapped.tns"; then
  echo "FAILED: reading .sptb with --mmap changed the tensor" >&2
  exit 1
fi
echo "round trip through .sptb with --mmap: identical"
