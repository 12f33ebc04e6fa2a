// Options structs of the format builders as temporaries, so a test can
// write spt_csf_from_coo(ctx, x, CsfOptions(SPT_CSF_ONEMODE), &c), and the
// mode a single-mode handle serves (for its spt_mttkrp_X call).
#pragma once

#include "sptensor/sptensor.h"

namespace spt::test {

struct CsfOptions {
  spt_csf_options o;
  explicit CsfOptions(spt_csf_policy policy) {
    spt_csf_options_init(&o);
    o.policy = policy;
  }
  operator const spt_csf_options*() const { return &o; }
};

struct FcooOptions {
  spt_fcoo_options o;
  FcooOptions(spt_fcoo_operation operation, uint32_t mode, uint32_t threadlen = 0) {
    spt_fcoo_options_init(&o);
    o.operation = operation;
    o.mode = mode;
    o.threadlen = threadlen;
  }
  operator const spt_fcoo_options*() const { return &o; }
};

struct HbcsfOptions {
  spt_hbcsf_options o;
  explicit HbcsfOptions(uint32_t root_mode) {
    spt_hbcsf_options_init(&o);
    o.root_mode = root_mode;
  }
  HbcsfOptions(uint32_t root_mode, spt_hbcsf_options base) : o(base) { o.root_mode = root_mode; }
  operator const spt_hbcsf_options*() const { return &o; }
};

// The mode a handle was built for (UINT32_MAX if the query fails, which the
// MTTKRP call then rejects).
inline uint32_t served_mode(const spt_fcoo* f) {
  spt_fcoo_summary s{};
  s.struct_size = sizeof s;
  return spt_fcoo_info(nullptr, f, &s) == SPT_OK ? s.mode : UINT32_MAX;
}
inline uint32_t served_mode(const spt_hbcsf* h) {
  spt_hbcsf_summary s{};
  s.struct_size = sizeof s;
  return spt_hbcsf_info(nullptr, h, &s) == SPT_OK ? s.root_mode : UINT32_MAX;
}
inline uint32_t served_mode(const spt_hls* h) {
  spt_hls_summary s{};
  s.struct_size = sizeof s;
  return spt_hls_info(nullptr, h, &s) == SPT_OK ? s.root_mode : UINT32_MAX;
}

}  // namespace spt::test
