#!/usr/bin/env bash
# sptensor tucker -o PREFIX writes PREFIX.core.tns (every core entry,
# 1-based, first index fastest; readable by `sptensor info`) and
# PREFIX.mode-K.txt (dims[K] rows of R_K values).
# usage: tucker_files.sh SPTENSOR NATIONS_TNS WORKDIR
set -euo pipefail
cli=$1 tensor=$2 work=$3
prefix=$work/tucker-nations
rm -f "$prefix".*
"$cli" tucker "$tensor" -r 3,4,5 --iters 4 --tol 0 -q -o "$prefix" > /dev/null
fail=0
[ "$(wc -l < "$prefix.core.tns")" = 60 ] || { echo "core.tns should list 3*4*5 = 60 entries"; fail=1; }
head -2 "$prefix.core.tns" | awk 'NR==1 && !($1==1 && $2==1 && $3==1) {exit 1} NR==2 && !($1==2 && $2==1 && $3==1) {exit 1}' \
  || { echo "core.tns is not first-index-fastest, 1-based"; fail=1; }
info=$("$cli" info "$prefix.core.tns")  # captured: grep -q in a pipe could SIGPIPE the writer
grep -Eq '^dims +3 x 4 x 5$' <<< "$info" || { echo "sptensor info cannot read core.tns"; fail=1; }
for spec in "1 14 3" "2 55 4" "3 14 5"; do
  set -- $spec
  f=$prefix.mode-$1.txt
  [ "$(wc -l < "$f")" = "$2" ] || { echo "$f should have $2 rows"; fail=1; }
  [ "$(head -1 "$f" | wc -w)" = "$3" ] || { echo "$f should have $3 columns"; fail=1; }
done
[ $fail = 0 ] && echo "tucker output files OK"
exit $fail
