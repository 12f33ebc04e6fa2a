// Distributed CP-ALS: medium-grained (Smith & Karypis, IPDPS 2016; Li's
// dissertation §8.1.3/§8.1.6) and coarse-grained decompositions over MPI.
//
// Setup (once per call):
//   1. process grid p_0 x ... x p_{N-1} (medium) or P per mode (coarse);
//   2. each mode cut into chunks holding equal numbers of nonzeros (a global
//      slice histogram, MPI_Allreduce): runs of consecutive ids, or (medium,
//      when that shrinks the largest block by 5% or more) runs of ids in a
//      fixed-seed shuffled order, which spreads a dense corner of low ids
//      (power-law tensors) over many blocks;
//   3. nonzeros sent to their block's rank (MPI_Alltoallv): medium = one
//      block per rank, coarse = one copy per mode (slices of that mode);
//   4. every factor row gets one owner: medium = among the ranks of its
//      layer that touch it (fewest owned rows first), coarse = the rank
//      holding its slices; untouched rows are owned too (their initial
//      values enter the first Gram matrices, exactly as in the serial run);
//   5. each rank stores only the rows it touches or owns, in a compact local
//      numbering its block's indices are renumbered to, and builds its
//      send/receive lists for the two exchanges of each mode (row ids
//      swapped once with MPI_Alltoallv; afterwards only values move).
// Each sweep, for each mode n: local MTTKRP with the library's CPU kernels
// (any local format through algo::make_mttkrp_operand); partial rows summed
// at their owners (reduce, medium only); owners solve the normal equations
// (NormalEquations, the serial code) with the Hadamard product of the
// all-reduced Gram matrices; column norms and the new Gram matrix all-reduced
// (norms identical on every rank, so lambda is too); updated rows sent to the
// ranks that use them (expand). The fit uses ||X||^2, <X,M> (all-reduced over
// owned rows of the last mode) and ||M||^2 from the Grams, as cp_als.cpp.
// Arrange and fix-signs run distributed with the same rules as cp_als.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <type_traits>

#include "algo/cp_als.hpp"
#include "algo/dense_steps.hpp"
#include "algo/mttkrp_operands.hpp"
#include "algo/normal_equations.hpp"
#include "algo/summed_norm.hpp"
#include "core/buffer.hpp"
#include "core/random.hpp"
#include "core/subnormals.hpp"
#include "dispatch/device.hpp"
#include "mpi_objects.hpp"
#include "mpi_util.hpp"

namespace spt::mpi {

namespace {

// ---------------------------------------------------------------------------
// Distribution
// ---------------------------------------------------------------------------

// One exchange of factor rows inside a communicator: rows at send_pos go to
// comm ranks by send_counts (in order), rows arriving (by recv_counts) land
// at recv_pos. Never includes messages to oneself.
struct Exchange {
  std::vector<uint64_t> send_counts, recv_counts;  // rows per comm rank
  std::vector<size_t> send_pos, recv_pos;          // local row positions
  std::vector<int> sc, sd, rc, rd;                 // MPI counts/displacements in values (rows x rank)
  uint64_t send_rows() const { return send_pos.size(); }
};

// Everything a rank keeps about one mode.
struct ModeState {
  MPI_Comm comm = MPI_COMM_NULL;   // layer (medium) or all ranks (coarse); owned by Distribution
  std::vector<uint64_t> rows;      // global ids of the rows stored here, ascending
  std::vector<size_t> owned;       // positions (in rows) of the rows this rank owns
  Exchange reduce, expand;
  uint64_t connectivity = 0;       // this rank's share of sum over rows of (users - 1)
};

struct Distribution {
  std::vector<int> grid;                             // p_n
  bool shuffled_chunks = false;                      // medium: chunks of shuffled ids (see distribute)
  spt_nnz largest_block[2] = {0, 0};                 // medium: most nonzeros on a rank, contiguous / shuffled chunks
  std::vector<OwnedComm> layers;                     // medium: per mode; coarse: empty
  std::vector<ModeState> modes;
  std::vector<std::unique_ptr<spt_coo_s>> blocks;    // local blocks, indices renumbered to rows
  std::vector<uint32_t> block_of_mode;               // which block each mode's MTTKRP runs on
  uint64_t setup_bytes = 0;                          // this rank
  spt_nnz local_nnz = 0;                             // this rank (coarse: sum over copies)
};

std::vector<int> prime_factors(int n) {
  std::vector<int> f;
  for (int p = 2; p * p <= n; ++p)
    while (n % p == 0) {
      f.push_back(p);
      n /= p;
    }
  if (n > 1) f.push_back(n);
  return f;  // ascending
}

// The chunk of every id of one mode (a table indexed by id): consecutive
// runs of ids, in increasing order or in a pseudo-random order of the ids
// (`shuffled`, the same on every rank), each holding about total/parts
// nonzeros by whole slices (a slice goes to the chunk its middle falls in);
// chunks may be empty.
std::vector<uint32_t> chunk_table(const std::vector<uint64_t>& slice_nnz, int parts, bool shuffled, uint32_t mode) {
  const size_t n = slice_nnz.size();
  std::vector<uint32_t> walk(n);
  std::iota(walk.begin(), walk.end(), uint32_t(0));
  if (shuffled) {  // Fisher-Yates on raw mt19937_64 draws (standard-defined)
    std::mt19937_64 gen(0x5eed5eedULL + mode);
    for (size_t i = n; i > 1; --i) std::swap(walk[i - 1], walk[gen() % i]);
  }
  const long double total = std::accumulate(slice_nnz.begin(), slice_nnz.end(), 0.0L);
  std::vector<uint32_t> table(n);
  long double prefix = 0;
  int k = 0;
  for (uint32_t id : walk) {
    while (k + 1 < parts && prefix + slice_nnz[id] / 2.0L >= total * (k + 1) / parts) ++k;
    table[id] = static_cast<uint32_t>(k);
    prefix += slice_nnz[id];
  }
  return table;
}

// The ids of chunk `c` of a mode, ascending.
std::vector<uint64_t> chunk_members(const std::vector<uint32_t>& table, int c) {
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i] == static_cast<uint32_t>(c)) ids.push_back(i);
  return ids;
}

// Sends every nonzero of x to dest[k]; returns this rank's received nonzeros
// (grouped by source rank, in rank order). Nonzeros staying on this rank are
// copied, not sent, so a single rank never goes through MPI's int counts.
spt_coo_s redistribute(MPI_Comm comm, const spt_coo_s& x, const buffer<int>& dest, uint64_t& bytes) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const uint32_t order = x.order();
  const size_t vsize = dtype_size(x.dtype());
  const MPI_Datatype vtype = x.dtype() == SPT_FLOAT32 ? MPI_FLOAT : MPI_DOUBLE;
  std::vector<uint64_t> counts(size, 0), recv_counts(size, 0);
  for (spt_nnz k = 0; k < x.nnz; ++k) ++counts[dest[k]];
  check_mpi(MPI_Alltoall(counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, comm), "MPI_Alltoall");
  // The result holds the nonzeros by source rank, each source's in its
  // order; this rank's own go straight there, the others' are packed
  // (indices interleaved) for one all-to-all.
  const uint64_t keep = counts[rank];
  counts[rank] = 0;
  recv_counts[rank] = 0;
  std::vector<uint64_t> out_at(size, 0), send_at(size, 0);
  spt_nnz n = keep;
  for (int j = 0; j < size; ++j) n += recv_counts[j];
  for (int j = 1; j < size; ++j) {
    out_at[j] = out_at[j - 1] + (j - 1 == rank ? keep : recv_counts[j - 1]);
    send_at[j] = send_at[j - 1] + counts[j - 1];
  }
  spt_coo_s out;
  out.init_owned(x.dtype(), x.dims, n);
  char* out_val = static_cast<char*>(out.own_val.data());
  const char* src_val = static_cast<const char*>(x.val);
  const uint64_t outgoing = static_cast<uint64_t>(x.nnz) - keep;
  buffer<spt_index> send_ind(static_cast<size_t>(outgoing) * order);
  buffer<char> send_val(static_cast<size_t>(outgoing) * vsize);
  std::vector<spt_index*> own(order);
  for (uint32_t m = 0; m < order; ++m) own[m] = out.mutable_ind(m) + out_at[rank];
  uint64_t self = 0;
  for (spt_nnz k = 0; k < x.nnz; ++k) {
    const int d = dest[k];
    if (d == rank) {
      for (uint32_t m = 0; m < order; ++m) own[m][self] = x.ind[m][k];
      std::memcpy(out_val + (out_at[rank] + self) * vsize, src_val + k * vsize, vsize);
      ++self;
    } else {
      const uint64_t at = send_at[d]++;
      for (uint32_t m = 0; m < order; ++m) send_ind[at * order + m] = x.ind[m][k];
      std::memcpy(&send_val[at * vsize], src_val + k * vsize, vsize);
    }
  }
  for (int j = 0; j < size; ++j) bytes += counts[j] * (order * sizeof(spt_index) + vsize);
  if (size == 1) return out;
  const uint64_t incoming = static_cast<uint64_t>(n) - keep;
  buffer<spt_index> recv_ind(static_cast<size_t>(incoming) * order);
  // Indices as `order` 32-bit words per nonzero, values as one element each.
  alltoallv_items(comm, send_ind.data(), counts, recv_ind.data(), recv_counts, MPI_UINT32_T, static_cast<int>(order));
  buffer<spt_index>().swap(send_ind);
  for (uint32_t m = 0; m < order; ++m) {
    spt_index* d = out.mutable_ind(m);
    uint64_t from = 0;
    for (int j = 0; j < size; ++j) {
      for (uint64_t k = 0; k < recv_counts[j]; ++k) d[out_at[j] + k] = recv_ind[(from + k) * order + m];
      from += recv_counts[j];
    }
  }
  buffer<spt_index>().swap(recv_ind);
  buffer<char> recv_val(static_cast<size_t>(incoming) * vsize);
  alltoallv_items(comm, send_val.data(), counts, recv_val.data(), recv_counts, vtype, 1);
  uint64_t from = 0;
  for (int j = 0; j < size; ++j) {
    if (recv_counts[j]) std::memcpy(out_val + out_at[j] * vsize, recv_val.data() + from * vsize, recv_counts[j] * vsize);
    from += recv_counts[j];
  }
  return out;
}

// Whether a mode's ids are mapped through a table of one entry per index
// (O(nnz + dim)) instead of a sort or a binary search per nonzero: when the
// mode is at most this many times longer than the nonzeros, plus a floor,
// so the table stays within a few words per nonzero.
bool dense_ids(spt_index dim, spt_nnz nnz) { return uint64_t(dim) <= 8 * uint64_t(nnz) + (uint64_t(1) << 20); }

std::vector<uint64_t> sorted_unique_rows(const spt_coo_s& x, uint32_t m) {
  std::vector<uint64_t> r;
  if (dense_ids(x.dims[m], x.nnz)) {
    std::vector<uint8_t> seen(x.dims[m], 0);
    for (spt_nnz k = 0; k < x.nnz; ++k) seen[x.ind[m][k]] = 1;
    for (spt_index i = 0; i < x.dims[m]; ++i)
      if (seen[i]) r.push_back(i);
    return r;
  }
  r.assign(x.ind[m], x.ind[m] + x.nnz);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

std::vector<uint64_t> merge_unique(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  std::vector<uint64_t> out;
  out.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

size_t position_of(const std::vector<uint64_t>& rows, uint64_t id) {
  auto it = std::lower_bound(rows.begin(), rows.end(), id);
  if (it == rows.end() || *it != id) fail(SPT_ERR_INTERNAL, "distributed CP-ALS: row ", id, " is not stored here");
  return static_cast<size_t>(it - rows.begin());
}

// The positions in `rows` of `ids`, both ascending (ids a subset of rows):
// one merge walk instead of a search per id.
std::vector<size_t> positions_of_sorted(const std::vector<uint64_t>& rows, const std::vector<uint64_t>& ids) {
  std::vector<size_t> out;
  out.reserve(ids.size());
  size_t at = 0;
  for (uint64_t id : ids) {
    while (at < rows.size() && rows[at] < id) ++at;
    if (at == rows.size() || rows[at] != id) fail(SPT_ERR_INTERNAL, "distributed CP-ALS: row ", id, " is not stored here");
    out.push_back(at);
  }
  return out;
}

// Builds an exchange from per-destination row-id lists. kind_reduce: I send
// the listed rows' values to their owners. Otherwise (expand) I receive the
// listed rows from their owners, who learn which rows to send.
Exchange build_exchange(MPI_Comm comm, const std::vector<uint64_t>& rows,
                        const std::vector<std::vector<uint64_t>>& lists, bool kind_reduce, spt_index rank,
                        uint64_t& bytes) {
  int me = 0, size = 1;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  std::vector<uint64_t> counts(size), ids, got_counts;
  for (int j = 0; j < size; ++j) {
    counts[j] = lists[j].size();
    ids.insert(ids.end(), lists[j].begin(), lists[j].end());
    if (j != me) bytes += lists[j].size() * sizeof(uint64_t);
  }
  std::vector<uint64_t> got = alltoallv(comm, ids, counts, got_counts, MPI_UINT64_T);
  Exchange ex;
  std::vector<size_t> mine(ids.size()), theirs(got.size());
  for (size_t k = 0; k < ids.size(); ++k) mine[k] = position_of(rows, ids[k]);
  for (size_t k = 0; k < got.size(); ++k) theirs[k] = position_of(rows, got[k]);
  if (kind_reduce) {
    ex.send_counts = counts;
    ex.send_pos = std::move(mine);
    ex.recv_counts = got_counts;
    ex.recv_pos = std::move(theirs);
  } else {
    ex.send_counts = got_counts;
    ex.send_pos = std::move(theirs);
    ex.recv_counts = counts;
    ex.recv_pos = std::move(mine);
  }
  ex.sc.resize(size);
  ex.sd.resize(size);
  ex.rc.resize(size);
  ex.rd.resize(size);
  uint64_t so = 0, ro = 0;
  for (int j = 0; j < size; ++j) {
    ex.sc[j] = to_int_count(ex.send_counts[j] * rank, "factor exchange");
    ex.sd[j] = to_int_count(so * rank, "factor exchange offset");
    ex.rc[j] = to_int_count(ex.recv_counts[j] * rank, "factor exchange");
    ex.rd[j] = to_int_count(ro * rank, "factor exchange offset");
    so += ex.send_counts[j];
    ro += ex.recv_counts[j];
  }
  return ex;
}

// Medium-grained owners of the rows of one chunk (its ids `members`,
// ascending; owner k is that of members[k]), identical on
// every rank of the layer: each touched row goes to the toucher with the
// fewest owned rows so far (lowest layer rank on ties); untouched rows to
// the least loaded rank. Returns owner layer ranks and adds sum(touchers-1).
std::vector<int> layer_owners(MPI_Comm layer, const std::vector<uint64_t>& touched, const std::vector<uint64_t>& members,
                              uint64_t& connectivity, uint64_t& bytes) {
  int me = 0, q = 1;
  MPI_Comm_rank(layer, &me);
  MPI_Comm_size(layer, &q);
  const int mine = to_int_count(touched.size(), "row list");
  std::vector<int> counts(q), displs(q);
  check_mpi(MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, layer), "MPI_Allgather");
  uint64_t total = 0;
  for (int j = 0; j < q; ++j) {
    displs[j] = to_int_count(total, "row list offset");
    total += static_cast<uint64_t>(counts[j]);
  }
  bytes += touched.size() * sizeof(uint64_t) * static_cast<uint64_t>(q - 1);
  std::vector<uint64_t> all(total);
  check_mpi(MPI_Allgatherv(touched.data(), mine, MPI_UINT64_T, all.data(), counts.data(), displs.data(), MPI_UINT64_T,
                           layer),
            "MPI_Allgatherv");
  std::vector<int> owner(members.size(), -1);
  std::vector<uint64_t> load(q, 0);
  std::vector<size_t> cursor(q);
  for (int j = 0; j < q; ++j) cursor[j] = static_cast<size_t>(displs[j]);
  connectivity = 0;
  for (size_t k = 0; k < members.size(); ++k) {
    const uint64_t i = members[k];
    int best = -1, users = 0;
    for (int j = 0; j < q; ++j) {
      const size_t end = static_cast<size_t>(displs[j]) + static_cast<size_t>(counts[j]);
      if (cursor[j] < end && all[cursor[j]] == i) {
        ++cursor[j];
        ++users;
        if (best < 0 || load[j] < load[best]) best = j;
      }
    }
    if (best < 0) {
      best = 0;
      for (int j = 1; j < q; ++j)
        if (load[j] < load[best]) best = j;
    } else {
      connectivity += static_cast<uint64_t>(users - 1);
    }
    owner[k] = best;
    ++load[best];
  }
  return owner;
}

// Renumber a block's indices to positions in each mode's stored rows.
void renumber(spt_coo_s& block, const std::vector<ModeState>& modes) {
  for (uint32_t m = 0; m < block.order(); ++m) {
    spt_index* ind = block.mutable_ind(m);
    const std::vector<uint64_t>& rows = modes[m].rows;
    if (dense_ids(block.dims[m], block.nnz)) {
      // rows are ids below dims[m], so positions fit below the marker.
      constexpr spt_index kNotStored = std::numeric_limits<spt_index>::max();
      std::vector<spt_index> position(block.dims[m], kNotStored);
      for (size_t p = 0; p < rows.size(); ++p) position[rows[p]] = static_cast<spt_index>(p);
      for (spt_nnz k = 0; k < block.nnz; ++k) {
        const spt_index p = position[ind[k]];
        if (p == kNotStored) fail(SPT_ERR_INTERNAL, "distributed CP-ALS: row ", ind[k], " is not stored here");
        ind[k] = p;
      }
    } else {
      for (spt_nnz k = 0; k < block.nnz; ++k) ind[k] = static_cast<spt_index>(position_of(rows, ind[k]));
    }
    block.dims[m] = static_cast<spt_index>(std::max<size_t>(rows.size(), 1));
  }
  block.touched();
}

Distribution distribute(MPI_Comm comm, const spt_mpi_tensor_s& x, const spt_mpi_cpd_options& opts) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const spt_coo_s& local = x.local;
  const uint32_t order = local.order();
  const std::vector<spt_index>& dims = local.dims;
  const bool medium = opts.decomposition == SPT_MPI_MEDIUM_GRAINED;
  Distribution d;
  d.modes.resize(order);

  // 1. grid
  if (medium) {
    if (opts.grid) {
      d.grid.assign(opts.grid, opts.grid + order);
    } else {
      d.grid = choose_grid(size, dims);
    }
  } else {
    d.grid.assign(order, size);
  }

  // 2. chunks balanced by nonzeros: one mode's slice histogram at a time,
  // turned into its chunk tables (and, for the medium-grained split on
  // several ranks, the shuffled ones) before the next is counted.
  const bool try_shuffled = medium && size > 1;
  std::vector<std::vector<uint32_t>> chunk(order), shuffled(try_shuffled ? order : 0);
  for (uint32_t m = 0; m < order; ++m) {
    std::vector<uint64_t> slices(dims[m], 0);
    for (spt_nnz k = 0; k < local.nnz; ++k) ++slices[local.ind[m][k]];
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, slices.data(), to_int_count(dims[m], "slice histogram"), MPI_UINT64_T,
                            MPI_SUM, comm),
              "MPI_Allreduce");
    chunk[m] = chunk_table(slices, d.grid[m], false, m);
    if (try_shuffled) shuffled[m] = chunk_table(slices, d.grid[m], true, m);
  }

  // 3. blocks
  std::vector<int> coords(order, 0), stride(order, 1);
  if (medium) {
    for (int m = static_cast<int>(order) - 2; m >= 0; --m) stride[m] = stride[m + 1] * d.grid[m + 1];
    for (uint32_t m = 0; m < order; ++m) coords[m] = (rank / stride[m]) % d.grid[m];
    // Chunks of contiguous ids balance each mode's layers but not the
    // blocks where they cross: where ids follow frequency (word ids by
    // rank, say), the first chunks of every mode meet in one dense block.
    // Chunks of shuffled ids spread such slices over the blocks; they are
    // taken when their largest block is at least 5% smaller.
    auto destinations = [&](const std::vector<std::vector<uint32_t>>& t, spt_nnz& largest) {
      buffer<int> dest(local.nnz);  // every entry written below
      std::vector<uint64_t> cells(size, 0);
      for (spt_nnz k = 0; k < local.nnz; ++k) {
        int r = 0;
        for (uint32_t m = 0; m < order; ++m) r += static_cast<int>(t[m][local.ind[m][k]]) * stride[m];
        dest[k] = r;
        ++cells[r];
      }
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, cells.data(), size, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
      largest = static_cast<spt_nnz>(*std::max_element(cells.begin(), cells.end()));
      return dest;
    };
    buffer<int> dest = destinations(chunk, d.largest_block[0]);
    if (try_shuffled) {
      buffer<int> shuffled_dest = destinations(shuffled, d.largest_block[1]);
      if (20 * d.largest_block[1] < 19 * d.largest_block[0]) {
        d.shuffled_chunks = true;
        chunk = std::move(shuffled);
        dest = std::move(shuffled_dest);
      }
      shuffled = {};
    }
    d.blocks.push_back(std::make_unique<spt_coo_s>(redistribute(comm, local, dest, d.setup_bytes)));
    d.block_of_mode.assign(order, 0);
  } else {
    for (uint32_t n = 0; n < order; ++n) {
      buffer<int> dest(local.nnz);  // every entry written below
      for (spt_nnz k = 0; k < local.nnz; ++k) dest[k] = static_cast<int>(chunk[n][local.ind[n][k]]);
      d.blocks.push_back(std::make_unique<spt_coo_s>(redistribute(comm, local, dest, d.setup_bytes)));
      d.block_of_mode.push_back(n);
    }
  }
  for (const auto& b : d.blocks) d.local_nnz += b->nnz;

  // 4-5. owners, stored rows, exchanges
  const spt_index R = opts.rank;
  if (medium) {
    const spt_coo_s& block = *d.blocks[0];
    for (uint32_t n = 0; n < order; ++n) {
      MPI_Comm layer_comm = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(comm, coords[n], rank, &layer_comm), "MPI_Comm_split");
      d.layers.push_back(OwnedComm::adopt(layer_comm));
      ModeState& ms = d.modes[n];
      ms.comm = layer_comm;
      int me = 0, q = 1;
      MPI_Comm_rank(layer_comm, &me);
      MPI_Comm_size(layer_comm, &q);
      const std::vector<uint64_t> members = chunk_members(chunk[n], coords[n]);
      std::vector<uint64_t> touched = sorted_unique_rows(block, n);
      uint64_t conn = 0;
      std::vector<int> owner = layer_owners(layer_comm, touched, members, conn, d.setup_bytes);
      ms.connectivity = me == 0 ? conn : 0;  // counted once per layer
      std::vector<uint64_t> owned_ids;
      for (size_t k = 0; k < members.size(); ++k)
        if (owner[k] == me) owned_ids.push_back(members[k]);
      ms.rows = merge_unique(touched, owned_ids);
      ms.owned = positions_of_sorted(ms.rows, owned_ids);
      std::vector<std::vector<uint64_t>> lists(q);
      for (uint64_t id : touched) {
        const int o = owner[position_of(members, id)];
        if (o != me) lists[o].push_back(id);
      }
      ms.reduce = build_exchange(layer_comm, ms.rows, lists, true, R, d.setup_bytes);
      ms.expand = build_exchange(layer_comm, ms.rows, lists, false, R, d.setup_bytes);
    }
  } else {
    for (uint32_t n = 0; n < order; ++n) {
      ModeState& ms = d.modes[n];
      ms.comm = comm;
      std::vector<uint64_t> used;  // rows of mode n read by the other modes' copies
      for (uint32_t c = 0; c < order; ++c)
        if (c != n) used = merge_unique(used, sorted_unique_rows(*d.blocks[c], n));
      const std::vector<uint64_t> owned_ids = chunk_members(chunk[n], rank);
      ms.rows = merge_unique(used, owned_ids);
      ms.owned = positions_of_sorted(ms.rows, owned_ids);
      std::vector<std::vector<uint64_t>> lists(size);
      for (uint64_t id : used) {
        const int o = static_cast<int>(chunk[n][id]);
        if (o != rank) lists[o].push_back(id);
      }
      ms.reduce = build_exchange(comm, ms.rows, std::vector<std::vector<uint64_t>>(size), true, R, d.setup_bytes);
      ms.expand = build_exchange(comm, ms.rows, lists, false, R, d.setup_bytes);
      ms.connectivity = ms.expand.recv_pos.size();  // rows this rank needs from others = its share of (users - 1)
    }
  }
  for (auto& b : d.blocks) renumber(*b, d.modes);
  return d;
}

// ---------------------------------------------------------------------------
// The sweeps
// ---------------------------------------------------------------------------

// Stand-in operand for a rank without nonzeros: every MTTKRP row is zero.
template <typename T>
class EmptyOperand final : public algo::MttkrpOperand<T> {
 public:
  void mttkrp(spt_context_s&, const ConstMatRef<T>*, uint32_t, MatRef<T> out) override {
    for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + out.cols, T(0));
  }
  const char* name() const override { return "empty"; }
};

template <typename T>
uint64_t run_exchange(MPI_Comm comm, const Exchange& ex, MatRef<T> data, bool accumulate, std::vector<T>& sendbuf,
                      std::vector<T>& recvbuf) {
  const spt_nnz R = data.cols;
  sendbuf.resize(ex.send_pos.size() * R);
  recvbuf.resize(ex.recv_pos.size() * R);
  for (size_t k = 0; k < ex.send_pos.size(); ++k) std::memcpy(&sendbuf[k * R], data.row(ex.send_pos[k]), sizeof(T) * R);
  check_mpi(MPI_Alltoallv(sendbuf.data(), ex.sc.data(), ex.sd.data(), mpi_type<T>(), recvbuf.data(), ex.rc.data(),
                          ex.rd.data(), mpi_type<T>(), comm),
            "MPI_Alltoallv");
  for (size_t k = 0; k < ex.recv_pos.size(); ++k) {
    T* dst = data.row(ex.recv_pos[k]);
    const T* src = &recvbuf[k * R];
    if (accumulate)
      for (spt_nnz r = 0; r < R; ++r) dst[r] += src[r];
    else
      std::memcpy(dst, src, sizeof(T) * R);
  }
  return static_cast<uint64_t>(sendbuf.size() * sizeof(T));
}

template <typename T>
void allreduce_sum(MPI_Comm comm, T* data, size_t n) {
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, to_int_count(n, "allreduce"), mpi_type<T>(), MPI_SUM, comm),
            "MPI_Allreduce");
}

// Fix-signs reduction: the entry of largest magnitude (lowest global row on
// ties) with its signed value, as (|v|, row, v).
void max_entry_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const double* a = static_cast<const double*>(in);
  double* b = static_cast<double*>(inout);
  for (int k = 0; k < *len; ++k, a += 3, b += 3)
    if (a[0] > b[0] || (a[0] == b[0] && a[1] < b[1])) std::memcpy(b, a, 3 * sizeof(double));
}

template <typename T>
spt_status run_cpd(MPI_Comm comm, spt_context_s& ctx, const spt_mpi_tensor_s& x, const spt_mpi_cpd_options& opts,
                   const spt_cpd_options& cpd, spt_mpi_ktensor_s& out) {
  using Clock = std::chrono::steady_clock;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const uint32_t order = x.local.order();
  const std::vector<spt_index>& dims = x.local.dims;
  const spt_index R = cpd.rank;
  const spt_nnz RR = static_cast<spt_nnz>(R) * R;
  // float32: subnormals flushed on this rank's threads for the run.
  std::optional<ScopedFlushSubnormals> flush_subnormals;
  if constexpr (std::is_same_v<T, float>) flush_subnormals.emplace(thread_count(ctx));

  double norm_x_squared = 0.0;
  const Clock::time_point setup_start = Clock::now();
  Distribution d;
  std::vector<std::unique_ptr<algo::MttkrpOperand<T>>> operands;
  std::vector<DenseMatrix<T>> factors(order);
  collective(comm, [&] { d = distribute(comm, x, opts); });
  collective(comm, [&] {
    for (const auto& b : d.blocks) {
      if (b->nnz == 0) operands.push_back(std::make_unique<EmptyOperand<T>>());
      else operands.push_back(algo::make_distributed_mttkrp_operand<T>(ctx, *b, cpd));
    }
  });
  // The norm of the tensor the kernels see: repeated coordinates summed.
  // Block 0 holds every nonzero once, and all entries of one coordinate on
  // the same rank (one grid cell, or one chunk of mode 0), so the local
  // sums add up to the global norm.
  // From block 0's CSF tree when its operand has one (a pass over it), else
  // from the block (a sort of its nonzeros).
  double distinct = 0.0;
  collective(comm, [&] {
    const std::optional<SummedStats> from_operand = operands[0]->summed_stats(Exec{thread_count(ctx)});
    const SummedStats stats = from_operand ? *from_operand : algo::summed_stats(ctx, *d.blocks[0]);
    norm_x_squared = stats.norm_squared;
    distinct = static_cast<double>(stats.distinct);
  });
  double sums[2] = {norm_x_squared, distinct};
  allreduce_sum(comm, sums, 2);
  norm_x_squared = sums[0];
  collective(comm, [&] {
    if (!std::isfinite(norm_x_squared))
      fail(SPT_ERR_INVALID_ARGUMENT, "the tensor's norm is not finite (NaN/Inf values, or values too large); "
                                     "clean the values before CP-ALS");
    require(norm_x_squared > 0.0, "the tensor's nonzeros are all zero (norm 0); CP-ALS needs a nonzero tensor");
  });
  if (rank == 0) algo::note_repeats(ctx, "MPI CP-ALS", x.global_nnz, static_cast<spt_nnz>(sums[1]));
  if (rank == 0 && size > 1 && opts.decomposition == SPT_MPI_MEDIUM_GRAINED)
    log(ctx, 1,
        cat("MPI CP-ALS: mode chunks of ", d.shuffled_chunks ? "shuffled" : "contiguous",
            " ids; most nonzeros on a rank ", d.largest_block[0], " with contiguous chunks, ", d.largest_block[1],
            " with shuffled ones (of ", x.global_nnz, ")"));
  collective(comm, [&] {
    // Initial factors: the rows this rank stores, from the same source as
    // the serial run (the seeded stream position of each row, or the
    // caller's full matrices).
    const uint64_t seed = cpd.seed != 0 ? cpd.seed : ctx.seed;
    std::mt19937_64 gen(seed);
    uint64_t position = 0, mode_offset = 0;
    for (uint32_t m = 0; m < order; ++m) {
      const std::vector<uint64_t>& rows = d.modes[m].rows;
      factors[m] = DenseMatrix<T>(rows.size(), R);
      for (size_t p = 0; p < rows.size(); ++p) {
        if (cpd.init == SPT_CPD_INIT_USER) {
          for (spt_index r = 0; r < R; ++r) factors[m](p, r) = cpd.init_factors[m]->at<T>(rows[p], r);
          continue;
        }
        const uint64_t target = mode_offset + rows[p] * R;
        gen.discard(target - position);
        for (spt_index r = 0; r < R; ++r) factors[m](p, r) = unit_uniform<T>(gen);
        position = target + R;
      }
      mode_offset += static_cast<uint64_t>(dims[m]) * R;
    }
  });
  const double setup_seconds_local = std::chrono::duration<double>(Clock::now() - setup_start).count();

  std::vector<MatRef<T>> F(order);
  std::vector<ConstMatRef<T>> CF(order);
  size_t max_rows = 1, max_owned = 1;
  for (uint32_t m = 0; m < order; ++m) {
    F[m] = factors[m].ref();
    CF[m] = factors[m].cref();
    max_rows = std::max(max_rows, d.modes[m].rows.size());
    max_owned = std::max(max_owned, d.modes[m].owned.size());
  }
  // Every buffer of the sweeps and of the final arrange / sign fix is
  // allocated here, in one collective step: an allocation that fails on one
  // rank fails on all of them, instead of leaving the others in a later
  // collective.
  DenseMatrix<T> mttkrp_out, owned_rows, last_b, hadamard;
  std::vector<DenseMatrix<T>> grams;
  std::unique_ptr<NormalEquations<T>> solver;
  std::vector<double> norms, dots, column_squares, best_entries;
  std::vector<T> lambda, sendbuf, recvbuf, divisors, permuted;
  std::vector<spt_index> perm;
  std::vector<uint32_t> negative_modes;
  collective(comm, [&] {
    mttkrp_out = DenseMatrix<T>(max_rows, R);
    owned_rows = DenseMatrix<T>(max_owned, R);
    last_b = DenseMatrix<T>(max_owned, R);
    hadamard = DenseMatrix<T>(R, R);
    grams.assign(order, DenseMatrix<T>(R, R));
    solver = std::make_unique<NormalEquations<T>>(R);
    norms.assign(R, 0.0);
    dots.assign(R, 0.0);
    column_squares.assign(R, 0.0);
    best_entries.assign(static_cast<size_t>(R) * order * 3, 0.0);
    lambda.assign(R, T(1));
    divisors.assign(R, T(0));
    permuted.assign(R, T(0));
    perm.assign(R, 0);
    negative_modes.reserve(order);
  });
  NormalEquations<T>& normal_equations = *solver;

  auto owned_ref = [&](uint32_t m) { return MatRef<T>{owned_rows.values.data(), d.modes[m].owned.size(), R, R}; };
  auto gather_owned = [&](uint32_t m) {
    MatRef<T> o = owned_ref(m);
    for (size_t k = 0; k < d.modes[m].owned.size(); ++k)
      std::memcpy(o.row(k), F[m].row(d.modes[m].owned[k]), sizeof(T) * R);
    return o;
  };
  auto owned_gram = [&](uint32_t m, MatRef<T> o) {
    if (o.rows) {
      algo::gram(ctx, ConstMatRef<T>{o.data, o.rows, o.cols, o.ld}, grams[m].ref());
    } else {
      std::fill(grams[m].values.begin(), grams[m].values.end(), T(0));
    }
    allreduce_sum(comm, grams[m].values.data(), RR);
  };
  for (uint32_t m = 0; m < order; ++m) owned_gram(m, gather_owned(m));

  // Per-sweep traffic of this rank (fixed by the plans) and the model.
  uint64_t plan_reduce = 0, plan_expand = 0, connectivity = 0;
  for (const ModeState& ms : d.modes) {
    plan_reduce += ms.reduce.send_rows() * R * sizeof(T);
    plan_expand += ms.expand.send_rows() * R * sizeof(T);
    connectivity += ms.connectivity;
  }
  const double allreduce_payload =
      static_cast<double>(order) * (static_cast<double>(RR) * sizeof(T) + R * sizeof(double)) + 3 * sizeof(double) +
      sizeof(double) + sizeof(int);
  const double allreduce_bytes = 2.0 * allreduce_payload * (size - 1);

  const double norm_x = std::sqrt(norm_x_squared);
  double time_mttkrp = 0.0, time_exchange = 0.0, time_allreduce = 0.0, time_other = 0.0;
  double fit = 0.0, total_seconds = 0.0, total_bytes = 0.0, total_reduce = 0.0, total_expand = 0.0;
  bool converged = false, stopped = false;
  int iteration = 0;
  out.local.fit_history.clear();
  out.local.seconds_history.clear();
  // Local steps that may fail on some ranks only (the local MTTKRP, the
  // solve, the callback bookkeeping) run through `local`; it is agreed on
  // before the next collective, so a failure reaches every rank as the
  // same error and none is left waiting.
  LocalOutcome local(comm);
  while (iteration < cpd.max_iters && !converged && !stopped) {
    const Clock::time_point start = Clock::now();
    uint64_t sent_reduce = 0, sent_expand = 0;
    Clock::time_point mark = start;
    auto lap = [&](double& total) {
      const Clock::time_point t = Clock::now();
      total += std::chrono::duration<double>(t - mark).count();
      mark = t;
    };
    for (uint32_t n = 0; n < order; ++n) {
      ModeState& ms = d.modes[n];
      MatRef<T> b{mttkrp_out.values.data(), ms.rows.size(), R, R};
      lap(time_other);
      local.run([&] { operands[d.block_of_mode[n]]->mttkrp(ctx, CF.data(), n, b); });
      lap(time_mttkrp);
      sent_reduce += run_exchange<T>(ms.comm, ms.reduce, b, true, sendbuf, recvbuf);
      lap(time_exchange);

      MatRef<T> o = owned_ref(n);
      for (size_t k = 0; k < ms.owned.size(); ++k) std::memcpy(o.row(k), b.row(ms.owned[k]), sizeof(T) * R);
      if (n == order - 1) std::memcpy(last_b.values.data(), o.data, sizeof(T) * o.rows * R);

      for (spt_nnz i = 0; i < RR; ++i) hadamard.values[i] = T(1);
      for (uint32_t m = 0; m < order; ++m)
        if (m != n)
          for (spt_nnz i = 0; i < RR; ++i) hadamard.values[i] *= grams[m].values[i];
      for (spt_nnz i = 0; i < RR; ++i)
        if (!std::isfinite(hadamard.values[i]))
          fail(SPT_ERR_NUMERICAL, "the normal-equation matrix for mode ", n, " became non-finite in iteration ",
               iteration + 1, " (factor Gram matrices overflow ", dtype_name(dtype_of<T>()),
               "); rescale the tensor or the initial factors");
      local.run([&] {
        if (!o.rows) return;
        try {
          normal_equations.solve(ctx, hadamard.cref(), o);
        } catch (const Error& e) {
          if (e.code() != SPT_ERR_NUMERICAL) throw;
          fail(SPT_ERR_NUMERICAL, "mode ", n, ", iteration ", iteration + 1, ": ", e.what());
        }
      });

      // Column norms over all owners: 2-norm in the first sweep, max after.
      std::fill(norms.begin(), norms.end(), 0.0);
      for (spt_nnz i = 0; i < o.rows; ++i)
        for (spt_index r = 0; r < R; ++r) {
          const double v = static_cast<double>(o(i, r));
          if (iteration == 0) norms[r] += v * v;
          else norms[r] = std::isfinite(v) ? std::max(norms[r], std::abs(v)) : HUGE_VAL;  // inf survives MPI_MAX
        }
      lap(time_other);
      local.agree(comm);
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, norms.data(), static_cast<int>(R), MPI_DOUBLE,
                              iteration == 0 ? MPI_SUM : MPI_MAX, comm),
                "MPI_Allreduce");
      lap(time_allreduce);
      for (spt_index r = 0; r < R; ++r) {
        const double nr = iteration == 0 ? std::sqrt(norms[r]) : norms[r];
        if (!std::isfinite(nr))
          fail(SPT_ERR_NUMERICAL, "non-finite values appeared in the factor of mode ", n, " (component ", r,
               ") in iteration ", iteration + 1, "; the problem may be badly scaled or the rank too high");
        const T norm = static_cast<T>(nr);
        lambda[r] = iteration == 0 ? norm : std::max(norm, T(1));
      }
      local.run([&] {
        if (o.rows) algo::divide_columns(ctx, o, lambda.data());
        for (size_t k = 0; k < ms.owned.size(); ++k) std::memcpy(F[n].row(ms.owned[k]), o.row(k), sizeof(T) * R);
        if (o.rows) algo::gram(ctx, ConstMatRef<T>{o.data, o.rows, o.cols, o.ld}, grams[n].ref());
        else std::fill(grams[n].values.begin(), grams[n].values.end(), T(0));
      });
      lap(time_other);
      local.agree(comm);
      allreduce_sum(comm, grams[n].values.data(), RR);
      lap(time_allreduce);
      sent_expand += run_exchange<T>(ms.comm, ms.expand, F[n], false, sendbuf, recvbuf);
      lap(time_exchange);
    }

    // <X, M> over the owned rows of the last mode, plus this sweep's bytes.
    const ModeState& last = d.modes[order - 1];
    std::fill(dots.begin(), dots.end(), 0.0);
    for (size_t k = 0; k < last.owned.size(); ++k) {
      const T* u = F[order - 1].row(last.owned[k]);
      const T* bb = &last_b.values[k * R];
      for (spt_index r = 0; r < R; ++r) dots[r] += static_cast<double>(u[r]) * static_cast<double>(bb[r]);
    }
    double sums[3] = {0.0, static_cast<double>(sent_reduce), static_cast<double>(sent_expand)};
    for (spt_index r = 0; r < R; ++r) sums[0] += dots[r] * static_cast<double>(lambda[r]);
    lap(time_other);
    allreduce_sum(comm, sums, 3);
    lap(time_allreduce);
    double norm_p_squared = 0.0;
    for (spt_index r = 0; r < R; ++r)
      for (spt_index s = 0; s < R; ++s) {
        double v = static_cast<double>(lambda[r]) * static_cast<double>(lambda[s]);
        for (const DenseMatrix<T>& g : grams) v *= static_cast<double>(g(r, s));
        norm_p_squared += v;
      }
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");

    const double fit_old = fit;
    fit = 1.0 - std::sqrt(std::abs(norm_x_squared + norm_p_squared - 2.0 * sums[0])) / norm_x;
    if (!std::isfinite(fit))
      fail(SPT_ERR_NUMERICAL, "the fit became non-finite in iteration ", iteration + 1,
           "; the problem may be badly scaled or the rank too high");
    const double delta = std::abs(fit_old - fit);
    ++iteration;
    converged = iteration > 1 && delta < cpd.tol;
    const double sweep_bytes = sums[1] + sums[2] + allreduce_bytes;
    total_seconds += seconds;
    total_bytes += sweep_bytes;
    total_reduce += sums[1];
    total_expand += sums[2];
    int stop = 0;
    local.run([&] {
      out.local.fit_history.push_back(fit);
      out.local.seconds_history.push_back(seconds);
      log(ctx, 2, cat("MPI CP-ALS iteration ", iteration, ": fit ", fit, ", change ", delta, ", ", seconds, " s, ",
                      sweep_bytes, " bytes"));
      progress(ctx, "cpd", static_cast<double>(iteration) / cpd.max_iters);
      if (opts.callback) {
        spt_mpi_iteration_info info{iteration, fit, delta, seconds, sweep_bytes, sums[1], sums[2], allreduce_bytes};
        stop = opts.callback(opts.callback_data, &info) != 0 ? 1 : 0;
      }
    });
    local.agree(comm);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &stop, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
    if (stop && !converged) stopped = true;
  }

  // ---- arrange: unit 2-norm columns into lambda, lambda >= 0, sorted ------
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> o = gather_owned(m);
    std::vector<double>& sq = column_squares;
    std::fill(sq.begin(), sq.end(), 0.0);
    for (spt_nnz i = 0; i < o.rows; ++i)
      for (spt_index r = 0; r < R; ++r) sq[r] += static_cast<double>(o(i, r)) * static_cast<double>(o(i, r));
    allreduce_sum(comm, sq.data(), R);
    for (spt_index r = 0; r < R; ++r) {
      divisors[r] = static_cast<T>(std::sqrt(sq[r]));
      lambda[r] *= divisors[r];
    }
    if (o.rows) algo::divide_columns(ctx, o, divisors.data());
    for (size_t k = 0; k < d.modes[m].owned.size(); ++k)
      std::memcpy(F[m].row(d.modes[m].owned[k]), o.row(k), sizeof(T) * R);
  }
  for (spt_index r = 0; r < R; ++r)
    if (lambda[r] < T(0)) {
      lambda[r] = -lambda[r];
      for (size_t p : d.modes[0].owned) F[0](p, r) = -F[0](p, r);
    }
  std::iota(perm.begin(), perm.end(), spt_index(0));
  std::stable_sort(perm.begin(), perm.end(), [&](spt_index a, spt_index b) { return lambda[a] > lambda[b]; });
  {
    std::vector<T>& tmp = permuted;
    for (spt_index r = 0; r < R; ++r) tmp[r] = lambda[perm[r]];
    std::copy(tmp.begin(), tmp.end(), lambda.begin());
    for (uint32_t m = 0; m < order; ++m)
      for (size_t p : d.modes[m].owned) {
        T* row = F[m].row(p);
        for (spt_index r = 0; r < R; ++r) tmp[r] = row[perm[r]];
        std::copy(tmp.begin(), tmp.end(), row);
      }
  }

  // ---- fix signs (pyttb ktensor.fixsigns, as cp_als.cpp) -----------------
  {
    std::vector<double>& best = best_entries;
    for (spt_index r = 0; r < R; ++r)
      for (uint32_t m = 0; m < order; ++m) {
        double* e = &best[(static_cast<size_t>(r) * order + m) * 3];
        e[0] = 0.0;
        e[1] = std::numeric_limits<double>::infinity();
        e[2] = 0.0;
        const ModeState& ms = d.modes[m];
        for (size_t p : ms.owned) {
          const double v = static_cast<double>(F[m](p, r));
          if (std::abs(v) > e[0]) {
            e[0] = std::abs(v);
            e[1] = static_cast<double>(ms.rows[p]);
            e[2] = v;
          }
        }
      }
    MPI_Datatype triple;
    MPI_Op op;
    check_mpi(MPI_Type_contiguous(3, MPI_DOUBLE, &triple), "MPI_Type_contiguous");
    MPI_Type_commit(&triple);
    MPI_Op_create(&max_entry_op, 1, &op);
    const int rc = MPI_Allreduce(MPI_IN_PLACE, best.data(), static_cast<int>(R * order), triple, op, comm);
    MPI_Op_free(&op);
    MPI_Type_free(&triple);
    check_mpi(rc, "MPI_Allreduce");
    for (spt_index r = 0; r < R; ++r) {
      negative_modes.clear();
      for (uint32_t m = 0; m < order; ++m)
        if (best[(static_cast<size_t>(r) * order + m) * 3 + 2] < 0.0) negative_modes.push_back(m);
      const size_t flips = negative_modes.size() / 2 * 2;
      for (size_t f = 0; f < flips; ++f)
        for (size_t p : d.modes[negative_modes[f]].owned) F[negative_modes[f]](p, r) = -F[negative_modes[f]](p, r);
    }
  }

  // ---- the result ----------------------------------------------------------
  std::vector<spt_index> owned_counts(order);
  for (uint32_t m = 0; m < order; ++m) owned_counts[m] = static_cast<spt_index>(d.modes[m].owned.size());
  std::vector<double> fits = std::move(out.local.fit_history), secs = std::move(out.local.seconds_history);
  init_ktensor(out.local, dtype_of<T>(), owned_counts, R);
  std::copy(lambda.begin(), lambda.end(), out.local.lambda.ptr<T>());
  out.rows.assign(order, {});
  for (uint32_t m = 0; m < order; ++m) {
    MatRef<T> dst = out.local.factor<T>(m);
    for (size_t k = 0; k < d.modes[m].owned.size(); ++k) {
      std::memcpy(dst.row(k), F[m].row(d.modes[m].owned[k]), sizeof(T) * R);
      out.rows[m].push_back(d.modes[m].rows[d.modes[m].owned[k]]);
    }
  }
  out.local.fit = fit;
  out.local.iterations = iteration;
  out.local.converged = converged ? 1 : 0;
  out.local.fit_history = std::move(fits);
  out.local.seconds_history = std::move(secs);
  out.global_dims = dims;

  // ---- counters ------------------------------------------------------------
  spt_mpi_cpd_stats& st = out.stats;
  st = spt_mpi_cpd_stats{};
  st.struct_size = sizeof(st);
  st.ranks = size;
  st.order = order;
  for (uint32_t m = 0; m < order; ++m) st.grid[m] = d.grid[m];
  // nonzeros per rank: medium = the block; coarse = each mode's copy
  spt_nnz lo = std::numeric_limits<spt_nnz>::max(), hi = 0;
  double mean = static_cast<double>(x.global_nnz) / size;
  for (const auto& b : d.blocks) {
    spt_nnz bmin = 0, bmax = 0, mine = b->nnz;
    check_mpi(MPI_Allreduce(&mine, &bmin, 1, MPI_UINT64_T, MPI_MIN, comm), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(&mine, &bmax, 1, MPI_UINT64_T, MPI_MAX, comm), "MPI_Allreduce");
    lo = std::min(lo, bmin);
    hi = std::max(hi, bmax);
  }
  st.nnz_min = lo;
  st.nnz_max = hi;
  st.nnz_imbalance = mean > 0 ? static_cast<double>(hi) / mean : 1.0;
  const double iters = std::max(iteration, 1);
  st.bytes_per_iteration = total_bytes / iters;
  st.bytes_reduce_per_iteration = total_reduce / iters;
  st.bytes_expand_per_iteration = total_expand / iters;
  st.bytes_allreduce_per_iteration = allreduce_bytes;
  double rank_bytes = static_cast<double>(plan_reduce + plan_expand), max_rank_bytes = 0.0;
  check_mpi(MPI_Allreduce(&rank_bytes, &max_rank_bytes, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  st.max_rank_bytes_per_iteration = max_rank_bytes;
  uint64_t conn_total = 0;
  check_mpi(MPI_Allreduce(&connectivity, &conn_total, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  const bool medium = opts.decomposition == SPT_MPI_MEDIUM_GRAINED;
  st.model_bytes_per_iteration = static_cast<double>(conn_total) * (medium ? 2.0 : 1.0) * R * sizeof(T);
  double bound = 0.0;
  for (uint32_t m = 0; m < order; ++m)
    bound += medium ? 2.0 * dims[m] * (static_cast<double>(size) / d.grid[m] - 1.0) * R * sizeof(T)
                    : static_cast<double>(dims[m]) * (size - 1) * R * sizeof(T);
  st.dense_bound_bytes_per_iteration = bound;
  uint64_t setup_total = 0;
  check_mpi(MPI_Allreduce(&d.setup_bytes, &setup_total, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  st.setup_bytes = setup_total;
  double setup_max = setup_seconds_local;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &setup_max, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  st.setup_seconds = setup_max;
  st.seconds_per_iteration = total_seconds / iters;
  double phase[3] = {time_mttkrp / iters, time_exchange / iters, time_allreduce / iters};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, phase, 3, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  st.mttkrp_seconds_per_iteration = phase[0];
  st.exchange_seconds_per_iteration = phase[1];
  st.allreduce_seconds_per_iteration = phase[2];
  st.local_nnz = d.local_nnz;
  spt_nnz stored = 0;
  for (const ModeState& ms : d.modes) stored += ms.rows.size();
  st.local_factor_rows = stored;

  log(ctx, 1,
      cat("MPI CP-ALS (", medium ? "medium" : "coarse", "-grained, ", size, " ranks, ", operands[0]->name(),
          ") rank ", R, ": fit ", fit, " after ", iteration, " iterations (",
          converged ? "converged" : (stopped ? "stopped by the callback" : "iteration limit reached"), ")"));
  return converged ? SPT_OK : SPT_WARN_NOT_CONVERGED;
}

// This rank's number among the ranks of comm on its host (shared memory).
int host_local_rank(MPI_Comm comm) {
  int rank = 0, local = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm host = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host), "MPI_Comm_split_type");
  MPI_Comm_rank(host, &local);
  MPI_Comm_free(&host);
  return local;
}

}  // namespace

std::vector<int> choose_grid(int ranks, const std::vector<spt_index>& dims) {
  const size_t order = dims.size();
  std::vector<int> grid(order, 1);
  uint64_t total = 0;
  for (spt_index d : dims) total += d;
  const uint64_t target = total / static_cast<uint64_t>(std::max(ranks, 1));
  std::vector<int> primes = prime_factors(ranks);
  for (auto it = primes.rbegin(); it != primes.rend(); ++it) {
    size_t furthest = 0;
    uint64_t furthest_diff = 0;
    for (size_t m = 0; m < order; ++m) {
      const uint64_t curr = dims[m] / static_cast<uint64_t>(grid[m]);
      const uint64_t diff = curr > target ? curr - target : 0;
      if (diff > furthest_diff) {
        furthest_diff = diff;
        furthest = m;
      }
    }
    grid[furthest] *= *it;
  }
  return grid;
}

spt_status cpd_als(MPI_Comm comm, spt_context_s& ctx, const spt_mpi_tensor_s& x, const spt_mpi_cpd_options& opts,
                   spt_mpi_ktensor_s& out) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  spt_cpd_options cpd{};
  spt_cpd_options_init(&cpd);
  collective(comm, [&] {
    const uint32_t order = x.local.order();
    require(order <= SPT_MPI_MAX_ORDER, "order ", order, " exceeds SPT_MPI_MAX_ORDER (", SPT_MPI_MAX_ORDER, ")");
    require(opts.decomposition == SPT_MPI_MEDIUM_GRAINED || opts.decomposition == SPT_MPI_COARSE_GRAINED,
            "opts.decomposition must be SPT_MPI_MEDIUM_GRAINED or SPT_MPI_COARSE_GRAINED, got ",
            static_cast<int>(opts.decomposition));
    cpd.rank = opts.rank;
    cpd.max_iters = opts.max_iters;
    cpd.tol = opts.tol;
    cpd.init = opts.init;
    cpd.seed = opts.seed;
    cpd.init_factors = opts.init_factors;
    cpd.format = opts.format;
    validate_cpd_options(x.local.dims, x.global_nnz, x.local.dtype(), cpd);
    if (opts.grid && opts.decomposition == SPT_MPI_MEDIUM_GRAINED) {
      long long product = 1;
      for (uint32_t m = 0; m < order; ++m) {
        require(opts.grid[m] >= 1, "opts.grid[", m, "] must be >= 1, got ", opts.grid[m]);
        product *= opts.grid[m];
      }
      require(product == size, "opts.grid multiplies to ", product, " but the communicator has ", size, " ranks");
    }
  });
  // x must have been built on this communicator: its nonzeros add up.
  spt_nnz mine = x.local.nnz, total = 0;
  check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  collective(comm, [&] {
    require(total == x.global_nnz, "the ranks hold ", total, " nonzeros but the tensor has ", x.global_nnz,
            "; pass the communicator the tensor was created on");
  });
  // One GPU per rank when the context runs on CUDA (dispatch::DeviceOfRank).
  const int local_rank = host_local_rank(comm);
  std::optional<dispatch::DeviceOfRank> device;
  collective(comm, [&] { device.emplace(ctx, local_rank); });
  return with_dtype(x.local.dtype(), [&](auto tag) -> spt_status {
    using T = typename decltype(tag)::type;
    return run_cpd<T>(comm, ctx, x, opts, cpd, out);
  });
}

bool gather_ktensor(MPI_Comm comm, const spt_mpi_ktensor_s& k, int root, spt_ktensor_s& out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  collective(comm, [&] { require(root >= 0 && root < size, "root must be in 0..", size - 1, ", got ", root); });
  const spt_index R = k.local.rank;
  const uint32_t order = k.local.order();
  collective(comm, [&] {
    if (rank == root) init_ktensor(out, k.local.dtype(), k.global_dims, R);
  });
  with_dtype(k.local.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (uint32_t m = 0; m < order; ++m) {
      const int n = to_int_count(k.rows[m].size(), "gather");
      std::vector<int> counts(size), displs(size), vcounts(size), vdispls(size);
      check_mpi(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm), "MPI_Gather");
      uint64_t total = 0;
      if (rank == root)
        for (int r = 0; r < size; ++r) {
          displs[r] = to_int_count(total, "gather offset");
          vcounts[r] = to_int_count(static_cast<uint64_t>(counts[r]) * R, "gather");
          vdispls[r] = to_int_count(total * R, "gather offset");
          total += static_cast<uint64_t>(counts[r]);
        }
      std::vector<uint64_t> ids(total);
      std::vector<T> vals(total * R);
      check_mpi(MPI_Gatherv(k.rows[m].data(), n, MPI_UINT64_T, ids.data(), counts.data(), displs.data(),
                            MPI_UINT64_T, root, comm),
                "MPI_Gatherv");
      const T* mine = k.local.factors[m]->template ptr<T>();
      check_mpi(MPI_Gatherv(mine, to_int_count(static_cast<uint64_t>(n) * R, "gather"), mpi_type<T>(), vals.data(),
                            vcounts.data(), vdispls.data(), mpi_type<T>(), root, comm),
                "MPI_Gatherv");
      if (rank == root) {
        MatRef<T> dst = out.template factor<T>(m);
        for (uint64_t i = 0; i < total; ++i) std::memcpy(dst.row(ids[i]), &vals[i * R], sizeof(T) * R);
      }
    }
    if (rank == root) {
      std::memcpy(out.lambda.ptr<T>(), k.local.lambda.ptr<T>(), sizeof(T) * R);
      out.fit = k.local.fit;
      out.iterations = k.local.iterations;
      out.converged = k.local.converged;
      out.fit_history = k.local.fit_history;
      out.seconds_history = k.local.seconds_history;
    }
  });
  return rank == root;
}

}  // namespace spt::mpi
