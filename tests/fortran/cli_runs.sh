# Sourced by run_fortran_cpd.sh and run_fortran_gcp.sh, which run the
# `sptensor` CLI and then a Fortran check program on the same data file:
#   source cli_runs.sh NAME CLI PROGRAM DATA_FILE WORK_DIR
# sets $cli, $program, $data and $work (emptied), and defines fail
# ("fortran NAME test: FAILED: ...") and cli_value.
# shellcheck disable=SC2034  # program and data: for the sourcing script
name=$1 cli=$2 program=$3 data=$4 work=$5
fail() { echo "fortran $name test: FAILED: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"

# cli_value RUN LINE WHAT ARG...: runs "$cli" ARG... with its output in
# $work/RUN.out (WHAT names the run when it fails) and prints the number of
# the output's line "LINE <number> after ...".
cli_value() {
  local run=$1 line=$2 what=$3 value
  shift 3
  "$cli" "$@" > "$work/$run.out" || { cat "$work/$run.out" >&2; fail "$what"; }
  value=$(sed -n "s/^$line \([-+0-9.eE]*\) after.*/\1/p" "$work/$run.out")
  [[ -n "$value" ]] || { cat "$work/$run.out" >&2; fail "no '$line' line from $what"; }
  echo "$value"
}
