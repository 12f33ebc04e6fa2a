# CLI tests of `sptensor tucker` (helpers from cli.cmake, included first:
# the test lists are included in sorted order).
if(NOT TARGET sptensor_cli OR NOT COMMAND spt_cli_test)
  return()
endif()

spt_cli_test(cli_help_tucker 0 STDOUT "^Usage: sptensor tucker " "--rank" ARGS tucker --help)
spt_cli_test(cli_tucker_nations 0 DATA
  STDOUT "^Tucker-HOOI: ranks 3,4,5, max 5 iterations" "^iter +5 +fit 0\\.[0-9]+"
         "^final fit 0\\.[0-9]+ after 5 iterations \\(iteration limit reached\\)"
  ARGS tucker ${SPT_CLI_NATIONS} -r 3,4,5 --iters 5 --tol 0)
spt_cli_test(cli_tucker_one_rank_random 0 DATA STDOUT "ranks 2,2,2," "random init \\(seed 3\\)"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 --init random --seed 3 --iters 3)
spt_cli_test(cli_tucker_rank_too_big 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS} -r 15,2,2)
spt_cli_test(cli_tucker_rank_count 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS} -r 2,2)
spt_cli_test(cli_tucker_rank_syntax 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS} -r 2,x,2)
spt_cli_test(cli_tucker_rank_zero 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS} -r 2,0,2)
spt_cli_test(cli_tucker_no_rank 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS})
spt_cli_test(cli_tucker_bad_init 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS} -r 2 --init svd)
# --ttmc: chain and one_shot run on the CPU; hls there is an unsupported
# method (a runtime error after the run's header, exit 1); an unknown name
# is a usage error.
spt_cli_test(cli_tucker_ttmc_chain 0 DATA STDOUT "^final fit 0\\.[0-9]+ after 3 iterations"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 --iters 3 --tol 0 --backend cpu --ttmc chain)
spt_cli_test(cli_tucker_ttmc_one_shot 0 DATA STDOUT "^final fit 0\\.[0-9]+ after 3 iterations"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 --iters 3 --tol 0 --backend cpu --ttmc one_shot)
spt_cli_test(cli_tucker_ttmc_hls_on_cpu 1 DATA STDOUT "^Tucker-HOOI: ranks 2,2,2"
  ARGS tucker ${SPT_CLI_NATIONS} -r 2 --iters 3 --backend cpu --ttmc hls)
spt_cli_test(cli_tucker_ttmc_unknown 2 ERROR DATA ARGS tucker ${SPT_CLI_NATIONS} -r 2 --ttmc fastest)
if(SPT_CLI_NATIONS)
  add_test(NAME cli_tucker_files COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/tucker_files.sh ${SPT_CLI}
    ${SPT_CLI_NATIONS} ${SPT_CLI_WORK})
  set_tests_properties(cli_tucker_files PROPERTIES TIMEOUT 120)
endif()
