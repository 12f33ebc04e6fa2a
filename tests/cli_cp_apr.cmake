# CLI tests of `sptensor cpd --model poisson` (CP-APR; helpers from
# cli.cmake, included first: the test lists are included in sorted order).
if(NOT TARGET sptensor_cli OR NOT COMMAND spt_cli_test)
  return()
endif()

spt_cli_test(cli_cpd_poisson_nations 0 DATA
  STDOUT "^CP-APR: rank 3, max 5 iterations, tol 0," "^iter +5 +loglik -[0-9]\\.[0-9]+e\\+[0-9]+ +kkt "
         "^final log-likelihood -[0-9]\\.[0-9]+e\\+[0-9]+ after 5 iterations \\(iteration limit reached\\)"
  ARGS cpd ${SPT_CLI_NATIONS} -r 3 --iters 5 --tol 0 --model poisson)
spt_cli_test(cli_cpd_poisson_hicoo 0 DATA
  STDOUT "format hicoo" "^final log-likelihood -[0-9]\\.[0-9]+e\\+[0-9]+ after 3 iterations"
  ARGS cpd ${SPT_CLI_NATIONS} -r 3 --iters 3 --tol 0 --model poisson --format hicoo)
spt_cli_test(cli_cpd_poisson_csf_refused 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model poisson --format csf)
spt_cli_test(cli_cpd_poisson_hls_refused 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model poisson --format hls)
spt_cli_test(cli_cpd_bad_model 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model gauss)
spt_cli_test(cli_help_cpd_model 0 STDOUT "--model" ARGS cpd --help)
