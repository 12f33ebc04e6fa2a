#!/usr/bin/env bash
# Bad-input catalogue for the `sptensor` tool (issue 10): every case must
# exit with the documented status (1 runtime error, 2 usage error), print
# exactly one non-empty line on stderr that holds the expected text, print
# nothing on stdout, and not crash (no signal, no sanitizer report).
#   bad_input.sh SPTENSOR WORKDIR [VALGRIND...]
# With VALGRIND arguments (e.g. "valgrind --error-exitcode=99 ..."), each
# run goes through them; a valgrind error then shows as exit status 99.
# Env SPT_BAD_INPUT_JOBS=N runs up to N cases at once (default 1; the
# valgrind job of scripts/reliability.sh uses nproc: memcheck runs a
# program on one core, and the cases only read the inputs made below).
# Results are reported in catalogue order either way.
set -uo pipefail
cli=$1
work=$2
shift 2
wrap=("$@")
rm -rf "$work"
mkdir -p "$work"
cd "$work" || exit 1

# ---- inputs ------------------------------------------------------------------------
printf '1 1 1 1.0\n2 2 2 2.0\n3 1 2 -1.5\n1 3 2 0.5\n' > good.tns
: > empty.tns
printf '# only a comment\n\n   \n# another\n' > comments.tns
printf '1 1 1 1.0\n2 0 1 1.0\n' > index0.tns
printf '1 1 1 1.0\n-2 1 1 1.0\n' > negative.tns
printf '1 1 1 1.0\n2 x 1 1.0\n' > nonnumeric_index.tns
printf '1 1 1 1.0\n2 2 1 abc\n' > nonnumeric_value.tns
printf '1 1 1 1.0\n2 2 2\n' > missing_value.tns
printf '1 1 1 1.0\n2 2 2 2 2.0\n' > extra_column.tns
printf '1 1 1.0\n4294967296 1 1.0\n' > index_overflow.tns
{ printf '1 1 1.0\n'; head -c 200000 /dev/zero | tr '\0' '7'; printf ' 1 1.0\n'; } > overlong.tns
printf '1 1 1 1.0\n2 2 2 nan\n' > nan.tns
printf '1 1 1 1.0\n2 2 2 inf\n' > inf.tns
printf '1 1 1 0\n2 2 2 0.0\n3 3 3 -0\n' > allzero.tns
printf '3\n2 2 2\n1 1 1 1.0\n3 1 1 1.0\n' > ext_past_dim.tns
printf '3\n2 2\n1 1 1 1.0\n' > ext_dims_count.tns
printf '2\n5 0\n1 1 1.0\n' > ext_zero_dim.tns
printf '3\n4294967295 4294967295 99999999999999999999\n1 1 1 1.0\n' > ext_dim_overflow.tns
printf '1 1 1 1.0\n2 2 2 -1.0\n' > negative_values.tns
awk 'BEGIN { for (i = 0; i < 101; ++i) printf "1 "; printf "1.0\n" }' > order_101.tns
printf '1 1 1 1.0\n2 2 2 1e39\n' > beyond_float32.tns
awk 'BEGIN { srand(7); for (i = 0; i < 3000; ++i) printf "%c", int(rand() * 255) + 1 }' > garbage.bin
printf 'SPTB' > sptb_header_only.sptb
"$cli" convert good.tns good.sptb > /dev/null 2>&1
"$cli" convert good.tns good.bin > /dev/null 2>&1
"$cli" convert good.tns good.tns.gz > /dev/null 2>&1
size=$(stat -c %s good.sptb)
head -c $((size - 5)) good.sptb > truncated.sptb
cp good.sptb badsum.sptb
printf '\x7f' | dd of=badsum.sptb bs=1 seek=$((size - 1)) conv=notrunc status=none
cp good.sptb hugennz.sptb  # nnz field (offset 24) = 2^33
printf '\x00\x00\x00\x00\x02\x00\x00\x00' | dd of=hugennz.sptb bs=1 seek=24 conv=notrunc status=none
head -c $(($(stat -c %s good.bin) - 4)) good.bin > truncated.bin
head -c $(($(stat -c %s good.tns.gz) / 2)) good.tns.gz > truncated.tns.gz
mkdir -p adir
printf '1\n0.5\n' > bad_init.lambda.txt
printf '1 2\n3 4\n5 6\n' > bad_init.mode-1.txt
printf '1 2\n3 4\n' > bad_init.mode-2.txt  # dims[1] is 3
printf '1 2\n3 4\n' > bad_init.mode-3.txt

# ---- cases: name, expected exit status, text stderr must hold, then the arguments ----
pass=0
fail=0
late=0
jobs=${SPT_BAD_INPUT_JOBS:-1}
running=0
cases=()
run_late_case() {
  late=1
  run_case "$@"
  late=0
}
# run_case NAME STATUS TEXT ARGS...: check_case in a subshell (in the
# background when SPT_BAD_INPUT_JOBS > 1) that leaves NAME.report (empty
# when the case passed, else the FAIL lines); tally_cases prints them.
run_case() {
  cases+=("$1")
  if [[ $jobs -le 1 ]]; then
    check_case "$@" > "$1.report"
    return
  fi
  if [[ $running -ge $jobs ]]; then
    wait -n
    running=$((running - 1))
  fi
  check_case "$@" > "$1.report" &
  running=$((running + 1))
}
tally_cases() {
  wait
  local name
  for name in "${cases[@]}"; do
    if [[ -f $name.report && ! -s $name.report ]]; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      cat "$name.report" 2> /dev/null || echo "FAIL $name: no result"
    fi
  done
}
check_case() {
  local name=$1 want_rc=$2 want_text=$3
  shift 3
  "${wrap[@]}" "$cli" "$@" > "$name.out" 2> "$name.err" < /dev/null
  local rc=$? problems=()
  [[ $rc -eq $want_rc ]] || problems+=("exit status $rc, expected $want_rc")
  [[ $rc -lt 128 ]] || problems+=("killed by signal $((rc - 128))")
  # Errors found after the run started (late) may follow the header lines
  # cpd/tucker print on stdout; all others must leave stdout empty.
  [[ $late -eq 1 || ! -s $name.out ]] || problems+=("stdout is not empty")
  if [[ ${#wrap[@]} -eq 0 ]]; then
    local lines
    lines=$(wc -l < "$name.err")
    [[ $lines -eq 1 ]] || problems+=("stderr has $lines lines, expected one")
  fi
  grep -qF -- "$want_text" "$name.err" || problems+=("stderr lacks '$want_text'")
  if grep -qE "Sanitizer|runtime error:" "$name.err"; then problems+=("sanitizer report"); fi
  if [[ ${#problems[@]} -ne 0 ]]; then
    echo "FAIL $name: ${problems[*]}"
    echo "  command: $cli $*"
    sed 's/^/  stderr: /' "$name.err" | head -20
  fi
}

# Text files
run_case empty_file 1 "empty.tns" info empty.tns
run_case only_comments 1 "no nonzeros" info comments.tns
run_case index_zero_one_based 1 "index0.tns:2: column 2" info index0.tns
run_case negative_index 1 "negative index" info negative.tns
run_case nonnumeric_index 1 "nonnumeric_index.tns:2: column 2" info nonnumeric_index.tns
run_case nonnumeric_value 1 "'abc'" info nonnumeric_value.tns
run_case missing_value 1 "missing_value.tns:2:" info missing_value.tns
run_case extra_column 1 "extra_column.tns:2:" info extra_column.tns
run_case index_overflow 1 "does not fit a 32-bit" info index_overflow.tns
run_case overlong_line 1 "overlong.tns:2: column 1" info overlong.tns
run_case ext_index_past_dim 1 "outside dims[0] = 2" info ext_past_dim.tns
run_case ext_dims_count 1 "expected 3 dims" info ext_dims_count.tns
run_case ext_zero_dim 1 "dims[1] is 0" info ext_zero_dim.tns
run_case ext_dim_overflow 1 "does not fit" info ext_dim_overflow.tns
run_case zero_based_flag_index_base 2 "option --index-base" info good.tns --index-base 2
run_case directory_input 1 "is a directory" info adir
run_case missing_input 1 "No such file" info does-not-exist.tns
run_case garbage_binary 1 "garbage.bin:1: column 1" info garbage.bin
# Binary and compressed files
run_case sptb_truncated 1 "truncated .sptb file" info truncated.sptb
run_case sptb_wrong_checksum 1 "wrong checksum" info badsum.sptb
run_case sptb_nnz_beyond_2_32 1 "8589934592 nonzeros" info hugennz.sptb
run_case sptb_header_only 1 "shorter than its 64-byte header" info sptb_header_only.sptb
run_case splatt_truncated 1 "truncated SPLATT binary file" info truncated.bin
run_case gzip_truncated 1 "gzip stream is truncated" info truncated.tns.gz
# Limits
run_case order_above_max 1 "above the supported maximum SPT_MAX_ORDER = 64" info order_101.tns
run_case float32_overflow 1 "beyond float32's range" convert beyond_float32.tns out32.tns --dtype float32
run_case escaped_missing_file 1 'no\x1bsuch\nfile.tns' info "$(printf 'no\x1bsuch\nfile.tns')"
run_late_case cpd_rank_2_31 1 "Gram" cpd good.tns -r 2147483648
# Values
run_late_case cpd_nan_value 1 "not finite" cpd nan.tns -r 2
run_late_case cpd_inf_value 1 "not finite" cpd inf.tns -r 2
run_late_case cpd_all_zero 1 "all zero" cpd allzero.tns -r 2
run_late_case cp_apr_negative_values 1 "negative" cpd negative_values.tns -r 2 --model poisson
# Options
run_case rank_zero 2 "--rank" cpd good.tns -r 0
run_case rank_negative 2 "--rank" cpd good.tns -r -3
run_case rank_not_a_number 2 "--rank" cpd good.tns -r abc
run_case rank_beyond_32_bits 2 "--rank" cpd good.tns -r 99999999999
run_case iters_negative 2 "--iters" cpd good.tns -r 2 --iters -1
run_case tol_nan 2 "--tol" cpd good.tns -r 2 --tol nan
run_case tol_negative 2 "--tol" cpd good.tns -r 2 --tol -0.5
run_case threads_negative 2 "--threads" info good.tns --threads -2
run_case threads_not_a_number 2 "--threads" info good.tns --threads many
run_case unknown_format 2 "--format" cpd good.tns -r 2 --format dense
run_case unknown_backend 2 "--backend" info good.tns --backend tpu
run_case option_missing_value 2 "--rank" cpd good.tns --rank
run_case tucker_rank_count 2 "gives 2 ranks but the tensor has 3 modes" tucker good.tns -r 2,2
run_case tucker_rank_above_dim 2 "exceeds that mode's size 2" tucker good.tns -r 2,2,9
run_case tucker_rank_zero 2 "positive integers" tucker good.tns -r 0,1,1
run_case init_mismatched_shapes 1 "bad_init" cpd good.tns --init bad_init
run_case convert_missing_output 2 "OUT" convert good.tns
# An output path that cannot be written is an argument error, found before reading.
run_case convert_into_missing_dir 2 "no/such/dir/out.tns" convert good.tns no/such/dir/out.tns
run_case convert_bad_to 2 "--to" convert good.tns out.xyz --to parquet
run_case convert_bad_precision 2 "--precision" convert good.tns out.tns --precision -4
run_case extra_positional 2 "unexpected" info good.tns good.tns

tally_cases
echo "bad_input.sh: $pass passed, $fail failed ($((pass + fail)) cases)"
[[ $fail -eq 0 ]]
