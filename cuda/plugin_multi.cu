// Table family MULTI_DEVICE (plugin_abi.h): CP-ALS sessions on several
// devices of one host joined by NCCL (loaded at run time, nccl_loader.cuh).
// Nonzeros and rows are both shared out (medium-grained, as the MPI code):
// each session sums its MTTKRP over its nonzeros into a whole-mode buffer,
// a reduce-scatter leaves on each session the sums of the rows it owns, each
// solves, normalises and takes the Gram of its own rows (column norms and
// Grams all-reduced, so every session holds the same lambda and Grams), and
// an all-gather hands each new factor's rows to every session before the
// next MTTKRP reads them. The exchanged volume is that of one all-reduce
// per mode, and the dense work per device shrinks with the device count
// instead of running on one lead device while the others wait. The row
// shares are equal (ceil(I / P) rows), as reduce-scatter and all-gather
// need; the sessions' buffers carry the slack rows that makes in-place
// (cp_als_max_group). One mode may instead follow the nonzeros (the local
// mode: each session holds the nonzeros of its rows of it): each session's
// MTTKRP of it is then whole on its own rows and no session reads another's
// rows of that factor, so that mode exchanges nothing (the core makes the
// largest mode local, src/dispatch/multi_device.cpp). Every collective of a step is queued on each
// session's stream inside one ncclGroupStart / ncclGroupEnd (one host thread
// drives every device).
#include <cuda_runtime_api.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "cp_als.cuh"
#include "dispatch/plugin_abi.h"
#include "library_checks.cuh"
#include "nccl_loader.cuh"
#include "plugin_common.cuh"
#include "plugin_copies.cuh"
#include "plugin_entries.cuh"

namespace {

namespace nccl = spt::cuda::nccl;

// Device events around one session's MTTKRP and exchanges, read (and
// summed) once the step after has waited on them.
struct StepTimes {
  cudaEvent_t mttkrp_begin = nullptr, mttkrp_end = nullptr, sum_end = nullptr;
  cudaEvent_t gather_begin = nullptr, gather_end = nullptr;
  cudaEvent_t copied = nullptr;  // no timing: a copy to the lead is done
  bool mttkrp_pending = false, gather_pending = false;
  double mttkrp_seconds = 0.0, exchange_seconds = 0.0;
};

}  // namespace

struct spt_plugin_cp_group {
  const nccl::Api* api = nullptr;
  std::vector<int> devices;
  std::vector<spt::cuda::CpAlsSession*> runs;
  std::vector<spt::cuda::CpAlsBuffers> buffers;  // per session
  std::vector<nccl::Comm> comms;                 // comms[i]: rank i on devices[i]
  std::vector<StepTimes> times;                  // per session
  std::vector<uint64_t> share_rows;              // per mode: ceil(dims[m] / P)
  int local_mode = -1;                           // rows that follow the nonzeros (-1: none)
  std::vector<uint64_t> local_rows;              // its count + 1 bounds
  int datatype = nccl::kFloat64;
  // A step failed: a collective may be left waiting for a device that never
  // joined it, so the communicators are aborted, not drained and destroyed.
  bool failed = false;

  ~spt_plugin_cp_group() {
    // The sessions own all their rows again (they outlive the group).
    for (size_t i = 0; i < runs.size() && i < buffers.size(); ++i) {
      try {
        for (uint32_t m = 0; m < buffers[i].dims.size(); ++m) runs[i]->set_rows(m, 0, buffers[i].dims[m]);
      } catch (...) {
      }
    }
    // After a failure the communicators are aborted first (ncclCommAbort
    // ends their pending collectives); otherwise pending collectives finish
    // before the communicators go.
    if (failed)
      for (size_t i = 0; i < comms.size(); ++i)
        if (comms[i]) {
          api->comm_abort(comms[i]);
          comms[i] = nullptr;
        }
    for (size_t i = 0; i < devices.size(); ++i) {
      if (cudaSetDevice(devices[i]) != cudaSuccess) continue;
      if (i < buffers.size()) {
        if (buffers[i].stream) cudaStreamSynchronize(buffers[i].stream);
        if (buffers[i].side) cudaStreamSynchronize(buffers[i].side);
      }
      if (i < comms.size() && comms[i]) api->comm_destroy(comms[i]);
      if (i < times.size())
        for (cudaEvent_t e : {times[i].mttkrp_begin, times[i].mttkrp_end, times[i].sum_end, times[i].gather_begin,
                              times[i].gather_end, times[i].copied})
          if (e) cudaEventDestroy(e);
    }
    cudaGetLastError();
  }
};

namespace spt_plugin {

namespace {

// Runs `queue(i)` (one NCCL call per session) inside one NCCL group; an
// NCCL failure becomes kDevice with `what` in the message.
template <typename Queue>
int grouped(spt_plugin_cp_group& g, const char* what, char* message, size_t message_len, Queue&& queue) {
  nccl::Result r = g.api->group_start();
  if (r != nccl::kSuccess) {
    write_message(message, message_len, std::string(what) + ": ncclGroupStart: " + nccl::describe(*g.api, r));
    return kDevice;
  }
  nccl::Result first_error = nccl::kSuccess;
  for (size_t i = 0; i < g.comms.size(); ++i) {
    const nccl::Result ri = queue(i);
    if (ri != nccl::kSuccess && first_error == nccl::kSuccess) first_error = ri;
  }
  r = g.api->group_end();
  if (first_error == nccl::kSuccess) first_error = r;
  if (first_error != nccl::kSuccess) {
    write_message(message, message_len, std::string(what) + ": " + nccl::describe(*g.api, first_error));
    return kDevice;
  }
  return kOk;
}

}  // namespace

namespace {

// NCCL 2.12 or later orders the collectives of one communicator whatever
// stream they are queued on (a group queues the Grams' sums on a second
// stream); older releases may run them at once. OK, or kUnsupported with
// the reason.
int check_nccl_version(const nccl::Api& api, const std::string& version, char* message, size_t message_len) {
  if (api.version >= 21200) return kOk;
  write_message(message, message_len,
                "NCCL " + version + " from " + api.path + " is older than 2.12, which several GPUs need");
  return kUnsupported;
}

std::string version_text(int v) {
  // 2.9+ encodes major * 10000 + minor * 100 + patch.
  return v >= 10000 ? std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100)
                    : std::to_string(v);
}

}  // namespace

int plugin_collectives_available(const char* nccl_library, char* message, size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    std::string why;
    const nccl::Api* api = nccl::load(nccl_library ? nccl_library : "", why);
    if (!api) {
      write_message(message, message_len, why);
      return kUnsupported;
    }
    const std::string version = version_text(api->version);
    if (int status = check_nccl_version(*api, version, message, message_len); status != kOk) return status;
    write_message(message, message_len, "NCCL " + version + " from " + api->path);
    return kOk;
  });
}

int plugin_cp_group_create(spt_plugin_cp_session* const* sessions, uint32_t count, const char* nccl_library,
                           int32_t local_mode, const uint64_t* local_rows, spt_plugin_cp_group** out, char* message,
                           size_t message_len) {
  return guarded(message, message_len, [&]() -> int {
    if (!out) return kInvalidArgument;
    *out = nullptr;
    if (!sessions || count < 2 || count > spt::cuda::cp_als_max_group) {
      write_message(message, message_len,
                    "cp_group_create: give 2.." + std::to_string(spt::cuda::cp_als_max_group) + " sessions");
      return kInvalidArgument;
    }
    std::string why;
    const nccl::Api* api = nccl::load(nccl_library ? nccl_library : "", why);
    if (!api) {
      write_message(message, message_len, why);
      return kUnsupported;
    }
    if (int status = check_nccl_version(*api, version_text(api->version), message, message_len); status != kOk)
      return status;
    auto g = std::make_unique<spt_plugin_cp_group>();
    g->api = api;
    std::set<int> seen;
    for (uint32_t i = 0; i < count; ++i) {
      spt_plugin_cp_session* s = sessions[i];
      spt::cuda::CpAlsSession* run = s ? s->run.get() : nullptr;
      const int device = s ? s->device : -1;
      if (!run || !seen.insert(device).second) {
        write_message(message, message_len, "cp_group_create: session " + std::to_string(i) +
                                                " is missing or on the device of another session");
        return kInvalidArgument;
      }
      SPT_CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
      g->devices.push_back(device);
      g->runs.push_back(run);
      g->buffers.push_back(run->buffers());
      g->times.emplace_back();
      StepTimes& t = g->times.back();
      for (cudaEvent_t* e : {&t.mttkrp_begin, &t.mttkrp_end, &t.sum_end, &t.gather_begin, &t.gather_end})
        SPT_CUDA_TRY(cudaEventCreate(e), "creating an event");
      SPT_CUDA_TRY(cudaEventCreateWithFlags(&t.copied, cudaEventDisableTiming), "creating an event");
      const spt::cuda::CpAlsBuffers& b = g->buffers.back();
      const spt::cuda::CpAlsBuffers& lead = g->buffers.front();
      if (b.dims != lead.dims || b.rank != lead.rank || b.value_size != lead.value_size) {
        write_message(message, message_len,
                      "cp_group_create: session " + std::to_string(i) + " differs from the first in dims, rank or type");
        return kInvalidArgument;
      }
    }
    g->datatype = g->buffers.front().value_size == sizeof(float) ? nccl::kFloat32 : nccl::kFloat64;
    // Row shares: session i owns rows [i c, min((i + 1) c, I)), or of
    // the local mode [local_rows[i], local_rows[i + 1]).
    const std::vector<uint32_t>& dims = g->buffers.front().dims;
    if (local_mode < -1) {
      write_message(message, message_len, "cp_group_create: local_mode must be -1 (none) or a mode");
      return kInvalidArgument;
    }
    if (local_mode >= 0) {
      bool ok = static_cast<size_t>(local_mode) < dims.size() && local_rows && local_rows[0] == 0 &&
                local_rows[count] == dims[local_mode];
      for (uint32_t i = 0; ok && i < count; ++i) ok = local_rows[i] <= local_rows[i + 1];
      if (!ok) {
        write_message(message, message_len,
                      "cp_group_create: local_rows must rise from 0 to the local mode's size, one bound per session "
                      "and one more");
        return kInvalidArgument;
      }
      g->local_mode = local_mode;
      g->local_rows.assign(local_rows, local_rows + count + 1);
    }
    for (uint32_t m = 0; m < dims.size(); ++m) {
      const uint64_t c = (uint64_t(dims[m]) + count - 1) / count;
      g->share_rows.push_back(c);
      for (uint32_t i = 0; i < count; ++i) {
        if (static_cast<int>(m) == g->local_mode) {
          g->runs[i]->set_rows(m, g->local_rows[i], g->local_rows[i + 1] - g->local_rows[i]);
          continue;
        }
        const uint64_t first = std::min<uint64_t>(uint64_t(i) * c, dims[m]);
        const uint64_t last = std::min<uint64_t>(first + c, dims[m]);
        g->runs[i]->set_rows(m, first, last - first);
      }
    }
    // NVLink multicast (NVLS), which can take a shared host's GPUs out of
    // service, is off unless the user chose: nccl::load above set
    // NCCL_NVLS_ENABLE=0 when unset, before NCCL first reads it.
    g->comms.assign(count, nullptr);
    const nccl::Result r = api->comm_init_all(g->comms.data(), static_cast<int>(count), g->devices.data());
    if (r != nccl::kSuccess) {
      g->comms.assign(count, nullptr);  // ncclCommInitAll leaves nothing to free on failure
      write_message(message, message_len, "ncclCommInitAll: " + nccl::describe(*api, r));
      return kDevice;
    }
    *out = g.release();
    return kOk;
  });
}

void plugin_cp_group_release(spt_plugin_cp_group* g) { delete g; }

namespace {

// One step of a group: checks g and mode, then body(); a failed step (a
// library_checks::Failure) becomes its status and message, and marks the
// group failed (its communicators are aborted on release).
template <typename Body>
int group_step(spt_plugin_cp_group* g, uint32_t mode, const char* what, char* message, size_t message_len,
               Body&& body) {
  bool valid = false;
  const int status = guarded(message, message_len, [&]() -> int {
    if (!g || g->buffers.empty() || mode >= g->buffers.front().dims.size()) {
      write_message(message, message_len, std::string(what) + ": NULL group or mode out of range");
      return kInvalidArgument;
    }
    valid = true;
    return body();
  });
  if (valid && status != kOk) g->failed = true;
  return status;
}

// body(i, run) on every session, its device current.
template <typename Body>
void each_session(spt_plugin_cp_group& g, Body&& body) {
  for (size_t i = 0; i < g.runs.size(); ++i) {
    spt::cuda::library_checks::check(cudaSetDevice(g.devices[i]), "cudaSetDevice");
    body(i, *g.runs[i]);
  }
}

// Adds the time between two completed events to *seconds.
void add_elapsed(cudaEvent_t from, cudaEvent_t to, double* seconds) {
  using spt::cuda::library_checks::check;
  check(cudaEventSynchronize(to), "waiting for a step");
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  *seconds += 1e-3 * ms;
}

// Reads the pending step times of every session: those of the MTTKRP and
// its sum, of the gather, or both. The steps that wait for the devices
// anyway (normal_matrix) read them, so that a step queued behind an
// exchange never waits for it here.
void collect_times(spt_plugin_cp_group& g, bool mttkrp, bool gather) {
  each_session(g, [&](size_t i, spt::cuda::CpAlsSession&) {
    StepTimes& t = g.times[i];
    if (mttkrp && t.mttkrp_pending) {
      add_elapsed(t.mttkrp_begin, t.mttkrp_end, &t.mttkrp_seconds);
      add_elapsed(t.mttkrp_end, t.sum_end, &t.exchange_seconds);
      t.mttkrp_pending = false;
    }
    if (gather && t.gather_pending) {
      add_elapsed(t.gather_begin, t.gather_end, &t.exchange_seconds);
      t.gather_pending = false;
    }
  });
}

void record(cudaEvent_t e, cudaStream_t stream) {
  spt::cuda::library_checks::check(cudaEventRecord(e, stream), "cudaEventRecord");
}

// Every other session's rows of the local mode's factor into the lead's,
// each copy on its session's stream; the lead's stream waits for them.
void copy_local_rows_to_lead(spt_plugin_cp_group& g, uint32_t mode) {
  using spt::cuda::library_checks::check;
  const size_t row_bytes = size_t(g.buffers.front().rank) * g.buffers.front().value_size;
  char* lead = static_cast<char*>(g.buffers.front().factors[mode]);
  each_session(g, [&](size_t i, spt::cuda::CpAlsSession&) {
    if (i == 0) return;
    const uint64_t first = g.local_rows[i], rows = g.local_rows[i + 1] - first;
    const spt::cuda::CpAlsBuffers& b = g.buffers[i];
    if (rows > 0)
      check(cudaMemcpyPeerAsync(lead + first * row_bytes, g.devices.front(),
                                static_cast<char*>(b.factors[mode]) + first * row_bytes, g.devices[i],
                                rows * row_bytes, b.stream),
            "copying factor rows to the lead device");
    record(g.times[i].copied, b.stream);
  });
  check(cudaSetDevice(g.devices.front()), "cudaSetDevice");
  for (size_t i = 1; i < g.runs.size(); ++i)
    check(cudaStreamWaitEvent(g.buffers.front().stream, g.times[i].copied, 0), "cudaStreamWaitEvent");
}

}  // namespace

int plugin_cp_group_mttkrp(spt_plugin_cp_group* g, uint32_t mode, char* message, size_t message_len) {
  return group_step(g, mode, "cp_group_mttkrp", message, message_len, [&]() -> int {
    collect_times(*g, true, false);
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession& run) {
      record(g->times[i].mttkrp_begin, g->buffers[i].stream);
      run.mttkrp(mode);
      record(g->times[i].mttkrp_end, g->buffers[i].stream);
    });
    // In place: session i's rows [i c, (i + 1) c) receive the sums (the
    // buffer's slack rows past dims[mode] are summed too, and never read).
    // The local mode's output is whole on each session's rows already.
    const size_t share = size_t(g->share_rows[mode]) * g->buffers.front().rank;
    const size_t bytes = g->buffers.front().value_size;
    if (static_cast<int>(mode) != g->local_mode)
      if (int status = grouped(*g, "summing the MTTKRP over the devices", message, message_len, [&](size_t i) {
            const spt::cuda::CpAlsBuffers& b = g->buffers[i];
            char* base = static_cast<char*>(b.mttkrp);
            return g->api->reduce_scatter(base, base + i * share * bytes, share, g->datatype, nccl::kSum,
                                          g->comms[i], b.stream);
          });
          status != kOk)
        return status;
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession&) {
      record(g->times[i].sum_end, g->buffers[i].stream);
      g->times[i].mttkrp_pending = true;
    });
    return kOk;
  });
}

int plugin_cp_group_normal_matrix(spt_plugin_cp_group* g, uint32_t mode, spt_plugin_cp_normal_info* info,
                                  char* message, size_t message_len) {
  return group_step(g, mode, "cp_group_normal_matrix", message, message_len, [&]() -> int {
    if (!info) {
      write_message(message, message_len, "cp_group_normal_matrix: NULL info");
      return kInvalidArgument;
    }
    // Every session factors the same matrix (the Grams are the same
    // everywhere); the lead's answer decides the solve for all.
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.enqueue_normal_matrix(mode); });
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession& run) {
      const spt_plugin_cp_normal_info mine = run.read_normal_matrix();
      if (i == 0) *info = mine;
    });
    collect_times(*g, true, true);  // every event before the scalars is done
    return kOk;
  });
}

int plugin_cp_group_solve(spt_plugin_cp_group* g, uint32_t mode, int method, int* eigen_info, char* message,
                          size_t message_len) {
  return group_step(g, mode, "cp_group_solve", message, message_len, [&]() -> int {
    if (!eigen_info || (method != SPT_PLUGIN_CP_SOLVE_CHOLESKY && method != SPT_PLUGIN_CP_SOLVE_PSEUDO_INVERSE)) {
      write_message(message, message_len, "cp_group_solve: NULL eigen_info or an unknown method");
      return kInvalidArgument;
    }
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession& run) {
      const int mine = run.solve(mode, method);
      if (i == 0) *eigen_info = mine;
    });
    return kOk;
  });
}

int plugin_cp_group_normalise(spt_plugin_cp_group* g, uint32_t mode, int first_sweep, char* message,
                              size_t message_len) {
  return group_step(g, mode, "cp_group_normalise", message, message_len, [&]() -> int {
    const bool first = first_sweep != 0;
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.column_totals(mode, first); });
    const size_t rank = g->buffers.front().rank;
    if (int status = grouped(*g, "summing the column norms over the devices", message, message_len, [&](size_t i) {
          const spt::cuda::CpAlsBuffers& b = g->buffers[i];
          return g->api->all_reduce(b.column_totals, b.column_totals, rank, nccl::kFloat64,
                                    first ? nccl::kSum : nccl::kMax, g->comms[i], b.stream);
        });
        status != kOk)
      return status;
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.normalise_from_totals(mode, first); });
    return kOk;
  });
}

int plugin_cp_group_gram(spt_plugin_cp_group* g, uint32_t mode, char* message, size_t message_len) {
  return group_step(g, mode, "cp_group_gram", message, message_len, [&]() -> int {
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.gram_sums(mode); });
    const size_t rr = size_t(g->buffers.front().rank) * g->buffers.front().rank;
    if (int status = grouped(*g, "summing the Gram matrix over the devices", message, message_len, [&](size_t i) {
          const spt::cuda::CpAlsBuffers& b = g->buffers[i];
          return g->api->all_reduce(b.gram_sums, b.gram_sums, rr, nccl::kFloat64, nccl::kSum, g->comms[i], b.side);
        });
        status != kOk)
      return status;
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.gram_from_sums(mode); });
    return kOk;
  });
}

int plugin_cp_group_gather(spt_plugin_cp_group* g, uint32_t mode, char* message, size_t message_len) {
  return group_step(g, mode, "cp_group_gather", message, message_len, [&]() -> int {
    collect_times(*g, false, true);
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession&) { record(g->times[i].gather_begin, g->buffers[i].stream); });
    if (static_cast<int>(mode) == g->local_mode) {
      copy_local_rows_to_lead(*g, mode);
    } else {
      const size_t share = size_t(g->share_rows[mode]) * g->buffers.front().rank;
    const size_t bytes = g->buffers.front().value_size;
    if (int status = grouped(*g, "copying a factor's rows to the devices", message, message_len, [&](size_t i) {
          const spt::cuda::CpAlsBuffers& b = g->buffers[i];
          char* base = static_cast<char*>(b.factors[mode]);
          return g->api->all_gather(base + i * share * bytes, base, share, g->datatype, g->comms[i], b.stream);
        });
        status != kOk)
      return status;
    }
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession&) {
      record(g->times[i].gather_end, g->buffers[i].stream);
      g->times[i].gather_pending = true;
    });
    return kOk;
  });
}

int plugin_cp_group_fit_terms(spt_plugin_cp_group* g, spt_plugin_cp_fit_terms* out, char* message,
                              size_t message_len) {
  return group_step(g, 0, "cp_group_fit_terms", message, message_len, [&]() -> int {
    if (!out) {
      write_message(message, message_len, "cp_group_fit_terms: NULL out");
      return kInvalidArgument;
    }
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.enqueue_fit_terms(); });
    double inner = 0.0, noise_squared = 0.0;
    each_session(*g, [&](size_t i, spt::cuda::CpAlsSession& run) {
      const spt_plugin_cp_fit_terms mine = run.read_fit_terms();
      inner += mine.inner;
      noise_squared += mine.inner_error * mine.inner_error;
      if (i == 0) out->norm_model_squared = mine.norm_model_squared;
    });
    out->inner = inner;
    out->inner_error = std::sqrt(noise_squared);
    return kOk;
  });
}

int plugin_cp_group_exact_inner(spt_plugin_cp_group* g, double* inner, char* message, size_t message_len) {
  return group_step(g, 0, "cp_group_exact_inner", message, message_len, [&]() -> int {
    if (!inner) {
      write_message(message, message_len, "cp_group_exact_inner: NULL inner");
      return kInvalidArgument;
    }
    for (spt::cuda::CpAlsSession* run : g->runs)
      if (!run->has_exact_inner()) {
        write_message(message, message_len, "cp_group_exact_inner: a session holds no COO copy of the tensor");
        return kUnsupported;
      }
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { run.enqueue_exact_inner(); });
    double total = 0.0;
    each_session(*g, [&](size_t, spt::cuda::CpAlsSession& run) { total += run.read_exact_inner(); });
    *inner = total;
    return kOk;
  });
}

int plugin_cp_group_times(spt_plugin_cp_group* g, double* mttkrp_seconds, double* exchange_seconds, uint32_t count,
                          char* message, size_t message_len) {
  return group_step(g, 0, "cp_group_times", message, message_len, [&]() -> int {
    if (!mttkrp_seconds || !exchange_seconds || count != g->runs.size()) {
      write_message(message, message_len, "cp_group_times: NULL arrays or count is not the group's size");
      return kInvalidArgument;
    }
    collect_times(*g, true, true);
    for (uint32_t i = 0; i < count; ++i) {
      mttkrp_seconds[i] = g->times[i].mttkrp_seconds;
      exchange_seconds[i] = g->times[i].exchange_seconds;
    }
    return kOk;
  });
}

}  // namespace spt_plugin
