// Distributed tensors: construction from rank-local nonzeros, the parallel
// .tns reader (byte ranges per rank, cut at line boundaries) and gathering
// to one rank (tests, small tensors).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "core/error.hpp"
#include "io/compression.hpp"
#include "io/input_source.hpp"
#include "io/splatt_binary.hpp"
#include "io/spt_binary.hpp"
#include "io/tns_text_reader.hpp"
#include "mpi_objects.hpp"
#include "mpi_util.hpp"

namespace spt::mpi {

namespace {

// Agree that every rank passed the same order, dtype and dims (or NULL).
void agree_on_shape(MPI_Comm comm, spt_dtype dtype, uint32_t order, const spt_index* dims) {
  // min and max of (order, dtype, dims given) across ranks
  long long local[3] = {static_cast<long long>(order), static_cast<long long>(dtype), dims ? 1 : 0};
  long long lo[3], hi[3];
  check_mpi(MPI_Allreduce(local, lo, 3, MPI_LONG_LONG, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(local, hi, 3, MPI_LONG_LONG, MPI_MAX, comm), "MPI_Allreduce");
  if (lo[0] != hi[0]) fail(SPT_ERR_INVALID_ARGUMENT, "the ranks passed different orders (", lo[0], " to ", hi[0], ")");
  if (lo[1] != hi[1]) fail(SPT_ERR_INVALID_ARGUMENT, "the ranks passed different dtypes");
  if (lo[2] != hi[2])
    fail(SPT_ERR_INVALID_ARGUMENT, "some ranks passed dims and others NULL; pass the same dims (or NULL) on every rank");
}

// Replace "path:LINE" at the start of a parse message by the global line
// number (the chunk parser counts lines from 1 at the chunk start).
Error with_global_line(const Error& e, const std::string& path, uint64_t lines_before) {
  std::string msg = e.what();
  const std::string prefix = path + ":";
  if (lines_before == 0 || msg.compare(0, prefix.size(), prefix) != 0) return e;
  size_t p = prefix.size(), q = p;
  while (q < msg.size() && msg[q] >= '0' && msg[q] <= '9') ++q;
  if (q == p) return e;
  const uint64_t line = std::stoull(msg.substr(p, q - p)) + lines_before;
  return Error(e.code(), prefix + std::to_string(line) + msg.substr(q));
}

// True when the text has a line that is neither blank nor a '#' comment.
bool has_content(const char* b, const char* e) {
  bool at_line_start = true;
  for (const char* p = b; p < e; ++p) {
    const char c = *p;
    if (c == '\n') {
      at_line_start = true;
      continue;
    }
    if (!at_line_start) continue;
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c == '#') {
      at_line_start = false;
      continue;
    }
    return true;
  }
  return false;
}

class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(SPT_ERR_IO, "cannot open '", path, "': ", std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail(SPT_ERR_IO, "cannot stat '", path, "': ", std::strerror(errno));
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  uint64_t size() const { return size_; }
  void read_at(uint64_t offset, char* dst, uint64_t n) const {
    while (n > 0) {
      const ssize_t got = ::pread(fd_, dst, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)),
                                  static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) fail(SPT_ERR_IO, "cannot read '", path_, "' at byte ", offset, ": ",
                         got == 0 ? "unexpected end of file" : std::strerror(errno));
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
  }
  // Offset just past the first '\n' at or after `from` (size() if none).
  uint64_t next_line_start(uint64_t from) const {
    char block[65536];
    while (from < size_) {
      const uint64_t n = std::min<uint64_t>(sizeof(block), size_ - from);
      read_at(from, block, n);
      const void* nl = std::memchr(block, '\n', static_cast<size_t>(n));
      if (nl) return from + static_cast<uint64_t>(static_cast<const char*>(nl) - block) + 1;
      from += n;
    }
    return size_;
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// What rank 0 learns from the start of the file.
struct TextHeader {
  uint32_t order = 0;
  uint32_t extended = 0;
  uint64_t data_offset = 0;
  uint64_t data_first_line = 1;
  uint64_t file_size = 0;
  std::vector<spt_index> header_dims;  // extended files only
};

// Bytes from the file start through the end of the third line holding
// something other than blanks or a '#' comment: enough for the extended
// header (order line, dims line) and the first entry. The whole file when
// it has fewer such lines.
uint64_t header_prefix_length(const File& f) {
  std::vector<char> block(65536);
  uint64_t pos = 0;
  int content_lines = 0;
  bool at_line_start = true, line_has_content = false;
  while (pos < f.size()) {
    const uint64_t n = std::min<uint64_t>(block.size(), f.size() - pos);
    f.read_at(pos, block.data(), n);
    for (uint64_t k = 0; k < n; ++k) {
      const char c = block[k];
      if (c == '\n') {
        if (line_has_content && ++content_lines == 3) return pos + k + 1;
        at_line_start = true;
        line_has_content = false;
      } else if (at_line_start && c != ' ' && c != '\t' && c != '\r') {
        at_line_start = false;
        line_has_content = c != '#';
      }
    }
    pos += n;
  }
  return f.size();
}

TextHeader read_text_header(const spt_context_s& ctx, const File& f, const std::string& path,
                            const io::ReadOptions& opts) {
  TextHeader h;
  h.file_size = f.size();
  const uint64_t n = header_prefix_length(f);
  std::vector<char> prefix(static_cast<size_t>(n));
  if (n) f.read_at(0, prefix.data(), n);
  io::TextLayout layout;
  spt_coo_s x = io::read_tns_text(ctx, prefix.data(), static_cast<size_t>(n), path, opts, &layout);
  h.order = x.order();
  h.extended = layout.extended ? 1 : 0;
  h.data_offset = layout.data_offset;
  h.data_first_line = layout.data_first_line;
  if (layout.extended) h.header_dims = x.dims;
  return h;
}

void scatter_from_root(MPI_Comm comm, const spt_coo_s* whole, spt_mpi_tensor_s& out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // shape: order, dtype, nnz, dims
  std::vector<uint64_t> shape;
  if (rank == 0) {
    shape = {whole->order(), static_cast<uint64_t>(whole->dtype()), whole->nnz};
    for (spt_index d : whole->dims) shape.push_back(d);
  }
  uint64_t len = shape.size();
  check_mpi(MPI_Bcast(&len, 1, MPI_UINT64_T, 0, comm), "MPI_Bcast");
  shape.resize(len);
  check_mpi(MPI_Bcast(shape.data(), static_cast<int>(len), MPI_UINT64_T, 0, comm), "MPI_Bcast");
  const uint32_t order = static_cast<uint32_t>(shape[0]);
  const spt_dtype dtype = static_cast<spt_dtype>(shape[1]);
  const spt_nnz nnz = shape[2];
  std::vector<spt_index> dims(shape.begin() + 3, shape.end());
  std::vector<int> counts(size), displs(size);
  for (int r = 0; r < size; ++r) {
    const uint64_t b = nnz * static_cast<uint64_t>(r) / static_cast<uint64_t>(size);
    const uint64_t e = nnz * static_cast<uint64_t>(r + 1) / static_cast<uint64_t>(size);
    counts[r] = to_int_count(e - b, "scatter");
    displs[r] = to_int_count(b, "scatter offset");
  }
  out.local.init_owned(dtype, dims, static_cast<spt_nnz>(counts[rank]));
  for (uint32_t m = 0; m < order; ++m)
    check_mpi(MPI_Scatterv(rank == 0 ? whole->ind[m] : nullptr, counts.data(), displs.data(), MPI_UINT32_T,
                           out.local.mutable_ind(m), counts[rank], MPI_UINT32_T, 0, comm),
              "MPI_Scatterv");
  MPI_Datatype vt = dtype == SPT_FLOAT32 ? MPI_FLOAT : MPI_DOUBLE;
  check_mpi(MPI_Scatterv(rank == 0 ? whole->val : nullptr, counts.data(), displs.data(), vt, out.local.own_val.data(),
                         counts[rank], vt, 0, comm),
            "MPI_Scatterv");
  out.global_nnz = nnz;
}

// The part [size_t(n * rank / size), n * (rank + 1) / size) of n items.
std::pair<uint64_t, uint64_t> share_of(uint64_t n, int rank, int size) {
  const auto cut = [&](int r) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(n) * static_cast<uint64_t>(r)) /
                                 static_cast<uint64_t>(size));
  };
  return {cut(rank), cut(rank + 1)};
}

// Parallel read of a binary file (.sptb or SPLATT .bin): every rank checks
// the header, reads its share of the nonzeros straight from the file (the
// index and value arrays are contiguous, so a share is one slice of each)
// and, for .sptb, hashes its share of the checksum blocks; rank 0 combines
// the block digests and checks the stored checksum. No rank reads more
// than its share of the payload (read by copy, never mapped: a file
// truncated meanwhile is SPT_ERR_IO, not SIGBUS); every failure is
// collective.
void read_binary_ranges(MPI_Comm comm, spt_context_s& ctx, const std::string& path, const io::ReadOptions& opts,
                        bool sptb, spt_mpi_tensor_s& out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::unique_ptr<io::InputSource> in;
  io::SptbHeader sptb_header;
  io::SplattHeader splatt_header;
  uint64_t nnz = 0;
  collective(comm, [&] {
    in = std::make_unique<io::InputSource>(path, thread_count(ctx));
    if (sptb) {
      sptb_header = io::read_sptb_header(*in);
      nnz = sptb_header.nnz;
    } else {
      splatt_header = io::read_splatt_header(*in);
      nnz = splatt_header.nnz;
    }
  });
  if (sptb) {
    // Checksum: each rank digests its blocks, rank 0 combines them.
    const uint64_t blocks = sptb_header.blocks();
    const auto [first, last] = share_of(blocks, rank, size);
    std::vector<uint64_t> mine;
    collective(comm, [&] { mine = io::sptb_block_digests(ctx, *in, sptb_header, first, last); });
    std::vector<int> counts(size), displs(size);
    for (int r = 0; r < size; ++r) {
      const auto [b, e] = share_of(blocks, r, size);
      counts[r] = to_int_count(e - b, "checksum blocks");
      displs[r] = to_int_count(b, "checksum block offset");
    }
    std::vector<uint64_t> all(rank == 0 ? blocks : 0);
    check_mpi(MPI_Gatherv(mine.data(), counts[rank], MPI_UINT64_T, all.data(), counts.data(), displs.data(),
                          MPI_UINT64_T, 0, comm),
              "MPI_Gatherv");
    collective(comm, [&] {
      if (rank == 0) io::verify_sptb_checksum(sptb_header, all, path);
    });
  }
  const auto [begin, end] = share_of(nnz, rank, size);
  collective(comm, [&] {
    out.local = sptb ? io::read_spt_bin_range(ctx, *in, sptb_header, opts, begin, end)
                     : io::read_splatt_bin_range(ctx, *in, splatt_header, opts, begin, end);
    out.local.make_owned();
  });
  out.global_nnz = nnz;
}

}  // namespace

void create_tensor(MPI_Comm comm, spt_context_s& ctx, spt_dtype dtype, uint32_t order, const spt_index* dims,
                   spt_nnz local_nnz, const spt_index* indices, spt_nnz ld, int index_base, const void* values,
                   int flags, spt_mpi_tensor_s& out) {
  (void)ctx;
  collective(comm, [&] {
    check_dtype(dtype);
    require(order >= 1 && order <= SPT_MPI_MAX_ORDER, "order must be 1..", SPT_MPI_MAX_ORDER, ", got ", order);
    require((flags & ~SPT_COO_REJECT_NONFINITE) == 0, "unknown or unsupported flags ", flags,
            " (SPT_COO_REJECT_NONFINITE is the only flag here)");
    require(index_base == 0 || index_base == 1, "index_base must be 0 or 1, got ", index_base);
    if (dims) validate_dims(order, dims);
  });
  collective(comm, [&] { agree_on_shape(comm, dtype, order, dims); });
  if (dims) {
    std::vector<spt_index> mine(dims, dims + order), lo(order), hi(order);
    check_mpi(MPI_Allreduce(mine.data(), lo.data(), static_cast<int>(order), MPI_UINT32_T, MPI_MIN, comm),
              "MPI_Allreduce");
    check_mpi(MPI_Allreduce(mine.data(), hi.data(), static_cast<int>(order), MPI_UINT32_T, MPI_MAX, comm),
              "MPI_Allreduce");
    collective(comm, [&] { require(lo == hi, "the ranks passed different dims; pass the same global dims everywhere"); });
  }
  collective(comm, [&] {
    out.local.init_owned(dtype, dims ? std::vector<spt_index>(dims, dims + order) : std::vector<spt_index>(order, 1),
                         local_nnz);
    copy_in_nonzeros(out.local, 0, local_nnz, indices, ld, index_base, values, flags & SPT_COO_REJECT_NONFINITE,
                     dims == nullptr);
  });
  if (!dims) {
    std::vector<spt_index> global(order);
    check_mpi(MPI_Allreduce(out.local.dims.data(), global.data(), static_cast<int>(order), MPI_UINT32_T, MPI_MAX, comm),
              "MPI_Allreduce");
    out.local.dims = global;
  }
  spt_nnz total = 0, mine = local_nnz;
  check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  collective(comm, [&] {
    require(dims || total > 0, "no rank has nonzeros, so the dims cannot be inferred; pass dims");
  });
  out.global_nnz = total;
}

void read_tensor(MPI_Comm comm, spt_context_s& ctx, const std::string& path, const io::ReadOptions& opts,
                 spt_mpi_tensor_s& out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  // Rank 0 decides how: parallel text, parallel binary (each rank reads its
  // range of nonzeros), or - for compressed files, which cannot be read
  // from the middle - rank 0 reads the whole file and scatters it.
  enum : int { kParallelText = 0, kRootReads = 1, kParallelSptb = 2, kParallelSplatt = 3 };
  int mode = kParallelText;
  collective(comm, [&] {
    if (opts.duplicates != SPT_DUPLICATES_KEEP)
      fail(SPT_ERR_UNSUPPORTED, "spt_mpi_read keeps duplicate coordinates (SPT_DUPLICATES_KEEP; CP-ALS sums them); "
                                "other duplicate policies need the whole tensor on one rank: use spt_read");
    if (rank != 0) return;
    File f(path);
    unsigned char head[64] = {};
    const uint64_t n = std::min<uint64_t>(f.size(), sizeof(head));
    if (n) f.read_at(0, reinterpret_cast<char*>(head), n);
    const size_t got = static_cast<size_t>(n);
    const bool compressed = io::detect_compression(head, got) != SPT_COMPRESS_NONE;
    const bool sptb = opts.format == SPT_FILE_SPT_BIN || (opts.format == SPT_FILE_AUTO && io::looks_like_sptb(head, got));
    const bool splatt = opts.format == SPT_FILE_SPLATT_BIN ||
                        (opts.format == SPT_FILE_AUTO && !sptb && io::looks_like_splatt_bin(head, got));
    if (compressed) mode = kRootReads;
    else if (sptb) mode = kParallelSptb;
    else if (splatt) mode = kParallelSplatt;
  });
  check_mpi(MPI_Bcast(&mode, 1, MPI_INT, 0, comm), "MPI_Bcast");

  if (mode == kRootReads) {
    spt_coo_s whole;
    collective(comm, [&] {
      if (rank == 0) {
        whole = io::read_tensor(ctx, path, opts);
        whole.make_owned();
      }
    });
    scatter_from_root(comm, rank == 0 ? &whole : nullptr, out);
    return;
  }
  if (mode == kParallelSptb || mode == kParallelSplatt) {
    read_binary_ranges(comm, ctx, path, opts, mode == kParallelSptb, out);
    return;
  }

  // Header, order and where the entries start: rank 0, then broadcast.
  TextHeader h;
  collective(comm, [&] {
    if (rank == 0) {
      File f(path);
      h = read_text_header(ctx, f, path, opts);
    }
  });
  uint64_t header[6] = {h.order, h.extended, h.data_offset, h.data_first_line, h.file_size, h.header_dims.size()};
  check_mpi(MPI_Bcast(header, 6, MPI_UINT64_T, 0, comm), "MPI_Bcast");
  h.order = static_cast<uint32_t>(header[0]);
  h.extended = static_cast<uint32_t>(header[1]);
  h.data_offset = header[2];
  h.data_first_line = header[3];
  h.file_size = header[4];
  h.header_dims.resize(header[5]);
  if (header[5])
    check_mpi(MPI_Bcast(h.header_dims.data(), static_cast<int>(header[5]), MPI_UINT32_T, 0, comm), "MPI_Bcast");

  // Every rank: its byte range, starting at a line start.
  std::vector<char> text;
  uint64_t begin = 0, end = 0;
  collective(comm, [&] {
    File f(path);
    if (f.size() != h.file_size)
      fail(SPT_ERR_IO, "'", path, "' has ", f.size(), " bytes on rank ", rank, " but ", h.file_size,
           " on rank 0; every rank must see the same file");
    const uint64_t span = h.file_size - h.data_offset;
    const uint64_t nominal = h.data_offset + span * static_cast<uint64_t>(rank) / static_cast<uint64_t>(size);
    begin = rank == 0 ? h.data_offset : (nominal == 0 ? 0 : f.next_line_start(nominal - 1));
    begin = std::max(begin, h.data_offset);
  });
  std::vector<uint64_t> starts(size);
  check_mpi(MPI_Allgather(&begin, 1, MPI_UINT64_T, starts.data(), 1, MPI_UINT64_T, comm), "MPI_Allgather");
  end = rank + 1 < size ? starts[rank + 1] : h.file_size;
  end = std::max(end, begin);
  uint64_t my_lines = 0;
  collective(comm, [&] {
    File f(path);
    text.resize(static_cast<size_t>(end - begin));
    if (!text.empty()) f.read_at(begin, text.data(), end - begin);
    my_lines = static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n'));
  });
  uint64_t lines_before = 0;
  check_mpi(MPI_Exscan(&my_lines, &lines_before, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Exscan");
  if (rank == 0) lines_before = 0;
  const uint64_t first_line = h.data_first_line + lines_before;

  io::ReadOptions chunk_opts = opts;
  chunk_opts.format = SPT_FILE_TNS;
  chunk_opts.order = h.order;
  if (h.extended) chunk_opts.dims = h.header_dims;
  const bool dims_known = !chunk_opts.dims.empty();
  collective(comm, [&] {
    if (text.empty() || !has_content(text.data(), text.data() + text.size())) {
      out.local.init_owned(opts.dtype, dims_known ? chunk_opts.dims : std::vector<spt_index>(h.order, 1), 0);
      return;
    }
    try {
      out.local = io::read_tns_text(ctx, text.data(), text.size(), path, chunk_opts, nullptr);
    } catch (const Error& e) {
      throw with_global_line(e, path, first_line - 1);
    }
  });
  std::vector<char>().swap(text);
  if (!dims_known) {
    std::vector<spt_index> global(h.order);
    check_mpi(MPI_Allreduce(out.local.dims.data(), global.data(), static_cast<int>(h.order), MPI_UINT32_T, MPI_MAX,
                            comm),
              "MPI_Allreduce");
    out.local.dims = global;
  }
  spt_nnz mine = out.local.nnz, total = 0;
  check_mpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, comm), "MPI_Allreduce");
  out.global_nnz = total;
}

bool gather_tensor(MPI_Comm comm, const spt_mpi_tensor_s& x, int root, spt_coo_s& out) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  collective(comm, [&] { require(root >= 0 && root < size, "root must be in 0..", size - 1, ", got ", root); });
  const int mine = to_int_count(x.local.nnz, "gather");
  std::vector<int> counts(size), displs(size);
  check_mpi(MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm), "MPI_Gather");
  spt_nnz total = 0;
  if (rank == root) {
    for (int r = 0; r < size; ++r) {
      displs[r] = to_int_count(total, "gather offset");
      total += static_cast<spt_nnz>(counts[r]);
    }
    out.init_owned(x.local.dtype(), x.local.dims, total);
  }
  for (uint32_t m = 0; m < x.local.order(); ++m)
    check_mpi(MPI_Gatherv(x.local.ind[m], mine, MPI_UINT32_T, rank == root ? out.mutable_ind(m) : nullptr,
                          counts.data(), displs.data(), MPI_UINT32_T, root, comm),
              "MPI_Gatherv");
  MPI_Datatype vt = x.local.dtype() == SPT_FLOAT32 ? MPI_FLOAT : MPI_DOUBLE;
  check_mpi(MPI_Gatherv(x.local.val, mine, vt, rank == root ? out.own_val.data() : nullptr, counts.data(),
                        displs.data(), vt, root, comm),
            "MPI_Gatherv");
  return rank == root;
}

}  // namespace spt::mpi
