#!/usr/bin/env bash
# Runs a command and checks its exit status and output.
#   expect.sh --rc N [--stdout REGEX]... [--stderr REGEX]... [--error-line] -- COMMAND [ARGS...]
# --stdout REGEX   stdout must contain a line matching the extended regex
# --stderr REGEX   stderr must contain a line matching the extended regex
# --error-line     stdout must be empty and stderr exactly one non-empty line
#                  (the CLI's promise for errors)
set -uo pipefail

want_rc=0
patterns=()
err_patterns=()
error_line=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --rc) want_rc=$2; shift 2 ;;
    --stdout) patterns+=("$2"); shift 2 ;;
    --stderr) err_patterns+=("$2"); shift 2 ;;
    --error-line) error_line=1; shift ;;
    --) shift; break ;;
    *) echo "expect.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
"$@" > "$out" 2> "$err" < /dev/null
rc=$?

status=0
report() { echo "FAILED: $*"; status=1; }
[[ $rc -eq $want_rc ]] || report "exit status $rc, expected $want_rc"
for p in "${patterns[@]+"${patterns[@]}"}"; do
  grep -Eq -- "$p" "$out" || report "stdout has no line matching /$p/"
done
for p in "${err_patterns[@]+"${err_patterns[@]}"}"; do
  grep -Eq -- "$p" "$err" || report "stderr has no line matching /$p/"
done
if [[ $error_line -eq 1 ]]; then
  [[ ! -s $out ]] || report "stdout is not empty"
  lines=$(wc -l < "$err")
  [[ $lines -eq 1 && -n $(tr -d '[:space:]' < "$err") ]] || report "stderr has $lines lines, expected exactly one"
fi
echo "--- command: $*"
echo "--- stdout:"; cat "$out"
echo "--- stderr:"; cat "$err"
exit $status
