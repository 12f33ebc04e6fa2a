# Tests of the `sptensor` command-line tool (target sptensor_cli). Each runs
# through tests/cli/expect.sh, which checks the exit status, stdout patterns
# and, for errors, that stderr holds exactly one line and stdout nothing.
if(NOT TARGET sptensor_cli)
  return()
endif()

find_file(SPT_CLI_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
find_program(SPT_XZ xz)
set(SPT_CLI $<TARGET_FILE:sptensor_cli>)
set(SPT_EXPECT ${CMAKE_CURRENT_SOURCE_DIR}/cli/expect.sh)
set(SPT_CLI_WORK ${CMAKE_CURRENT_BINARY_DIR}/cli-work)
file(MAKE_DIRECTORY ${SPT_CLI_WORK})
# A malformed input for the parse-error test: a row with a missing value.
file(WRITE ${SPT_CLI_WORK}/malformed.tns "1 1 1 1.5\n2 2 2\n")

# spt_cli_test(NAME RC [STDOUT regex...] [STDERR regex...] [ERROR] [DATA] ARGS args...)
function(spt_cli_test name rc)
  cmake_parse_arguments(T "ERROR;DATA" "" "STDOUT;STDERR;ARGS" ${ARGN})
  set(expect_args --rc ${rc})
  foreach(p ${T_STDOUT})
    list(APPEND expect_args --stdout ${p})
  endforeach()
  foreach(p ${T_STDERR})
    list(APPEND expect_args --stderr ${p})
  endforeach()
  if(T_ERROR)
    list(APPEND expect_args --error-line)
  endif()
  add_test(NAME ${name} COMMAND ${SPT_EXPECT} ${expect_args} -- ${SPT_CLI} ${T_ARGS}
    WORKING_DIRECTORY ${SPT_CLI_WORK})
  set_tests_properties(${name} PROPERTIES TIMEOUT 120)
  if(T_DATA AND NOT SPT_CLI_NATIONS)
    set_tests_properties(${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

# --help, --version
spt_cli_test(cli_help 0 STDOUT "^Commands:" "info" "convert" "cpd" ARGS --help)
spt_cli_test(cli_version 0 STDOUT "^sptensor [0-9]+\\.[0-9]+\\.[0-9]+" ARGS --version)
foreach(cmd info convert cpd)
  spt_cli_test(cli_help_${cmd} 0 STDOUT "^Usage: sptensor ${cmd} " "--help" ARGS ${cmd} --help)
endforeach()

# info: shape and the per-mode table of nations (14 x 55 x 14, 1992 nonzeros;
# slice maxima from ../shared/data/README.md; fibers counted independently).
spt_cli_test(cli_info_nations 0 DATA
  STDOUT "^order +3$" "^nnz +1992$" "^dims +14 x 55 x 14$" "^density +1\\.848e-01$"
         "^1 +14 +14 +0 +210 +142\\.29 +32\\.59 +462$"
         "^2 +55 +55 +0 +141 +36\\.22 +33\\.36 +182$"
         "^3 +14 +14 +0 +304 +142\\.29 +68\\.60 +504$"
  ARGS info ${SPT_CLI_NATIONS})
spt_cli_test(cli_info_float32_progress 0 DATA STDOUT "^nnz +1992$" "^dtype +float32$"
  ARGS info ${SPT_CLI_NATIONS} --dtype float32 --progress --threads 1)
# Streamed input: an endless device fails at its first NUL byte (one line on
# stderr, exit 1) instead of being read whole; --mmap is documented.
if(EXISTS /dev/zero)
  spt_cli_test(cli_info_dev_zero 1 ERROR ARGS info /dev/zero)
endif()
spt_cli_test(cli_info_help_mmap 0 STDOUT "--mmap" "SIGBUS" ARGS info --help)

# Limits and writer guarantees: dims and empty tensors survive convert, info
# shows a binary file's stored dtype, a dim of 2^32 - 1, escaped file names.
add_test(NAME cli_limits COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/limits.sh ${SPT_CLI} ${SPT_CLI_WORK}/limits)
set_tests_properties(cli_limits PROPERTIES TIMEOUT 120)

# convert: byte-identical round trips through .sptb, SPLATT .bin and .tns.gz
add_test(NAME cli_convert_roundtrip
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/roundtrip.sh ${SPT_CLI} ${SPT_CLI_WORK}/roundtrip ${SPT_CLI_NATIONS})
set_tests_properties(cli_convert_roundtrip PROPERTIES TIMEOUT 120)
if(NOT SPT_CLI_NATIONS OR NOT SPT_XZ)
  set_tests_properties(cli_convert_roundtrip PROPERTIES DISABLED TRUE)
endif()

# cpd: per-iteration lines, then factor files and --init
spt_cli_test(cli_cpd_nations 0 DATA
  STDOUT "^iter +1 +fit 0\\.[0-9]+ +delta " "^iter +8 +fit " "^final fit 0\\.[0-9]+ after 8 iterations"
  ARGS cpd ${SPT_CLI_NATIONS} -r 4 --iters 8 --tol 0 --seed 1 --threads 2)
add_test(NAME cli_cpd_factor_files
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/cpd_files.sh ${SPT_CLI} ${SPT_CLI_WORK}/cpd ${SPT_CLI_NATIONS} 4 14 55 14)
set_tests_properties(cli_cpd_factor_files PROPERTIES TIMEOUT 120)
if(NOT SPT_CLI_NATIONS)
  set_tests_properties(cli_cpd_factor_files PROPERTIES DISABLED TRUE)
endif()

# cpd --reorder: same fit and factor files as without reordering
add_test(NAME cli_cpd_reorder
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/cpd_reorder.sh ${SPT_CLI} ${SPT_CLI_WORK}/cpd-reorder ${SPT_CLI_NATIONS})
set_tests_properties(cli_cpd_reorder PROPERTIES TIMEOUT 120)
if(NOT SPT_CLI_NATIONS)
  set_tests_properties(cli_cpd_reorder PROPERTIES DISABLED TRUE)
endif()

# Repeated coordinates are one tensor holding their sum: (1,1,1) = 1.5 + 2.5,
# so the norm is sqrt(4^2 + 4^2), 2 of 8 cells are nonzero, 1 entry repeats.
file(WRITE ${SPT_CLI_WORK}/repeats.tns "1 1 1 1.5\n2 2 2 4\n1 1 1 2.5\n")
spt_cli_test(cli_info_repeats_are_summed 0
  STDOUT "^nnz +3$" "^repeats +1 " "^density +2\\.500e-01$" "^norm +5\\.656854249$"
  ARGS info repeats.tns)
# An OMP_NUM_THREADS no runtime can start (libgomp used to crash) runs on at
# most the processors.
add_test(NAME cli_cpd_huge_omp_num_threads
  COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=100000 ${SPT_EXPECT} --rc 0 --stdout "^final fit [01]\\.[0-9]+ after"
          -- ${SPT_CLI} cpd repeats.tns -r 2 --iters 5
  WORKING_DIRECTORY ${SPT_CLI_WORK})
set_tests_properties(cli_cpd_huge_omp_num_threads PROPERTIES TIMEOUT 120)

# Errors: one line on stderr, nothing on stdout; 1 = runtime, 2 = usage.
spt_cli_test(cli_error_bad_reorder 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --reorder hypergraph)
spt_cli_test(cli_error_missing_file 1 ERROR ARGS info ${SPT_CLI_WORK}/does-not-exist.tns)
spt_cli_test(cli_error_parse 1 ERROR ARGS info ${SPT_CLI_WORK}/malformed.tns)
spt_cli_test(cli_error_bad_rank 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 0)
spt_cli_test(cli_error_missing_rank 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS})
spt_cli_test(cli_error_bad_dtype 2 ERROR DATA ARGS info ${SPT_CLI_NATIONS} --dtype float16)
spt_cli_test(cli_error_unknown_option 2 ERROR DATA ARGS info ${SPT_CLI_NATIONS} --no-such-option)
spt_cli_test(cli_error_unknown_command 2 ERROR ARGS decompose ${SPT_CLI_WORK}/x.tns)
spt_cli_test(cli_error_no_command 2 ERROR ARGS)
spt_cli_test(cli_error_missing_init 1 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} --init ${SPT_CLI_WORK}/no-such-model)
# A named format CP-ALS does not run on: the library refuses it (exit 1)
# after the run's header line.
spt_cli_test(cli_cpd_format_hls_unsupported 1 DATA STDOUT "format hls" ARGS cpd ${SPT_CLI_NATIONS} -r 2 --format hls)

# Output paths are checked before the tensor is read (stdout stays empty: no
# "tensor ... read in" line), as usage errors (exit 2) naming the option.
file(MAKE_DIRECTORY ${SPT_CLI_WORK}/outdir)
spt_cli_test(cli_cpd_output_missing_directory 2 ERROR DATA STDERR "-o: cannot write .*no-such-dir/model.*No such file"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 -o ${SPT_CLI_WORK}/no-such-dir/model)
spt_cli_test(cli_cpd_output_under_a_file 2 ERROR DATA STDERR "-o: cannot write .*malformed\\.tns' is not a directory"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 -o ${SPT_CLI_WORK}/malformed.tns/model)
spt_cli_test(cli_cpd_output_no_stem 2 ERROR DATA STDERR "-o PREFIX: '.*outdir/' has no file stem.*outdir/model"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 -o ${SPT_CLI_WORK}/outdir/)
spt_cli_test(cli_cpd_output_dot 2 ERROR DATA STDERR "has no file stem" ARGS cpd ${SPT_CLI_NATIONS} -r 2 -o .)
spt_cli_test(cli_cpd_poisson_output_missing_directory 2 ERROR DATA STDERR "-o: cannot write"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model poisson -o ${SPT_CLI_WORK}/no-such-dir/model)
# A factor file that is a directory: found after reading (the count of mode
# files is the tensor's order), still before the first iteration.
file(MAKE_DIRECTORY ${SPT_CLI_WORK}/outdir/blocked.mode-2.txt)
add_test(NAME cli_cpd_output_mode_file_is_directory
  COMMAND ${SPT_EXPECT} --rc 2 --stderr "-o: cannot write '.*blocked\\.mode-2\\.txt': it is a directory"
          -- ${SPT_CLI} cpd ${SPT_CLI_NATIONS} -r 2 -o ${SPT_CLI_WORK}/outdir/blocked
  WORKING_DIRECTORY ${SPT_CLI_WORK})
set_tests_properties(cli_cpd_output_mode_file_is_directory PROPERTIES TIMEOUT 120
  FAIL_REGULAR_EXPRESSION "iter +1 +fit")
spt_cli_test(cli_tucker_output_missing_directory 2 ERROR DATA STDERR "-o: cannot write .*no-such-dir/model"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 -o ${SPT_CLI_WORK}/no-such-dir/model)
spt_cli_test(cli_tucker_output_no_stem 2 ERROR DATA STDERR "has no file stem"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 -o ${SPT_CLI_WORK}/outdir/)
spt_cli_test(cli_convert_output_missing_directory 2 ERROR DATA STDERR "OUT: cannot write .*no-such-dir/x\\.tns"
  ARGS convert ${SPT_CLI_NATIONS} ${SPT_CLI_WORK}/no-such-dir/x.tns)
spt_cli_test(cli_convert_output_directory 2 ERROR DATA STDERR "OUT: '.*outdir/' names a directory"
  ARGS convert ${SPT_CLI_NATIONS} ${SPT_CLI_WORK}/outdir/)
# Numbers that must be finite say so.
spt_cli_test(cli_cpd_tol_inf 2 ERROR DATA STDERR "option --tol: expected a finite number >= 0, got 'inf'"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --tol inf)
spt_cli_test(cli_cpd_tol_nan 2 ERROR DATA STDERR "expected a finite number >= 0, got 'nan'"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --tol nan)
# The summary splits read, set-up and iteration time for every command that
# iterates.
set(SPT_CLI_TIMING "; read [0-9]+\\.[0-9]+ s, set-up [0-9]+\\.[0-9]+ s, [0-9]+ iterations [0-9]+\\.[0-9]+ s \\([0-9]+\\.[0-9]+ s per iteration\\)$")
spt_cli_test(cli_cpd_timing_summary 0 DATA
  STDOUT "^final fit 0\\.[0-9]+ after 4 iterations \\(iteration limit reached\\)${SPT_CLI_TIMING}"
  ARGS cpd ${SPT_CLI_NATIONS} -r 3 --iters 4 --tol 0 -q)
spt_cli_test(cli_cpd_poisson_timing_summary 0 DATA
  STDOUT "^final log-likelihood -[0-9.e+]+ after 3 iterations \\(iteration limit reached\\)${SPT_CLI_TIMING}"
  ARGS cpd ${SPT_CLI_NATIONS} -r 3 --iters 3 --tol 0 --model poisson -q)
spt_cli_test(cli_tucker_timing_summary 0 DATA
  STDOUT "^final fit 0\\.[0-9]+ after 3 iterations \\(iteration limit reached\\)${SPT_CLI_TIMING}"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 --iters 3 --tol 0 -q)
# A compressed binary file is decoded whole first: --progress shows that as
# its own "decompress" stage before "read".
if(SPT_CLI_NATIONS)
  add_test(NAME cli_info_progress_decompress
    COMMAND bash -c "\"$1\" convert \"$2\" \"$3/progress.sptb.xz\" > /dev/null && exec \"$4\" --rc 0 --stdout '^nnz +1992$' --stderr '^decompress: 100%' --stderr '^read: 100%' -- \"$1\" info \"$3/progress.sptb.xz\" --progress"
            _ ${SPT_CLI} ${SPT_CLI_NATIONS} ${SPT_CLI_WORK} ${SPT_EXPECT})
  set_tests_properties(cli_info_progress_decompress PROPERTIES TIMEOUT 120)
endif()
