#!/usr/bin/env bash
# Checks the generated man page and bash completion of the `sptensor` CLI
# (built by cmake/sptensor_manpage.cmake from scripts/gen-manpage.py):
#   - the man page has a section for every command `sptensor --help` lists
#     and every option of `sptensor cpd --help`, and groff formats it without
#     warnings (when groff is installed);
#   - the completion script is valid bash (bash -n) and, sourced, completes
#     the subcommands, `help COMMAND`, a command's options and an option's
#     values;
#   - with BUILD_DIR: `cmake --install` puts them at share/man/man1/sptensor.1
#     and share/bash-completion/completions/sptensor, where bash-completion
#     loads them on demand.
# Usage: check_manpage.sh CLI MAN_PAGE COMPLETION_SCRIPT [BUILD_DIR CMAKE_COMMAND WORK_DIR]
set -euo pipefail
cli=$1
man_page=$2
completion=$3
build_dir=${4:-}
cmake_command=${5:-cmake}
work_dir=${6:-}
fail() { echo "manpage test: FAILED: $*" >&2; exit 1; }

[[ -s "$man_page" ]] || fail "no man page at $man_page"
grep -q '^\.TH SPTENSOR 1 ' "$man_page" || fail "no .TH SPTENSOR 1 header"
commands=$("$cli" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
[[ -n "$commands" ]] || fail "no commands in sptensor --help"
for c in $commands; do
  grep -q "^\.SH COMMAND: ${c^^}\$" "$man_page" || fail "man page has no section for '$c'"
done
for o in $("$cli" cpd --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
  grep -qF -- "\\fB${o//-/\\-}\\fR" "$man_page" || fail "man page lacks cpd option $o"
done
if command -v groff > /dev/null 2>&1; then
  warnings=$(groff -man -Tutf8 -ww -z "$man_page" 2>&1)
  [[ -z "$warnings" ]] || fail "groff warnings: $warnings"
fi
echo "ok    man page: $(wc -w <<< "$commands") commands, every cpd option"

bash -n "$completion" || fail "completion script is not valid bash"

# complete WORDS...: prints the completions offered for the last word.
complete_words() {
  bash -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _sptensor sptensor "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$@"
}
expect() {  # expect "WORD..." -- completes to include each of the words
  local want=$1; shift
  local got
  got=$(complete_words "$@")
  for w in $want; do
    grep -qx -- "$w" <<< "$got" || fail "completing '$*' offered '$(tr '\n' ' ' <<< "$got")', missing '$w'"
  done
}
expect "$commands help" sptensor ""
expect "convert cpd" sptensor c
expect "tucker" sptensor help tu
expect "--rank --iters --format --threads" sptensor cpd nations.tns --
expect "--format" sptensor cpd --fo
expect "coo csf hicoo" sptensor cpd x.tns --format ""
expect "hosvd random" sptensor tucker x.tns --init ""
expect "float32 float64" sptensor info x.tns --dtype ""
[[ -z "$(complete_words sptensor cpd x.tns -r "")" ]] || fail "a number (-r) should offer nothing"
echo "ok    completion: valid bash; subcommands, help COMMAND, options and values complete"

if [[ -n "$build_dir" ]]; then
  rm -rf "$work_dir"
  mkdir -p "$work_dir"
  "$cmake_command" --install "$build_dir" --prefix "$work_dir/prefix" > "$work_dir/install.log" \
    || { cat "$work_dir/install.log" >&2; fail "cmake --install"; }
  cmp "$man_page" "$work_dir/prefix/share/man/man1/sptensor.1" || fail "man page not installed in share/man/man1"
  installed=$work_dir/prefix/share/bash-completion/completions/sptensor
  cmp "$completion" "$installed" || fail "completion not installed in share/bash-completion/completions"
  MANPATH="$work_dir/prefix/share/man" man -w sptensor > /dev/null 2>&1 \
    || ! command -v man > /dev/null 2>&1 || fail "man -w does not find the installed page"
  echo "ok    installed: share/man/man1/sptensor.1, share/bash-completion/completions/sptensor"
fi
