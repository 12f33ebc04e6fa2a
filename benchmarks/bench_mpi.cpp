// Distributed CP-ALS benchmark (libsptensor_mpi), run under mpirun:
//
//   mpirun -np P bench_mpi (--file FILE | --synthetic NNZ [--dims I,J,K] [--zipf S])
//          [-r R] [--iters N] [--decomposition medium|coarse|both] [--grid AxBxC]
//          [--dtype float64|float32] [--threads T] [--seed S] [--format auto|coo|csf|hicoo]
//          [--backend auto|cpu|cuda] [--write-splatt-bin FILE]
//
// Rank 0 prints one JSON Lines record per decomposition (bench "cpd_iter",
// backend "mpi"): time per iteration (median and min over the sweeps, the
// slowest rank's time), bytes per iteration measured (all ranks; reduce,
// expand and allreduce parts), the medium-grained model's prediction
// (connectivity-1 volume of the partition) and the dense worst case, the
// load imbalance (max / mean nonzeros per rank), setup time and bytes;
// "local" names where the ranks' local MTTKRPs ran (--backend: cpu, or
// cuda = one GPU per rank).
//
// --synthetic NNZ generates the tensor in parallel (rank r draws its
// NNZ/P nonzeros from seed + r; no rank ever holds the whole tensor): each
// index is Zipf-like (log-uniform: P(i) ~ 1/(i+1)), scattered over the
// mode by a fixed affine permutation so heavy slices are not adjacent;
// values uniform in [0.5, 1.5). Default dims 20M x 10M x 2M for 200M nonzeros,
// scaled linearly with NNZ (--dims I,J,K overrides). The draw depends on P.
//
// --write-splatt-bin FILE (with --synthetic) writes the generated tensor, in
// parallel (each rank pwrites its nonzeros), as a SPLATT binary coordinate
// file (SPLATT's src/io.c, native byte order), then exits without CP-ALS:
//   int32 magic 0 (SPLATT_BIN_COORD), uint64 index width 4, uint64 value
//   width (4 for --dtype float32, 8 for float64), uint32 order, uint32
//   dims[order], uint32 nnz, then uint32 ind[0][nnz] ... ind[order-1][nnz]
//   (0-based), then the values[nnz].
// Two changes make it a tensor SPLATT-MPI handles, without changing it for
// CP-ALS: repeated coordinates of the draw are summed into the first drawn
// copy (the rest are dropped; the draw order is kept), since ours sums
// duplicates but SPLATT's fit counts each copy's square in the norm; and
// empty slices are dropped (each mode's used indices renumbered in order,
// dims shrunk to match), since SPLATT-MPI's medium-grained row distribution
// gives rows that hold no nonzero to no rank (P > 1: wrong fits, crashes,
// an assertion in its debug build). So the file holds fewer nonzeros than
// NNZ, over smaller dims. SPLATT-MPI and spt_mpi_read both read it, so both
// tools factor the same tensor: the one --synthetic NNZ gives ours in memory
// at the same P, up to the empty slices and rounding of the sums.
#include <mpi.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_common.hpp"
#include "sptensor/sptensor_mpi.h"

namespace {

using namespace spt_bench;

int g_rank = 0;

struct Options {
  std::string file;
  uint64_t synthetic_nnz = 0;
  std::vector<spt_index> dims;
  double zipf = 1.0;
  spt_index rank = 16;
  int iters = 10;
  std::string decomposition = "both";
  std::vector<int> grid;
  spt_dtype dtype = SPT_FLOAT64;
  int threads = 0;
  uint64_t seed = 1;
  std::string format = "auto";
  std::string backend = "auto";
  bool verbose = false;  // rank 0 logs at verbosity 1 (formats, trees)
  std::string write_splatt_bin;
};

std::vector<long long> split_numbers(const std::string& s, char sep) {
  std::vector<long long> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    out.push_back(std::atoll(s.substr(start, end - start).c_str()));
    start = end + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw Failure(a + " needs a value");
      return argv[++i];
    };
    if (a == "--file") o.file = next();
    else if (a == "--synthetic") o.synthetic_nnz = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--dims") for (long long d : split_numbers(next(), ',')) o.dims.push_back(static_cast<spt_index>(d));
    else if (a == "--zipf") o.zipf = std::atof(next().c_str());
    else if (a == "-r" || a == "--rank") o.rank = static_cast<spt_index>(std::atoi(next().c_str()));
    else if (a == "--iters") o.iters = std::atoi(next().c_str());
    else if (a == "--decomposition") o.decomposition = next();
    else if (a == "--grid") for (long long g : split_numbers(next(), 'x')) o.grid.push_back(static_cast<int>(g));
    else if (a == "--dtype") {
      if (!parse_dtype_name(next(), &o.dtype)) throw Failure("--dtype must be float32 or float64");
    } else if (a == "--threads") o.threads = std::atoi(next().c_str());
    else if (a == "--seed") o.seed = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--format") o.format = next();
    else if (a == "--backend") o.backend = next();
    else if (a == "--verbose") o.verbose = true;
    else if (a == "--write-splatt-bin") o.write_splatt_bin = next();
    else throw Failure("unknown argument " + a);
  }
  if (o.file.empty() == (o.synthetic_nnz == 0)) throw Failure("give exactly one of --file FILE and --synthetic NNZ");
  if (!o.write_splatt_bin.empty() && o.synthetic_nnz == 0) throw Failure("--write-splatt-bin needs --synthetic");
  if (o.format != "auto" && o.format != "coo" && o.format != "csf" && o.format != "hicoo")
    throw Failure("--format must be auto, coo, csf or hicoo");
  if (o.backend != "auto" && o.backend != "cpu" && o.backend != "cuda")
    throw Failure("--backend must be auto, cpu or cuda");
  if (o.decomposition != "medium" && o.decomposition != "coarse" && o.decomposition != "both")
    throw Failure("--decomposition must be medium, coarse or both");
  if (o.synthetic_nnz && o.dims.empty()) {
    // about 200M nonzeros over 20M x 10M x 2M rows by default (scaled with NNZ)
    const double scale = static_cast<double>(o.synthetic_nnz) / 2e8;
    o.dims = {static_cast<spt_index>(std::max(2.0, 2e7 * scale)), static_cast<spt_index>(std::max(2.0, 1e7 * scale)),
              static_cast<spt_index>(std::max(2.0, 2e6 * scale))};
  }
  return o;
}

uint64_t gcd(uint64_t a, uint64_t b) { return b ? gcd(b, a % b) : a; }

// This rank's share [begin, begin + n) of the synthetic nonzeros: ind holds
// mode m's indices at [m * n, (m + 1) * n).
struct Draw {
  uint64_t begin = 0, n = 0;
  std::vector<spt_index> ind;
  std::vector<double> val;
};

Draw draw_synthetic(const Options& o, int size) {
  const uint32_t order = static_cast<uint32_t>(o.dims.size());
  const uint64_t b = o.synthetic_nnz * static_cast<uint64_t>(g_rank) / static_cast<uint64_t>(size);
  const uint64_t e = o.synthetic_nnz * static_cast<uint64_t>(g_rank + 1) / static_cast<uint64_t>(size);
  const uint64_t n = e - b;
  Draw d;
  d.begin = b;
  d.n = n;
  std::vector<spt_index>& ind = d.ind;
  std::vector<double>& val = d.val;
  ind.resize(n * order);
  val.resize(n);
  std::mt19937_64 gen(o.seed * 1000003ull + static_cast<uint64_t>(g_rank));
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (uint32_t m = 0; m < order; ++m) {
    const uint64_t dim = o.dims[m];
    uint64_t mult = 2654435761ull % dim;
    while (dim > 1 && (mult == 0 || gcd(mult, dim) != 1)) mult = (mult + 1) % dim;
    const double log_range = std::log(static_cast<double>(dim) + 1.0);
    for (uint64_t k = 0; k < n; ++k) {
      // log-uniform (Zipf exponent 1); --zipf s sharpens (s > 1) or flattens it
      const double x = std::pow(u(gen), o.zipf);
      uint64_t i = static_cast<uint64_t>(std::exp(x * log_range)) - 1;
      if (i >= dim) i = dim - 1;
      ind[m * n + k] = static_cast<spt_index>(dim > 1 ? (i * mult + 12345) % dim : 0);
    }
  }
  for (uint64_t k = 0; k < n; ++k) val[k] = 0.5 + u(gen);
  return d;
}

spt_mpi_tensor* synthetic(const Options& o, spt_context* ctx, const Draw& d) {
  const uint32_t order = static_cast<uint32_t>(o.dims.size());
  const uint64_t n = d.n;
  spt_mpi_tensor* x = nullptr;
  if (o.dtype == SPT_FLOAT32) {
    std::vector<float> f(d.val.begin(), d.val.end());
    check(spt_mpi_tensor_create(MPI_COMM_WORLD, ctx, SPT_FLOAT32, order, o.dims.data(), n, d.ind.data(), n, 0,
                                f.data(), 0, &x),
          ctx, "spt_mpi_tensor_create");
  } else {
    check(spt_mpi_tensor_create(MPI_COMM_WORLD, ctx, SPT_FLOAT64, order, o.dims.data(), n, d.ind.data(), n, 0,
                                d.val.data(), 0, &x),
          ctx, "spt_mpi_tensor_create");
  }
  return x;
}

// Throws on every rank (with the lowest failing rank's message) unless all
// ranks pass ok.
void agree(bool ok, const std::string& message) {
  const int mine = ok ? 1 << 30 : g_rank;
  int first = 0;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == 1 << 30) return;
  std::vector<char> text(message.begin(), message.end());
  int len = static_cast<int>(text.size());
  MPI_Bcast(&len, 1, MPI_INT, first, MPI_COMM_WORLD);
  text.resize(static_cast<size_t>(len));
  MPI_Bcast(text.data(), len, MPI_CHAR, first, MPI_COMM_WORLD);
  throw Failure("rank " + std::to_string(first) + ": " + std::string(text.begin(), text.end()));
}

bool pwrite_all(int fd, const void* data, uint64_t bytes, uint64_t at) {
  const char* p = static_cast<const char*>(data);
  while (bytes) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, 1ull << 30));
    const ssize_t w = ::pwrite(fd, p, chunk, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    at += static_cast<uint64_t>(w);
    bytes -= static_cast<uint64_t>(w);
  }
  return true;
}

// Sums the nonzeros of equal coordinates over all ranks into the copy drawn
// first (lowest global position); the others leave d. Each nonzero goes to
// the rank a hash of its coordinates picks, which sorts what it gets, sums
// each run of equal coordinates (in draw order, values rounded to the dtype
// first) and tells the first copy's rank the sum. d.begin is then unused.
void sum_duplicates(const Options& o, Draw& d, int size) {
  const uint32_t order = static_cast<uint32_t>(o.dims.size());
  const uint64_t n = d.n;
  // A record: global position, value bits, then the indices two per word.
  const size_t words = 2 + (order + 1) / 2;
  std::vector<uint64_t> starts(static_cast<size_t>(size) + 1);
  for (int r = 0; r <= size; ++r)
    starts[r] = o.synthetic_nnz * static_cast<uint64_t>(r) / static_cast<uint64_t>(size);
  auto owner = [&](uint64_t k) {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (uint32_t m = 0; m < order; ++m) {
      h ^= d.ind[m * n + k] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    return static_cast<int>(h % static_cast<uint64_t>(size));
  };
  std::vector<int> dest(n);
  std::vector<long long> send_count(size, 0);
  for (uint64_t k = 0; k < n; ++k) ++send_count[dest[k] = owner(k)];
  std::vector<int> scount(size), sdispl(size), rcount(size), rdispl(size);
  long long at = 0;
  for (int r = 0; r < size; ++r) {
    if (send_count[r] > INT32_MAX || at > INT32_MAX) throw Failure("--write-splatt-bin: too many nonzeros per rank");
    scount[r] = static_cast<int>(send_count[r]);
    sdispl[r] = static_cast<int>(at);
    at += send_count[r];
  }
  MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
  long long received = 0;
  for (int r = 0; r < size; ++r) {
    if (received > INT32_MAX) throw Failure("--write-splatt-bin: too many nonzeros per rank");
    rdispl[r] = static_cast<int>(received);
    received += rcount[r];
  }
  const bool f32 = o.dtype == SPT_FLOAT32;
  std::vector<uint64_t> out(n * words), in(static_cast<size_t>(received) * words);
  {
    std::vector<long long> next(sdispl.begin(), sdispl.end());
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t* rec = &out[static_cast<size_t>(next[dest[k]]++) * words];
      const double v = f32 ? static_cast<double>(static_cast<float>(d.val[k])) : d.val[k];
      rec[0] = d.begin + k;
      std::memcpy(&rec[1], &v, 8);
      for (uint32_t m = 0; m < order; ++m) {
        const uint64_t x = d.ind[m * n + k];
        if (m % 2 == 0) rec[2 + m / 2] = x << 32;
        else rec[2 + m / 2] |= x;
      }
    }
  }
  std::vector<int>().swap(dest);
  MPI_Datatype record;
  MPI_Type_contiguous(static_cast<int>(words), MPI_UINT64_T, &record);
  MPI_Type_commit(&record);
  MPI_Alltoallv(out.data(), scount.data(), sdispl.data(), record, in.data(), rcount.data(), rdispl.data(), record,
                MPI_COMM_WORLD);
  std::vector<uint64_t>().swap(out);
  // Sort by coordinates, then position; each run's first record keeps the sum.
  std::vector<uint64_t> idx(static_cast<size_t>(received));
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](uint64_t a, uint64_t b) {
    const uint64_t* x = &in[a * words];
    const uint64_t* y = &in[b * words];
    for (size_t w = 2; w < words; ++w)
      if (x[w] != y[w]) return x[w] < y[w];
    return x[0] < y[0];
  });
  // Replies: (position, summed value) for each kept copy, to its drawing rank.
  std::vector<std::vector<uint64_t>> reply(size);
  for (size_t a = 0; a < idx.size();) {
    const uint64_t* first = &in[idx[a] * words];
    double sum = 0;
    size_t b = a;
    for (; b < idx.size() && std::equal(first + 2, first + words, &in[idx[b] * words] + 2); ++b) {
      double v;
      std::memcpy(&v, &in[idx[b] * words + 1], 8);
      sum += v;
    }
    const int r = static_cast<int>(std::upper_bound(starts.begin(), starts.end(), first[0]) - starts.begin()) - 1;
    uint64_t bits;
    std::memcpy(&bits, &sum, 8);
    reply[r].push_back(first[0]);
    reply[r].push_back(bits);
    a = b;
  }
  std::vector<uint64_t>().swap(in);
  std::vector<uint64_t>().swap(idx);
  std::vector<uint64_t> flat;
  at = 0;
  for (int r = 0; r < size; ++r) {
    scount[r] = static_cast<int>(reply[r].size() / 2);
    sdispl[r] = static_cast<int>(at);
    at += scount[r];
    flat.insert(flat.end(), reply[r].begin(), reply[r].end());
    std::vector<uint64_t>().swap(reply[r]);
  }
  MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, MPI_COMM_WORLD);
  received = 0;
  for (int r = 0; r < size; ++r) {
    rdispl[r] = static_cast<int>(received);
    received += rcount[r];
  }
  MPI_Type_free(&record);
  MPI_Type_contiguous(2, MPI_UINT64_T, &record);
  MPI_Type_commit(&record);
  std::vector<uint64_t> kept(static_cast<size_t>(received) * 2);
  MPI_Alltoallv(flat.data(), scount.data(), sdispl.data(), record, kept.data(), rcount.data(), rdispl.data(), record,
                MPI_COMM_WORLD);
  MPI_Type_free(&record);
  std::vector<uint64_t>().swap(flat);
  std::vector<char> keep(n, 0);
  for (size_t k = 0; k < kept.size(); k += 2) {
    const uint64_t local = kept[k] - d.begin;
    keep[local] = 1;
    std::memcpy(&d.val[local], &kept[k + 1], 8);
  }
  const uint64_t m_n = static_cast<uint64_t>(received);
  std::vector<spt_index> ind(m_n * order);
  std::vector<double> val(m_n);
  uint64_t c = 0;
  for (uint64_t k = 0; k < n; ++k) {
    if (!keep[k]) continue;
    for (uint32_t m = 0; m < order; ++m) ind[m * m_n + c] = d.ind[m * n + k];
    val[c++] = d.val[k];
  }
  d.ind.swap(ind);
  d.val.swap(val);
  d.n = m_n;
}

// Renumbers each mode's indices that hold a nonzero on any rank as 0, 1, ...
// in their order; returns the dims that leaves.
std::vector<spt_index> drop_empty_slices(const Options& o, Draw& d) {
  const uint32_t order = static_cast<uint32_t>(o.dims.size());
  std::vector<spt_index> dims(order);
  for (uint32_t m = 0; m < order; ++m) {
    const spt_index dim = o.dims[m];
    spt_index* ind = d.ind.data() + m * d.n;
    std::vector<unsigned char> used(dim, 0);
    for (uint64_t k = 0; k < d.n; ++k) used[ind[k]] = 1;
    if (dim > INT32_MAX) throw Failure("--write-splatt-bin: a dim above 2^31 - 1");
    MPI_Allreduce(MPI_IN_PLACE, used.data(), static_cast<int>(dim), MPI_UNSIGNED_CHAR, MPI_MAX, MPI_COMM_WORLD);
    std::vector<spt_index> renumber(dim);
    spt_index next = 0;
    for (spt_index i = 0; i < dim; ++i) renumber[i] = used[i] ? next++ : 0;
    for (uint64_t k = 0; k < d.n; ++k) ind[k] = renumber[ind[k]];
    dims[m] = next;
  }
  return dims;
}

// Writes the nonzeros of every rank's d, in rank order, as a SPLATT binary
// coordinate file of the given dims; returns its nonzero count and size in
// bytes.
std::pair<uint64_t, uint64_t> write_splatt_bin(const Options& o, const std::vector<spt_index>& dims, const Draw& d) {
  static_assert(sizeof(spt_index) == 4, "SPLATT .bin indices are written 4 bytes wide");
  const std::string& path = o.write_splatt_bin;
  const uint32_t order = static_cast<uint32_t>(dims.size());
  uint64_t before = 0, nnz = 0, mine = d.n;
  MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) before = 0;
  MPI_Allreduce(&mine, &nnz, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (nnz >= UINT32_MAX) throw Failure("--write-splatt-bin: 4-byte indices hold fewer than 2^32 - 1 nonzeros");
  const uint64_t vw = o.dtype == SPT_FLOAT32 ? 4 : 8;
  std::vector<char> head;
  auto put = [&](const auto& v) {
    const char* p = reinterpret_cast<const char*>(&v);
    head.insert(head.end(), p, p + sizeof v);
  };
  put(int32_t{0});
  put(uint64_t{4});
  put(vw);
  put(order);
  for (spt_index dim : dims) put(static_cast<uint32_t>(dim));
  put(static_cast<uint32_t>(nnz));
  const uint64_t data = head.size(), total = data + nnz * (order * 4ull + vw);
  bool ok = true;
  std::string why;
  auto failed = [&](const char* what) {
    ok = false;
    why = std::string(what) + " '" + path + "': " + std::strerror(errno);
  };
  if (g_rank == 0) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) failed("cannot create");
    else {
      if (!pwrite_all(fd, head.data(), data, 0)) failed("cannot write the header of");
      else if (::ftruncate(fd, static_cast<off_t>(total)) != 0) failed("cannot size");
      ::close(fd);
    }
  }
  agree(ok, why);
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) failed("cannot open");
  for (uint32_t m = 0; ok && m < order; ++m)
    if (!pwrite_all(fd, d.ind.data() + m * d.n, d.n * 4, data + (m * nnz + before) * 4)) failed("cannot write");
  const uint64_t vat = data + order * nnz * 4 + before * vw;
  if (ok && vw == 4) {
    std::vector<float> f(d.val.begin(), d.val.end());
    if (!pwrite_all(fd, f.data(), d.n * 4, vat)) failed("cannot write");
  } else if (ok && !pwrite_all(fd, d.val.data(), d.n * 8, vat)) {
    failed("cannot write");
  }
  if (fd >= 0 && ::close(fd) != 0 && ok) failed("cannot close");
  agree(ok, why);
  return {nnz, total};
}

void run_one(const Options& o, BenchEnv& env, spt_mpi_tensor* x, const std::string& name, double read_seconds,
             spt_mpi_decomposition decomposition) {
  spt_mpi_cpd_options co;
  spt_mpi_cpd_options_init(&co);
  co.rank = o.rank;
  co.max_iters = o.iters;
  co.tol = 0.0;
  co.seed = o.seed;
  co.decomposition = decomposition;
  co.format = o.format == "coo"     ? SPT_TENSOR_FORMAT_COO
              : o.format == "csf"   ? SPT_TENSOR_FORMAT_CSF
              : o.format == "hicoo" ? SPT_TENSOR_FORMAT_HICOO
                                    : SPT_TENSOR_FORMAT_AUTO;
  co.grid = decomposition == SPT_MPI_MEDIUM_GRAINED && !o.grid.empty() ? o.grid.data() : nullptr;
  spt_mpi_ktensor* k = nullptr;
  check(spt_mpi_cpd_als(MPI_COMM_WORLD, env.ctx, x, &co, &k), env.ctx, "spt_mpi_cpd_als");
  spt_mpi_cpd_stats s;
  s.struct_size = sizeof(s);
  check(spt_mpi_ktensor_stats(k, &s), env.ctx, "spt_mpi_ktensor_stats");
  spt_ktensor* local = nullptr;
  spt_mpi_ktensor_local(k, &local);
  int count = 0;
  const double *fits = nullptr, *seconds = nullptr;
  spt_ktensor_history(local, &count, &fits, &seconds);
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) ms.push_back(seconds[i] * 1e3);
  spt_mpi_tensor_summary info;
  info.struct_size = sizeof info;
  spt_mpi_tensor_info(env.ctx, x, &info);
  const uint32_t order = info.order;
  const spt_nnz nnz = info.global_nnz;
  if (g_rank == 0) {
    std::string grid;
    for (uint32_t m = 0; m < order; ++m) grid += (m ? "x" : "") + std::to_string(s.grid[m]);
    Record r;
    r.str("bench", "cpd_iter").str("format", o.format).str("backend", "mpi").str("local", o.backend)
        .str("device", env.device)
        .integer("threads", env.threads).integer("ranks", s.ranks).str("tensor", name).integer("order", order)
        .integer("nnz", static_cast<long long>(nnz)).integer("mode", -1).integer("rank", o.rank)
        .str("dtype", o.dtype == SPT_FLOAT32 ? "float32" : "float64")
        .str("decomposition", decomposition == SPT_MPI_MEDIUM_GRAINED ? "medium" : "coarse").str("grid", grid)
        .num("ms_median", median(ms)).num("ms_min", minimum(ms)).integer("reps", count)
        .num("ms_mttkrp", s.mttkrp_seconds_per_iteration * 1e3)
        .num("ms_exchange", s.exchange_seconds_per_iteration * 1e3)
        .num("ms_allreduce", s.allreduce_seconds_per_iteration * 1e3)
        .num("bytes_per_iter", s.bytes_per_iteration).num("bytes_reduce_per_iter", s.bytes_reduce_per_iteration)
        .num("bytes_expand_per_iter", s.bytes_expand_per_iteration)
        .num("bytes_allreduce_per_iter", s.bytes_allreduce_per_iteration)
        .num("model_bytes_per_iter", s.model_bytes_per_iteration)
        .num("dense_bound_bytes_per_iter", s.dense_bound_bytes_per_iteration)
        .num("max_rank_bytes_per_iter", s.max_rank_bytes_per_iteration).num("imbalance", s.nnz_imbalance)
        .integer("nnz_max_rank", static_cast<long long>(s.nnz_max))
        .integer("nnz_min_rank", static_cast<long long>(s.nnz_min)).num("setup_s", s.setup_seconds)
        .num("setup_bytes", static_cast<double>(s.setup_bytes)).num("read_s", read_seconds)
        .num("fit", count ? fits[count - 1] : 0.0).str("date", env.date).str("commit", env.commit);
    r.print();
  }
  spt_mpi_ktensor_free(k);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    Options o = parse(argc, argv);
    BenchEnv env;
    env.open(o.threads);
    if (o.verbose && g_rank == 0) {
      spt_context_set_verbosity(env.ctx, 1);
      spt_context_set_log(env.ctx, [](void*, int, const char* text) { std::fprintf(stderr, "log: %s\n", text); }, nullptr);
    }
    const spt_backend backend = o.backend == "cuda" ? SPT_BACKEND_CUDA : o.backend == "cpu" ? SPT_BACKEND_CPU
                                                                                        : SPT_BACKEND_AUTO;
    // Every rank must take the backend, or none goes on (no rank left waiting).
    const int took = spt_context_set_backend(env.ctx, backend) == SPT_OK ? 1 : 0;
    int all_took = 0;
    MPI_Allreduce(&took, &all_took, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!took)
      std::fprintf(stderr, "bench_mpi: rank %d: --backend %s: %s\n", g_rank, o.backend.c_str(),
                   spt_last_error(env.ctx));
    if (!all_took) throw Failure("--backend " + o.backend + " failed on some rank");
    spt_mpi_tensor* x = nullptr;
    std::string name;
    const double t0 = MPI_Wtime();
    if (!o.file.empty()) {
      spt_read_options ro;
      spt_read_options_init(&ro);
      ro.dtype = o.dtype;
      check(spt_mpi_read(MPI_COMM_WORLD, env.ctx, o.file.c_str(), &ro, &x), env.ctx, "reading " + o.file);
      name = tensor_stem(o.file);
    } else {
      name = "synthetic-zipf-" + std::to_string(o.synthetic_nnz);
      for (size_t m = 0; m < o.dims.size(); ++m) name += (m ? "x" : "-") + std::to_string(o.dims[m]);
      Draw d = draw_synthetic(o, size);  // freed before the sweeps
      if (!o.write_splatt_bin.empty()) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t1 = MPI_Wtime();
        sum_duplicates(o, d, size);
        const std::vector<spt_index> dims = drop_empty_slices(o, d);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t2 = MPI_Wtime();
        const auto [nnz, bytes] = write_splatt_bin(o, dims, d);
        const double t3 = MPI_Wtime();
        std::string shape;
        for (size_t m = 0; m < dims.size(); ++m) shape += (m ? "x" : "") + std::to_string(dims[m]);
        if (g_rank == 0)
          Record()
              .str("bench", "write_splatt_bin").str("tensor", name).str("file", o.write_splatt_bin)
              .integer("ranks", size).integer("draws", static_cast<long long>(o.synthetic_nnz))
              .integer("nnz", static_cast<long long>(nnz)).str("dims", shape)
              .str("dtype", o.dtype == SPT_FLOAT32 ? "float32" : "float64")
              .integer("seed", static_cast<long long>(o.seed)).integer("bytes", static_cast<long long>(bytes))
              .num("draw_s", t1 - t0).num("prepare_s", t2 - t1).num("write_s", t3 - t2)
              .str("date", env.date).str("commit", env.commit)
              .print();
      } else {
        x = synthetic(o, env.ctx, d);
      }
    }
    const double read_seconds = MPI_Wtime() - t0;
    if (x && o.decomposition != "coarse") run_one(o, env, x, name, read_seconds, SPT_MPI_MEDIUM_GRAINED);
    if (x && o.decomposition != "medium") run_one(o, env, x, name, read_seconds, SPT_MPI_COARSE_GRAINED);
    spt_mpi_tensor_free(x);
  } catch (const Failure& e) {
    if (g_rank == 0) std::fprintf(stderr, "bench_mpi: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
