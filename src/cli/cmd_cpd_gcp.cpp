// `sptensor cpd --model gcp`: Generalized CP by GCP-OPT (L-BFGS-B over the
// full tensor) with the loss from --loss; prints the objective and the
// projected-gradient norm per iteration.
#include <cmath>
#include <cstdio>
#include <limits>

#include "cmd_cpd_gcp.hpp"

namespace sptcli {
namespace {

struct ObjectivePrinter {
  bool quiet = false;
};

int print_objective(void* user_data, int iteration, double objective, double pg_norm, double seconds) {
  if (!static_cast<ObjectivePrinter*>(user_data)->quiet) {
    std::printf("iter %4d  objective %.10e  |proj grad| %.3e  time %.4f s\n", iteration, objective, pg_norm, seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

spt_gcp_loss gcp_loss_from_name(const std::string& name) {
  if (name == "gaussian") return SPT_GCP_LOSS_GAUSSIAN;
  if (name == "bernoulli-odds") return SPT_GCP_LOSS_BERNOULLI_ODDS;
  if (name == "bernoulli" || name == "bernoulli-logit") return SPT_GCP_LOSS_BERNOULLI_LOGIT;
  if (name == "poisson") return SPT_GCP_LOSS_POISSON;
  if (name == "poisson-log") return SPT_GCP_LOSS_POISSON_LOG;
  if (name == "rayleigh") return SPT_GCP_LOSS_RAYLEIGH;
  if (name == "gamma") return SPT_GCP_LOSS_GAMMA;
  return SPT_GCP_LOSS_HUBER;  // the caller offered only these names
}

spt_status run_gcp(spt_context* ctx, const spt_coo* x, const spt_cpd_options& als, const GcpCliSettings& gcp, bool quiet,
                   spt_ktensor** out) {
  spt_gcp_options opts;
  check(spt_gcp_options_init(&opts), ctx, "initialising GCP options");
  opts.rank = als.rank;
  opts.seed = als.seed;
  opts.loss = gcp.loss;
  opts.loss_parameter = gcp.huber_threshold;
  opts.lower_bound = gcp.lower_bound;
  opts.max_iters = gcp.max_iters;
  opts.pgtol = gcp.pgtol;
  opts.missing = gcp.missing;
  if (als.init == SPT_CPD_INIT_USER) {
    opts.init = SPT_GCP_INIT_USER;
    opts.init_factors = als.init_factors;
  }
  ObjectivePrinter printer{quiet};  // outlives the (synchronous) call
  opts.callback = print_objective;
  opts.callback_data = &printer;
  return spt_gcp_opt(ctx, x, &opts, out);
}

}  // namespace sptcli
