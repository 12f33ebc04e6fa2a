// `sptensor cpd --model gcp` (cmd_cpd_gcp.cpp): the GCP settings cpd
// parses and the run.
#pragma once

#include <cstdint>
#include <string>

#include "cli.hpp"
#include "sptensor/gcp.h"

namespace sptcli {

struct GcpCliSettings {
  spt_gcp_loss loss = SPT_GCP_LOSS_GAUSSIAN;
  double huber_threshold = 0.25;
  double lower_bound = 0;  // NaN: the loss's own
  int max_iters = 1000;
  double pgtol = 1e-5;
  const spt_coo* missing = nullptr;
  // --optimizer sgd and its settings (0 samples: the library's defaults).
  bool sgd = false;
  double rate = 1e-3;
  int epoch_iters = 1000;
  int max_fails = 1;
  uint64_t gradient_samples = 0;
  uint64_t function_samples = 0;
};

// The spt_gcp_loss of a --loss name (one of the names cpd offers).
spt_gcp_loss gcp_loss_from_name(const std::string& name);

// Runs GCP-OPT (or GCP-SGD with gcp.sgd) on x with rank, seed and user init from `als` (the options
// cpd built) and the GCP settings from `gcp`.
spt_status run_gcp(spt_context* ctx, const spt_coo* x, const spt_cpd_options& als, const GcpCliSettings& gcp, bool quiet,
                   spt_ktensor** out);

}  // namespace sptcli
