#!/usr/bin/env bash
# Peak memory of `sptensor info` on hostile and real inputs: a zstd and an
# xz decompression bomb, /dev/zero, a zstd file of 2 nonzeros and 2 GiB of
# comment lines, 300 MiB of blank lines through a pipe, and a real tensor
# (text and .xz). Peak RSS comes from /usr/bin/time -v ("Maximum resident
# set size"). One JSON line per case goes to stdout and to OUT.
#
#   benchmarks/read_memory.sh [SPTENSOR] [TENSOR.tns.xz] [OUT.jsonl]
#
# Defaults: build/sptensor, ../shared/data/text-trigrams-mc100.tns.xz, and
# benchmarks/results/read-memory-<host>-<UTC time>.jsonl. Scratch files go
# to $TMPDIR (about 250 MB for the decompressed real tensor).
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$here/build/sptensor}
real=${2:-$here/../shared/data/text-trigrams-mc100.tns.xz}
out=${3:-$here/benchmarks/results/read-memory-$(hostname -s)-$(date -u +%Y-%m-%dT%H%MZ).jsonl}
export OMP_WAIT_POLICY=passive OPENBLAS_NUM_THREADS=1
work=$(mktemp -d "${TMPDIR:-/tmp}/spt_read_memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
: > "$out"

# run NAME INPUT_DESCRIPTION TENSOR_BYTES CMD...: one JSON line.
run() {
  local name=$1 input=$2 tensor_bytes=$3
  shift 3
  local tv="$work/time.txt" err="$work/stderr.txt"
  /usr/bin/time -v -o "$tv" "$@" > /dev/null 2> "$err"
  local rc=$?
  local rss_kb secs msg
  rss_kb=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tv")
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$tv")
  msg=$(head -c 300 "$err" | head -n 1 | sed 's/\\/\\\\/g; s/"/\\"/g')
  printf '{"case": "%s", "input": "%s", "exit": %d, "peak_rss_mib": %.1f, "tensor_mib": %.1f, "wall": "%s", "message": "%s"}\n' \
    "$name" "$input" "$rc" "$(echo "$rss_kb / 1024" | bc -l)" "$(echo "$tensor_bytes / 1048576" | bc -l)" "$secs" "$msg" |
    tee -a "$out"
}

# A decompression bomb: 2 GiB of zero bytes (NUL: not text) in a few hundred KB.
head -c 2G /dev/zero | zstd -q -c > "$work/bomb.tns.zst"
run zstd_bomb "2 GiB of NUL bytes, zstd ($(stat -c %s "$work/bomb.tns.zst") bytes)" 0 "$cli" info "$work/bomb.tns.zst"
head -c 1G /dev/zero | xz -1 -T2 -c > "$work/bomb.tns.xz"
run xz_bomb "1 GiB of NUL bytes, xz ($(stat -c %s "$work/bomb.tns.xz") bytes)" 0 "$cli" info "$work/bomb.tns.xz"
# An endless device (fails at the first NUL byte).
run dev_zero "/dev/zero" 0 "$cli" info /dev/zero
# Valid: 2 nonzeros around 2 GiB of comment lines, zstd-compressed.
{
  printf '1 1 1 1.0\n'
  yes '# a comment line that a streaming reader skips without holding it' | head -c 2G
  printf '2 2 2 2.0\n'
} | zstd -q -c > "$work/comments.tns.zst"
run comments_bomb "2 nonzeros + 2 GiB of comments, zstd ($(stat -c %s "$work/comments.tns.zst") bytes)" 40 \
  "$cli" info "$work/comments.tns.zst"
# 300 MiB of blank lines through a pipe (fails after 256 MiB: no progress).
mkfifo "$work/blank.fifo"
{ printf '1 1 1 1.0\n'; head -c 300M /dev/zero | tr '\0' '\n'; } > "$work/blank.fifo" 2> /dev/null &
run blank_lines_pipe "1 nonzero + 300 MiB of blank lines, FIFO" 20 "$cli" info "$work/blank.fifo"
wait
# A real tensor: in-memory size = nnz * (order * 4 + 8) bytes (float64).
if [ -f "$real" ]; then
  xz -dc "$real" > "$work/real.tns"
  nnz=$("$cli" info "$work/real.tns" | awk '/^nnz/ {print $2}')
  order=$("$cli" info "$work/real.tns" | awk '/^order/ {print $2}')
  bytes=$((nnz * (order * 4 + 8)))
  run real_text "$(basename "$real" .xz) ($(stat -c %s "$work/real.tns") bytes)" "$bytes" "$cli" info "$work/real.tns"
  run real_xz "$(basename "$real") ($(stat -c %s "$real") bytes)" "$bytes" "$cli" info "$real"
fi
echo "results: $out" >&2
