// `sptensor cpd --model gcp`: Generalized CP by GCP-OPT (L-BFGS-B over the
// full tensor) or GCP-SGD (--optimizer sgd) with the loss from --loss;
// prints the objective and the projected-gradient norm per iteration, or
// the objective estimate and the learning rate per epoch.
#include <cmath>
#include <cstdio>
#include <limits>

#include "cmd_cpd_gcp.hpp"

namespace sptcli {
namespace {

struct ObjectivePrinter {
  bool quiet = false;
  bool sgd = false;
};

int print_objective(void* user_data, int iteration, double objective, double pg_norm, double seconds) {
  const auto* printer = static_cast<ObjectivePrinter*>(user_data);
  if (printer->quiet) return 0;
  if (printer->sgd)  // pg_norm holds the epoch's learning rate
    std::printf("epoch %4d  objective estimate %.10e  rate %.3e  time %.4f s\n", iteration, objective, pg_norm, seconds);
  else
    std::printf("iter %4d  objective %.10e  |proj grad| %.3e  time %.4f s\n", iteration, objective, pg_norm, seconds);
  std::fflush(stdout);
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
  if (gcp.sgd) {
    opts.optimizer = SPT_GCP_OPTIMIZER_SGD;
    opts.rate = gcp.rate;
    opts.epoch_iters = gcp.epoch_iters;
    opts.max_fails = gcp.max_fails;
    opts.gradient_nonzeros = opts.gradient_zeros = gcp.gradient_samples;
    opts.function_nonzeros = opts.function_zeros = gcp.function_samples;
  }
  if (als.init == SPT_CPD_INIT_USER) {
    opts.init = SPT_GCP_INIT_USER;
    opts.init_factors = als.init_factors;
  }
  ObjectivePrinter printer{quiet, gcp.sgd};  // outlives the (synchronous) call
  opts.callback = print_objective;
  opts.callback_data = &printer;
  return spt_gcp_opt(ctx, x, &opts, out);
}

}  // namespace sptcli
