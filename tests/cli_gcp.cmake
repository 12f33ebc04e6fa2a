# CLI tests of `sptensor cpd --model gcp` (GCP-OPT and GCP-SGD; helpers from
# cli.cmake, included first: the test lists are included in sorted order).
# The bernoulli, poisson and sgd ones are the commands of docs/gcp.md.
if(NOT TARGET sptensor_cli OR NOT COMMAND spt_cli_test OR NOT SPT_LBFGSB_LIBS)
  return()
endif()

spt_cli_test(cli_cpd_gcp_bernoulli_nations 0 DATA
  STDOUT "^GCP-OPT: loss bernoulli, rank 3, max 20 iterations, pgtol 1e-05," "^iter +20 +objective [0-9]\\.[0-9]+e\\+[0-9]+ "
         "^final objective [0-9]\\.[0-9]+e\\+[0-9]+ after 20 iterations"
  ARGS cpd ${SPT_CLI_NATIONS} -r 3 --iters 20 --model gcp --loss bernoulli --seed 1)
spt_cli_test(cli_cpd_gcp_poisson_nations 0 DATA
  STDOUT "^GCP-OPT: loss poisson," "^final objective [0-9]\\.[0-9]+e\\+[0-9]+ after [0-9]+ iterations"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --iters 10 --model gcp --loss poisson --quiet)
spt_cli_test(cli_cpd_gcp_bad_loss 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model gcp --loss cauchy)
spt_cli_test(cli_cpd_loss_needs_gcp 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --loss poisson)
spt_cli_test(cli_cpd_gcp_negative_bound_refused 1 DATA STDERR "needs factors >= 0; lower_bound -1 is below that"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model gcp --loss poisson --lower-bound -1)

# GCP-SGD (docs/gcp.md's command): one line per epoch, the final estimate.
spt_cli_test(cli_cpd_gcp_sgd_nations 0 DATA
  STDOUT "^GCP-SGD: loss bernoulli, rank 3, max 10 epochs of 200 Adam steps, rate 0\\.01,"
         "^epoch +1 +objective estimate [0-9]\\.[0-9]+e\\+[0-9]+ +rate 1\\.000e-02 "
         "^final objective estimate [0-9]\\.[0-9]+e\\+[0-9]+ after [0-9]+ epochs"
  ARGS cpd ${SPT_CLI_NATIONS} -r 3 --model gcp --loss bernoulli --optimizer sgd --iters 10 --epoch-iters 200
       --rate 0.01 --seed 1)
spt_cli_test(cli_cpd_gcp_sgd_options_need_sgd 2 ERROR DATA ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model gcp --rate 0.1)
spt_cli_test(cli_cpd_gcp_sgd_no_tol 2 ERROR DATA
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model gcp --optimizer sgd --tol 1e-3)
spt_cli_test(cli_cpd_gcp_sgd_missing_refused 1 DATA STDERR "missing entries are not supported with GCP-SGD"
  ARGS cpd ${SPT_CLI_NATIONS} -r 2 --model gcp --optimizer sgd --missing ${SPT_CLI_NATIONS})
# --missing FILE: a generated mask leaves a corrupted entry out of the fit.
add_test(NAME cli_cpd_gcp_missing_mask
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/gcp_missing.sh ${SPT_CLI} ${SPT_CLI_WORK}/gcp_missing)
set_tests_properties(cli_cpd_gcp_missing_mask PROPERTIES TIMEOUT 120)
