// L-BFGS-B (bound-constrained limited-memory quasi-Newton; Byrd, Lu, Nocedal
// & Zhu, and Morales & Nocedal's version 3.0) through the Debian liblbfgsb
// library's reverse-communication routine setulb, driven as scipy's
// fmin_l_bfgs_b drives it (the same stopping rules and counters), so the
// iterates are scipy's for the same objective and start.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace spt::algo {

struct LbfgsbSettings {
  int memory = 10;            // corrections kept (scipy m)
  double factr = 1e7;         // relative-reduction tolerance in units of DBL_EPSILON
  double pgtol = 1e-5;        // projected-gradient infinity-norm tolerance
  int max_iters = 1000;       // scipy maxiter
  int max_fun_evals = 15000;  // scipy maxfun (checked after each iteration)
};

struct LbfgsbOutcome {
  double f = 0.0;          // objective at the returned x
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;  // stopped by factr or pgtol
  std::string message;     // the routine's task string, or why the driver stopped
};

// Evaluates f at x and writes the gradient into g (both length n).
using LbfgsbObjective = std::function<double(const double* x, double* g)>;
// Called after each iteration with (iteration, f, projected-gradient
// infinity norm); returns true to stop.
using LbfgsbProgress = std::function<bool(int iteration, double f, double projected_gradient_norm)>;

// True when the library was built with liblbfgsb.
bool lbfgsb_available();

// Minimises from x (length n, updated in place) with every variable bounded
// below by `lower` (-inf: unbounded) and no upper bound. Throws
// SPT_ERR_UNSUPPORTED without liblbfgsb and SPT_ERR_INTERNAL when the routine
// reports an input error.
LbfgsbOutcome lbfgsb_minimize(std::vector<double>& x, double lower, const LbfgsbSettings& settings,
                              const LbfgsbObjective& objective, const LbfgsbProgress& progress);

}  // namespace spt::algo
