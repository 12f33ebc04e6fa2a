#include "algo/lbfgsb.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"

#ifdef SPT_HAVE_LBFGSB
// liblbfgsb's Fortran 77 entry point (gfortran calling convention: every
// argument by reference, LOGICAL as a 4-byte int, the lengths of the two
// CHARACTER*60 arguments appended by value).
extern "C" void setulb_(const int* n, const int* m, double* x, const double* l, const double* u, const int* nbd,
                        double* f, double* g, const double* factr, const double* pgtol, double* wa, int* iwa,
                        char* task, const int* iprint, char* csave, int* lsave, int* isave, double* dsave,
                        size_t task_length, size_t csave_length);
#endif

namespace spt::algo {

bool lbfgsb_available() {
#ifdef SPT_HAVE_LBFGSB
  return true;
#else
  return false;
#endif
}

#ifdef SPT_HAVE_LBFGSB
namespace {

constexpr size_t kTaskLength = 60;

bool task_is(const char* task, const char* prefix) { return std::strncmp(task, prefix, std::strlen(prefix)) == 0; }

void set_task(char* task, const char* text) {
  std::memset(task, ' ', kTaskLength);
  std::memcpy(task, text, std::strlen(text));
}

std::string trimmed(const char* task) {
  std::string s(task, kTaskLength);
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

}  // namespace
#endif

LbfgsbOutcome lbfgsb_minimize(std::vector<double>& x, double lower, const LbfgsbSettings& settings,
                              const LbfgsbObjective& objective, const LbfgsbProgress& progress) {
#ifndef SPT_HAVE_LBFGSB
  (void)x, (void)lower, (void)settings, (void)objective, (void)progress;
  fail(SPT_ERR_UNSUPPORTED,
       "this libsptensor was built without L-BFGS-B (Debian package liblbfgsb-dev); GCP-OPT needs it: "
       "install it and rebuild");
#else
  require(x.size() <= 0x7FFFFFFFu, "L-BFGS-B takes at most 2^31 - 1 variables, got ", x.size());
  const int n = static_cast<int>(x.size());
  const int m = settings.memory;
  // The bounds, as scipy passes them: nbd 1 = lower bound only, 0 = none;
  // the start is clipped into the bounds first.
  const bool bounded = !std::isinf(lower);
  std::vector<double> l(x.size(), bounded ? lower : 0.0), u(x.size(), 0.0), g(x.size(), 0.0);
  std::vector<int> nbd(x.size(), bounded ? 1 : 0);
  if (bounded)
    for (double& v : x) v = std::max(v, lower);
  const size_t sn = x.size(), sm = static_cast<size_t>(m);
  std::vector<double> wa(2 * sm * sn + 5 * sn + 11 * sm * sm + 8 * sm);
  std::vector<int> iwa(3 * sn);
  char task[kTaskLength + 1] = {}, csave[kTaskLength + 1] = {};
  set_task(task, "START");
  set_task(csave, "");
  int lsave[4] = {}, isave[44] = {};
  double dsave[29] = {};
  const int iprint = -1;
  double f = 0.0;

  LbfgsbOutcome out;
  for (;;) {
    setulb_(&n, &m, x.data(), l.data(), u.data(), nbd.data(), &f, g.data(), &settings.factr, &settings.pgtol,
            wa.data(), iwa.data(), task, &iprint, csave, lsave, isave, dsave, kTaskLength, kTaskLength);
    if (task_is(task, "FG")) {
      f = objective(x.data(), g.data());
      ++out.evaluations;
      continue;
    }
    if (task_is(task, "NEW_X")) {
      ++out.iterations;
      // dsave(13): the infinity norm of the projected gradient at x.
      const bool stop = progress && progress(out.iterations, f, dsave[12]);
      if (stop) {
        out.message = "stopped by the callback";
        break;
      }
      if (out.iterations >= settings.max_iters) {
        out.message = "STOP: TOTAL NO. of ITERATIONS REACHED LIMIT";
        break;
      }
      if (out.evaluations > settings.max_fun_evals) {
        out.message = "STOP: TOTAL NO. of f AND g EVALUATIONS EXCEEDS LIMIT";
        break;
      }
      continue;
    }
    out.message = trimmed(task);
    if (task_is(task, "CONV")) out.converged = true;
    else if (task_is(task, "ERROR")) fail(SPT_ERR_INTERNAL, "L-BFGS-B rejected its input: ", out.message);
    break;  // CONVERGENCE, ABNORMAL_TERMINATION_IN_LNSRCH or WARNING
  }
  out.f = f;
  return out;
#endif
}

}  // namespace spt::algo
