# CLI tests of `sptensor cpd --model gcp` (GCP-OPT; helpers from cli.cmake,
# included first: the test lists are included in sorted order). The first
# two are the commands of docs/gcp.md.
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
