// Small MPI helpers shared by libsptensor_mpi: error checking (MPI return
// codes become spt::Error SPT_ERR_MPI), an owned duplicate communicator with
// MPI_ERRORS_RETURN, MPI datatypes of our value types, Alltoallv with 64-bit
// element counts checked, and `collective`, which makes every rank leave a
// stage with the same outcome.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"

namespace spt::mpi {

inline std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return cat("MPI error code ", rc);
  return std::string(text, static_cast<size_t>(len));
}

// Throws SPT_ERR_MPI naming the call when rc is not MPI_SUCCESS.
inline void check_mpi(int rc, const char* call) {
  if (rc != MPI_SUCCESS) fail(SPT_ERR_MPI, call, " failed: ", mpi_error_text(rc));
}

// A duplicate of the caller's communicator (never modified itself) whose
// errors are returned, not fatal, so they become SPT_ERR_MPI.
class OwnedComm {
 public:
  OwnedComm() = default;
  explicit OwnedComm(MPI_Comm parent) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
      fail(SPT_ERR_MPI, "MPI is not initialised (call MPI_Init before libsptensor_mpi functions)");
    require(parent != MPI_COMM_NULL, "comm must not be MPI_COMM_NULL");
    check_mpi(MPI_Comm_dup(parent, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  // Takes ownership of an existing communicator (e.g. from MPI_Comm_split).
  static OwnedComm adopt(MPI_Comm c) {
    OwnedComm o;
    o.comm_ = c;
    MPI_Comm_rank(c, &o.rank_);
    MPI_Comm_size(c, &o.size_);
    return o;
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;
  OwnedComm(OwnedComm&& o) noexcept { *this = std::move(o); }
  OwnedComm& operator=(OwnedComm&& o) noexcept {
    if (this != &o) {
      release();
      comm_ = o.comm_;
      rank_ = o.rank_;
      size_ = o.size_;
      o.comm_ = MPI_COMM_NULL;
    }
    return *this;
  }
  ~OwnedComm() { release(); }

  MPI_Comm get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  void release() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

template <typename T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<float>() { return MPI_FLOAT; }
template <>
inline MPI_Datatype mpi_type<double>() { return MPI_DOUBLE; }
template <>
inline MPI_Datatype mpi_type<uint32_t>() { return MPI_UINT32_T; }
template <>
inline MPI_Datatype mpi_type<uint64_t>() { return MPI_UINT64_T; }
template <>
inline MPI_Datatype mpi_type<int>() { return MPI_INT; }

inline int to_int_count(uint64_t n, const char* what) {
  if (n > static_cast<uint64_t>(INT_MAX))
    fail(SPT_ERR_UNSUPPORTED, what, ": ", n, " elements in one message exceed MPI's int count limit; use more ranks");
  return static_cast<int>(n);
}

// MPI_Alltoallv of items made of `per_item` consecutive elements of MPI
// type `type`, grouped by rank in rank order on both sides; the counts are
// items per rank, 64-bit (checked against MPI's int limit).
inline void alltoallv_items(MPI_Comm comm, const void* send, const std::vector<uint64_t>& send_counts, void* recv,
                            const std::vector<uint64_t>& recv_counts, MPI_Datatype type, int per_item) {
  const int p = static_cast<int>(send_counts.size());
  std::vector<int> sc(p), sd(p), rc(p), rd(p);
  uint64_t so = 0, ro = 0;
  for (int j = 0; j < p; ++j) {
    sc[j] = to_int_count(send_counts[j] * per_item, "all-to-all");
    sd[j] = to_int_count(so * per_item, "all-to-all offset");
    rc[j] = to_int_count(recv_counts[j] * per_item, "all-to-all");
    rd[j] = to_int_count(ro * per_item, "all-to-all offset");
    so += send_counts[j];
    ro += recv_counts[j];
  }
  check_mpi(MPI_Alltoallv(send, sc.data(), sd.data(), type, recv, rc.data(), rd.data(), type, comm), "MPI_Alltoallv");
}

// Alltoallv of items made of `type_elements` consecutive E's (MPI type
// `type`); send_counts are items per rank. Receive counts are exchanged
// first. Returns the received E's (grouped by source rank) and fills
// recv_counts (items).
template <typename E>
std::vector<E> alltoallv(MPI_Comm comm, const std::vector<E>& send, const std::vector<uint64_t>& send_counts,
                         std::vector<uint64_t>& recv_counts, MPI_Datatype type, int type_elements = 1) {
  const int p = static_cast<int>(send_counts.size());
  recv_counts.assign(p, 0);
  check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, comm),
            "MPI_Alltoall");
  uint64_t items = 0;
  for (uint64_t c : recv_counts) items += c;
  std::vector<E> recv(static_cast<size_t>(items) * static_cast<size_t>(type_elements));
  alltoallv_items(comm, send.data(), send_counts, recv.data(), recv_counts, type, type_elements);
  return recv;
}

// The outcome of this rank's local work: OK, or the code and message of
// its first failure. Local work that may fail on some ranks only (a local
// MTTKRP, a solve, an allocation) runs through run(); agree() then makes
// every rank leave with the same outcome before the next collective that
// the failed rank would otherwise skip.
class LocalOutcome {
 public:
  explicit LocalOutcome(MPI_Comm comm) { MPI_Comm_rank(comm, &rank_); }
  bool ok() const { return code_ == SPT_OK; }
  // Runs body unless an earlier step failed; records its failure.
  template <typename Body>
  void run(Body&& body) {
    if (!ok()) return;
    try {
      body();
    } catch (const Error& e) {
      code_ = e.code();
      message_ = e.what();
    } catch (const std::bad_alloc&) {
      code_ = SPT_ERR_OUT_OF_MEMORY;
      message_ = cat("out of memory on rank ", rank_, "; use more ranks or a smaller problem");
    } catch (const std::exception& e) {
      code_ = SPT_ERR_INTERNAL;
      message_ = cat("internal error on rank ", rank_, ": ", e.what(), " (please report this)");
    }
  }
  // Collective: if any rank failed, every rank throws the same spt::Error
  // (the code and message of the lowest failing rank, i.e. the first
  // problem in rank order). One MPI_Allreduce of an int when all is well.
  void agree(MPI_Comm comm) {
    int size = 1;
    MPI_Comm_size(comm, &size);
    int mine = ok() ? size : rank_;
    int first = size;
    check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce");
    if (first == size) return;
    int header[2] = {code_, static_cast<int>(message_.size())};
    check_mpi(MPI_Bcast(header, 2, MPI_INT, first, comm), "MPI_Bcast");
    message_.resize(static_cast<size_t>(header[1]));
    check_mpi(MPI_Bcast(message_.data(), header[1], MPI_CHAR, first, comm), "MPI_Bcast");
    throw Error(header[0], message_);
  }

 private:
  int rank_ = 0;
  spt_status code_ = SPT_OK;
  std::string message_;
};

// Runs `body` on this rank, then agrees on the outcome (LocalOutcome): no
// rank is left waiting in a later collective.
template <typename Body>
void collective(MPI_Comm comm, Body&& body) {
  LocalOutcome outcome(comm);
  outcome.run(std::forward<Body>(body));
  outcome.agree(comm);
}

}  // namespace spt::mpi
