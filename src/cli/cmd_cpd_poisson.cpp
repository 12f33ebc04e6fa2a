// `sptensor cpd --model poisson`: CP-APR (Poisson CP, multiplicative
// updates) with the options `cpd` parsed for CP-ALS; prints the
// log-likelihood per outer iteration instead of the fit.
#include <cstdio>

#include "cli.hpp"
#include "sptensor/cp_apr.h"

namespace sptcli {
namespace {

struct LoglikPrinter {
  bool quiet = false;
};

int print_loglik(void* user_data, int iteration, double loglik, double kkt, double seconds) {
  if (!static_cast<LoglikPrinter*>(user_data)->quiet) {
    std::printf("iter %4d  loglik %.10e  kkt %.3e  time %.4f s\n", iteration, loglik, kkt, seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

// Runs CP-APR on x with rank, outer-iteration limit (--iters), KKT tolerance
// (--tol), seed, storage format (--format) and user init taken from `als`
// (the options cpd built).
spt_status run_cp_apr(spt_context* ctx, const spt_coo* x, const spt_cpd_options& als, bool quiet,
                      spt_ktensor** out) {
  spt_cp_apr_options opts;
  check(spt_cp_apr_options_init(&opts), ctx, "initialising CP-APR options");
  opts.rank = als.rank;
  opts.max_outer_iters = als.max_iters;
  opts.tol = als.tol;
  opts.seed = als.seed;
  opts.format = als.format;  // AUTO, COO or HICOO (CSF is refused by spt_cp_apr)
  if (als.init == SPT_CPD_INIT_USER) {
    opts.init = SPT_CP_APR_INIT_USER;
    opts.init_factors = als.init_factors;
  }
  LoglikPrinter printer{quiet};  // outlives the (synchronous) call
  opts.callback = print_loglik;
  opts.callback_data = &printer;
  return spt_cp_apr(ctx, x, &opts, out);
}

}  // namespace sptcli
