// The parallel scan that finds where runs start in a sequence (the groups of
// a sorted COO, HiCOO's blocks and superblocks, SpTTM's fibers): the
// positions are cut into near-equal chunks, each chunk counts its starts,
// a prefix sum gives each chunk its offset, and each chunk writes its
// starts there. The result is in position order whatever the chunk count.
#pragma once

#include <vector>

#include "core/buffer.hpp"
#include "sptensor/sptensor.h"

namespace spt::sorting {

// The first position of chunk c when [0, n) is cut into `chunks` near-equal
// ranges (chunk_begin(n, chunks, chunks) == n).
inline spt_nnz chunk_begin(spt_nnz n, int c, int chunks) {
  return static_cast<spt_nnz>((static_cast<unsigned __int128>(n) * c) / chunks);
}

// The chunk c of chunk_begin's split that holds position i (0 <= i < n):
// from the estimate i * chunks / n, corrected by at most a step or two.
inline int chunk_of(spt_nnz i, spt_nnz n, int chunks) {
  int c = static_cast<int>((static_cast<unsigned __int128>(i) * chunks) / n);
  while (c > 0 && chunk_begin(n, c, chunks) > i) --c;
  while (c + 1 < chunks && chunk_begin(n, c + 1, chunks) <= i) ++c;
  return c;
}

// The positions k in [0, n) with k == 0 or is_start(k), in increasing
// order, then n; {0} for n == 0. Runs on `chunks` OpenMP threads (at least
// one); is_start is called from them concurrently and must only read.
template <typename IsStart>
buffer<spt_nnz> collect_starts(spt_nnz n, int chunks, IsStart is_start) {
  if (n == 0) return buffer<spt_nnz>(1, 0);
  if (chunks < 1) chunks = 1;
  std::vector<spt_nnz> offset(chunks + 1, 0);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    spt_nnz count = 0;
    const spt_nnz begin = chunk_begin(n, c, chunks), end = chunk_begin(n, c + 1, chunks);
    for (spt_nnz k = begin; k < end; ++k) count += k == 0 || is_start(k);
    offset[c + 1] = count;
  }
  for (int c = 0; c < chunks; ++c) offset[c + 1] += offset[c];
  buffer<spt_nnz> starts(offset[chunks] + 1);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    spt_nnz out = offset[c];
    // Bounds in locals: the stores to `starts` could alias the shared
    // variables the loop would otherwise re-read on every entry.
    const spt_nnz begin = chunk_begin(n, c, chunks), end = chunk_begin(n, c + 1, chunks);
    for (spt_nnz k = begin; k < end; ++k)
      if (k == 0 || is_start(k)) starts[out++] = k;
  }
  starts[offset[chunks]] = n;
  return starts;
}

}  // namespace spt::sorting
