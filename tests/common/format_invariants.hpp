// Invariant checks of the format handles, for the tests (the library never
// calls them: its builders make valid handles and its entry points check
// their inputs). Each throws INVALID_ARGUMENT naming the first violation.
#pragma once

#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hls.hpp"

namespace spt::fcoo {
// Flags, group table, segment coordinates strictly increasing, indices
// within dims.
void validate(const spt_fcoo_s& f);
}  // namespace spt::fcoo

namespace spt::hls {
// Sorted tiles, bitmap popcounts against offsets, dense tiles over the
// threshold, sparse nonzeros outside dense tiles and in range, row tables.
void validate(const spt_hls_s& h);
}  // namespace spt::hls

namespace spt::hbcsf {
// Pointers monotone and in range, groups disjoint and classified
// correctly, segments within the threshold, units within one slice, bins.
void validate(const spt_hbcsf_s& h);
}  // namespace spt::hbcsf
