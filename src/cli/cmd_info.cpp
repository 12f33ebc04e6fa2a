// sptensor info FILE: shape, density, norm and per-mode statistics.
//
// Per mode m (printed 1-based, as in FROSTT and the .map file names):
//   nonempty  number of slices (indices of mode m) holding at least one nonzero
//   empty     dims[m] - nonempty
//   max/mean/std  nonzeros per non-empty slice (population standard deviation)
//   fibers    number of mode-m fibers holding a nonzero, i.e. distinct tuples
//             of the other modes' coordinates (the rows MTTKRP/TTM in mode m
//             work on)
// Stored entries are counted as they are: a repeated coordinate counts twice
// in the slice numbers, while fibers count distinct tuples.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cli.hpp"

namespace sptcli {

const CommandSpec& info_spec() {
  static const CommandSpec spec = [] {
    CommandSpec s;
    s.name = "info";
    s.summary = "Print order, dims, nnz, density and per-mode slice and fiber statistics of a tensor file.";
    s.positionals = {"FILE"};
    s.description =
        "FILE is FROSTT .tns, extended .tns, SPLATT .bin or .sptb, optionally gzip/xz/zstd compressed\n"
        "(detected from the content). Modes are numbered from 1. Slice statistics (max/mean/std)\n"
        "are over the non-empty slices; 'fibers' counts the distinct coordinates of the other modes.";
    s.options = common_options();
    return s;
  }();
  return spec;
}

namespace {

uint64_t count_distinct_sorted(const std::vector<uint64_t>& keys) {
  if (keys.empty()) return 0;
  uint64_t n = 1;
  for (size_t i = 1; i < keys.size(); ++i) n += keys[i] != keys[i - 1];
  return n;
}

// Every mode's used indices relabelled 0..used-1 (order kept), so that the
// keys of hypersparse tensors with huge dims still fit 64 bits. A mode whose
// dim is small next to nnz gets a direct table (index -> label); a longer
// mode gets its sorted distinct indices, looked up by binary search, so that
// memory stays proportional to nnz whatever the dims (a dim of 4,294,967,295
// must not mean a 34 GB table).
struct CompactIndices {
  std::vector<std::vector<spt_index>> label;     // per mode: index -> compact label (direct modes)
  std::vector<std::vector<spt_index>> distinct;  // per mode: sorted used indices (long modes)
  std::vector<uint64_t> used;                    // per mode: number of distinct indices
  uint64_t of(uint32_t m, spt_index i) const {
    if (!label[m].empty()) return label[m][i];
    return static_cast<uint64_t>(std::lower_bound(distinct[m].begin(), distinct[m].end(), i) - distinct[m].begin());
  }
};

// Whether mode m's per-index tables (8 + 4 bytes per index) are small next
// to the tensor itself.
bool direct_tables(spt_index dim, spt_nnz nnz) { return dim <= 2 * nnz + 4096; }

// Number of distinct tuples of the coordinates in all modes except `mode`.
uint64_t count_fibers(const std::vector<const spt_index*>& ind, const TensorShape& s, uint32_t mode,
                      const CompactIndices& compact) {
  if (s.nnz == 0) return 0;
  uint64_t range = 1;
  bool fits = true;
  for (uint32_t m = 0; m < s.order; ++m) {
    uint64_t used = std::max<uint64_t>(compact.used[m], 1);
    if (m == mode) continue;
    if (range > UINT64_MAX / used) fits = false;
    else range *= used;
  }
  if (fits) {
    // The library's radix sort is internal to libsptensor (the CLI sees only
    // the C API), so the keys are sorted with the standard library.
    std::vector<uint64_t> keys(s.nnz);
    for (spt_nnz k = 0; k < s.nnz; ++k) {
      uint64_t key = 0;
      for (uint32_t m = 0; m < s.order; ++m)
        if (m != mode) key = key * compact.used[m] + compact.of(m, ind[m][k]);
      keys[k] = key;
    }
    std::sort(keys.begin(), keys.end());
    return count_distinct_sorted(keys);
  }
  // Too many combinations for one 64-bit key (high order, long modes): sort
  // positions lexicographically instead.
  auto compare = [&](spt_nnz a, spt_nnz b) {
    for (uint32_t m = 0; m < s.order; ++m) {
      if (m == mode || ind[m][a] == ind[m][b]) continue;
      return ind[m][a] < ind[m][b] ? -1 : 1;
    }
    return 0;
  };
  std::vector<spt_nnz> perm(s.nnz);
  for (spt_nnz k = 0; k < s.nnz; ++k) perm[k] = k;
  std::sort(perm.begin(), perm.end(), [&](spt_nnz a, spt_nnz b) { return compare(a, b) < 0; });
  uint64_t distinct = 1;
  for (spt_nnz k = 1; k < s.nnz; ++k) distinct += compare(perm[k - 1], perm[k]) != 0;
  return distinct;
}

struct SliceStats {
  uint64_t nonempty = 0, max = 0;
  double mean = 0, stddev = 0;
};

SliceStats slice_stats(const std::vector<uint64_t>& counts) {
  SliceStats st;
  double sum = 0, sum_sq = 0;
  for (uint64_t c : counts) {
    if (!c) continue;
    ++st.nonempty;
    st.max = std::max(st.max, c);
    sum += static_cast<double>(c);
    sum_sq += static_cast<double>(c) * static_cast<double>(c);
  }
  if (st.nonempty) {
    double n = static_cast<double>(st.nonempty);
    st.mean = sum / n;
    st.stddev = std::sqrt(std::max(0.0, sum_sq / n - st.mean * st.mean));
  }
  return st;
}

}  // namespace

int run_info(const ParsedArgs& args) {
  const std::string path = args.positionals[0];
  ContextPtr ctx = make_context(args);
  double read_seconds = 0;
  CooPtr x = read_tensor(ctx.get(), args, path, &read_seconds);
  TensorShape s = shape_of(x.get());

  double norm = 0;
  check(spt_coo_norm(ctx.get(), x.get(), &norm), ctx.get(), "computing the norm");
  spt_nnz distinct = 0;
  check(spt_coo_count_distinct(ctx.get(), x.get(), &distinct), ctx.get(), "counting the distinct coordinates");
  double cells = 1;
  for (spt_index d : s.dims) cells *= static_cast<double>(d);
  unsigned long long bytes = file_size(path);

  std::printf("file       %s\n", printable(path).c_str());
  std::printf("order      %u\n", s.order);
  std::printf("dims       %s\n", dims_text(s.dims, " x ").c_str());
  std::printf("nnz        %llu\n", static_cast<unsigned long long>(s.nnz));
  if (distinct < s.nnz)
    std::printf("repeats    %llu (entries whose coordinate appeared before; summed: %llu distinct)\n",
                static_cast<unsigned long long>(s.nnz - distinct), static_cast<unsigned long long>(distinct));
  std::printf("density    %.3e\n", cells > 0 ? static_cast<double>(distinct) / cells : 0.0);
  // A binary file's stored value type, and the one it was read as when the
  // reader converted it (--dtype, default float64).
  spt_dtype stored = static_cast<spt_dtype>(0);
  check(spt_coo_file_dtype(x.get(), &stored), nullptr, "querying the file's dtype");
  if (stored != 0 && stored != s.dtype)
    std::printf("dtype      %s (stored in the file; read as %s)\n", dtype_name(stored), dtype_name(s.dtype));
  else
    std::printf("dtype      %s\n", dtype_name(s.dtype));
  std::printf("norm       %.10g\n", norm);
  std::printf("file size  %.2f MB\n", static_cast<double>(bytes) / 1e6);
  std::printf("read time  %.3f s\n", read_seconds);
  std::fflush(stdout);

  std::vector<const spt_index*> ind(s.order);
  for (uint32_t m = 0; m < s.order; ++m)
    check(spt_coo_indices(x.get(), m, &ind[m]), ctx.get(), "reading the indices");

  // counts[m]: nonzeros per slice, for every index (direct modes) or for
  // the used indices only (long modes; slice_stats skips zeros either way).
  std::vector<std::vector<uint64_t>> counts(s.order);
  CompactIndices compact;
  compact.label.resize(s.order);
  compact.distinct.resize(s.order);
  compact.used.resize(s.order);
  for (uint32_t m = 0; m < s.order; ++m) {
    if (direct_tables(s.dims[m], s.nnz)) {
      counts[m].assign(s.dims[m], 0);
      for (spt_nnz k = 0; k < s.nnz; ++k) ++counts[m][ind[m][k]];
      compact.label[m].resize(s.dims[m]);
      spt_index next = 0;
      for (spt_index i = 0; i < s.dims[m]; ++i) {
        compact.label[m][i] = next;
        next += counts[m][i] != 0;
      }
      compact.used[m] = next;
    } else {
      std::vector<spt_index> sorted(ind[m], ind[m] + s.nnz);
      std::sort(sorted.begin(), sorted.end());
      std::vector<spt_index>& distinct = compact.distinct[m];
      for (size_t k = 0; k < sorted.size(); ++k) {
        if (k == 0 || sorted[k] != sorted[k - 1]) {
          distinct.push_back(sorted[k]);
          counts[m].push_back(0);
        }
        ++counts[m].back();
      }
      compact.used[m] = distinct.size();
    }
  }

  std::printf("\n%-5s %10s %10s %8s %10s %12s %12s %12s\n", "mode", "dim", "nonempty", "empty", "max/slice",
              "mean/slice", "std/slice", "fibers");
  for (uint32_t m = 0; m < s.order; ++m) {
    SliceStats st = slice_stats(counts[m]);
    uint64_t fibers = count_fibers(ind, s, m, compact);
    std::printf("%-5u %10u %10llu %8llu %10llu %12.2f %12.2f %12llu\n", m + 1, s.dims[m],
                static_cast<unsigned long long>(st.nonempty),
                static_cast<unsigned long long>(s.dims[m] - st.nonempty), static_cast<unsigned long long>(st.max),
                st.mean, st.stddev, static_cast<unsigned long long>(fibers));
  }
  return kExitOk;
}

}  // namespace sptcli
