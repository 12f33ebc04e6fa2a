/* SPTENSOR_GCP  Generalized CP decomposition (GCP-OPT) of a sparse tensor with libsptensor.
 *
 *   [U, INFO] = sptensor_gcp(SUBS, VALS, DIMS, R)
 *   [U, INFO] = sptensor_gcp(SUBS, VALS, DIMS, R, OPTS)
 *
 * The tensor: SUBS nnz x N (1-based, double or uint32), VALS nnz x 1 double,
 * DIMS 1 x N or [] (largest subscripts). Minimises the sum over every entry
 * of the full tensor (zeros included; at most 1e8 entries) of the loss
 * f(x, m), m = sum_r U{1}(:,r) o ... o U{N}(:,r), by L-BFGS-B, with the
 * numerics of pyttb gcp_opt (docs/gcp.md). U: 1 x N cell of DIMS(n) x R
 * matrices (as optimised, not normalised); INFO: struct with objective,
 * iterations, converged (logical), objectives (after each iteration) and
 * seconds (since the start, at each iteration).
 * OPTS (struct, all optional):
 *   loss      'gaussian' (default), 'poisson', 'poisson-log', 'bernoulli'
 *             (logit link), 'bernoulli-odds', 'gamma', 'rayleigh', 'huber'
 *   huber     the Huber threshold (default 0.25)
 *   lower     lower bound on every factor entry (default: the loss's own)
 *   maxiters  L-BFGS-B iterations (default 1000)
 *   pgtol     projected-gradient tolerance (default 1e-5)
 *   seed      seed of the random initial factors (default 0), the stream of
 *             `sptensor cpd --model gcp --seed`
 *   init      1 x N cell of DIMS(n) x R starting factors (read in place)
 *   threads   OpenMP threads (default: OMP_NUM_THREADS or all cores)
 *   display   print the objective every display iterations (default 0)
 *   optimizer 'lbfgsb' (GCP-OPT, default) or 'sgd' (GCP-SGD: pyttb gcp_opt with
 *             Adam, stratified samples of nonzeros and zeros, any tensor size;
 *             maxiters = epochs, INFO.objective(s) = the objective estimate,
 *             INFO.iterations = epochs; the seed also seeds the samples)
 *   rate, epochiters, maxfails   GCP-SGD: Adam learning rate (default 1e-3),
 *             steps per epoch (default 1000), failed epochs allowed (default 1)
 *   gsamples, fsamples   GCP-SGD: nonzeros and zeros sampled per step / in the
 *             objective estimate, that many of each (default pyttb's)
 * Reaching maxiters is not an error (INFO.converged is false).
 * Ctrl-C (Octave) stops the run within one iteration: sptensor:interrupted.
 * Errors: sptensor:usage (bad arguments, an unknown OPTS field), and the
 * sptensor:SPT_ERR_* of spt_gcp_opt (e.g. data the loss cannot take).
 */
#include "sptensor_mex.h"
#include "sptensor/gcp.h"

/* Set for a GCP-SGD run: the callback then gets epochs, estimates and the learning rate. */
static int gcp_sgd_run = 0;

/* The per-iteration callback: Ctrl-C, and the objective every `display` iterations. */
static int gcp_iteration(void *data, int iteration, double objective, double pg_norm, double seconds) {
  spt_mex_progress *p = (spt_mex_progress *)data;
  (void)seconds;
  if (spt_mex_interrupted()) {
    p->interrupted = 1;
    return 1;
  }
  if (p->display > 0 && iteration % p->display == 0) {
    if (gcp_sgd_run) mexPrintf(" Epoch %2d: f-est = %e step = %7.1e\n", iteration, objective, pg_norm);
    else mexPrintf(" Iter %2d: f = %e |proj grad| = %7.1e\n", iteration, objective, pg_norm);
  }
  return 0;
}

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  spt_mex_handles h = {0};
  const mxArray *opts = nrhs > 4 ? prhs[4] : NULL;
  const mxArray *field;
  spt_gcp_options o;
  const spt_matrix *init[SPT_MEX_MAX_HANDLES];
  uint32_t order, m;
  spt_index rank;
  spt_status st;
  double objective = 0;
  int iterations = 0, converged = 0, count = 0;
  const double *objectives = NULL, *seconds = NULL;
  const char *info_fields[] = {"objective", "iterations", "converged", "objectives", "seconds"};
  static const char *const accepted[] = {"loss",     "huber", "lower",      "maxiters", "pgtol",
                                         "seed",     "init",  "threads",    "display",  "optimizer",
                                         "rate",     "epochiters", "maxfails", "gsamples", "fsamples"};
  spt_mex_progress progress = {0, 0, 0};
  spt_index dims[SPT_MEX_MAX_HANDLES];

  if (nrhs < 4 || nrhs > 5 || nlhs > 2)
    spt_mex_usage(&h, "usage: [U, info] = sptensor_gcp(subs, vals, dims, R [, opts])");
  spt_mex_check_fields(&h, opts, accepted, (int)(sizeof accepted / sizeof *accepted), "sptensor_gcp");
  spt_mex_context(&h, opts);
  spt_mex_tensor(&h, prhs[0], prhs[1], prhs[2]);
  order = spt_mex_tensor_summary(&h).order;
  spt_mex_check(&h, spt_coo_dims(h.coo, dims), "querying dims");
  rank = (spt_index)spt_mex_scalar(&h, prhs[3], "R", 1, 1);
  progress.display = spt_mex_display(&h, opts);

  spt_mex_check(&h, spt_gcp_options_init(&o), "initialising options");
  o.rank = rank;
  if ((field = spt_mex_field(&h, opts, "loss"))) {
    static const char *const names[] = {"gaussian", "bernoulli-odds", "bernoulli", "poisson", "poisson-log",
                                        "rayleigh", "gamma", "huber"};
    static const spt_gcp_loss codes[] = {SPT_GCP_LOSS_GAUSSIAN, SPT_GCP_LOSS_BERNOULLI_ODDS,
                                         SPT_GCP_LOSS_BERNOULLI_LOGIT, SPT_GCP_LOSS_POISSON,
                                         SPT_GCP_LOSS_POISSON_LOG, SPT_GCP_LOSS_RAYLEIGH,
                                         SPT_GCP_LOSS_GAMMA, SPT_GCP_LOSS_HUBER};
    char name[32] = "";
    int i, found = 0;
    if (!mxIsChar(field) || mxGetString(field, name, sizeof name) != 0) name[0] = '\0';
    for (i = 0; i < (int)(sizeof codes / sizeof *codes); ++i)
      if (!strcmp(name, names[i])) {
        o.loss = codes[i];
        found = 1;
      }
    if (!found)
      spt_mex_usage(&h, "opts.loss must be 'gaussian', 'poisson', 'poisson-log', 'bernoulli', 'bernoulli-odds', "
                        "'gamma', 'rayleigh' or 'huber'");
  }
  if ((field = spt_mex_field(&h, opts, "huber"))) o.loss_parameter = spt_mex_scalar(&h, field, "opts.huber", 0, 0);
  if ((field = spt_mex_field(&h, opts, "lower"))) {
    if (!spt_mex_is_real_double(field) || mxGetNumberOfElements(field) != 1)
      spt_mex_usage(&h, "opts.lower must be a real scalar");
    o.lower_bound = mxGetScalar(field);
  }
  if ((field = spt_mex_field(&h, opts, "maxiters"))) o.max_iters = (int)spt_mex_scalar(&h, field, "opts.maxiters", 1, 1);
  if ((field = spt_mex_field(&h, opts, "pgtol"))) o.pgtol = spt_mex_scalar(&h, field, "opts.pgtol", 0, 0);
  if ((field = spt_mex_field(&h, opts, "seed"))) o.seed = (uint64_t)spt_mex_scalar(&h, field, "opts.seed", 0, 1);
  if ((field = spt_mex_field(&h, opts, "optimizer"))) {
    char name[16];
    if (!mxIsChar(field) || mxGetString(field, name, sizeof name) != 0) name[0] = '\0';
    if (strcmp(name, "lbfgsb") == 0) o.optimizer = SPT_GCP_OPTIMIZER_LBFGSB;
    else if (strcmp(name, "sgd") == 0) o.optimizer = SPT_GCP_OPTIMIZER_SGD;
    else spt_mex_usage(&h, "opts.optimizer must be 'lbfgsb' or 'sgd'");
  }
  gcp_sgd_run = o.optimizer == SPT_GCP_OPTIMIZER_SGD;
  if ((field = spt_mex_field(&h, opts, "rate"))) o.rate = spt_mex_scalar(&h, field, "opts.rate", 0, 0);
  if ((field = spt_mex_field(&h, opts, "epochiters")))
    o.epoch_iters = (int)spt_mex_scalar(&h, field, "opts.epochiters", 1, 1);
  if ((field = spt_mex_field(&h, opts, "maxfails"))) o.max_fails = (int)spt_mex_scalar(&h, field, "opts.maxfails", 0, 1);
  if ((field = spt_mex_field(&h, opts, "gsamples")))
    o.gradient_nonzeros = o.gradient_zeros = (spt_nnz)spt_mex_scalar(&h, field, "opts.gsamples", 1, 1);
  if ((field = spt_mex_field(&h, opts, "fsamples")))
    o.function_nonzeros = o.function_zeros = (spt_nnz)spt_mex_scalar(&h, field, "opts.fsamples", 1, 1);
  if ((field = spt_mex_field(&h, opts, "init"))) {
    if (!mxIsCell(field) || mxGetNumberOfElements(field) != order || order > SPT_MEX_MAX_HANDLES)
      spt_mex_usage(&h, "opts.init must be a cell with one DIMS(n) x R matrix per mode");
    for (m = 0; m < order; ++m) {
      const mxArray *u = mxGetCell(field, m);
      char name[32];
      snprintf(name, sizeof name, "opts.init{%u}", (unsigned)m + 1);
      if (!u) u = mxCreateDoubleMatrix(0, 0, mxREAL); /* an empty cell: reported as a 0 x 0 matrix below */
      spt_mex_check_shape(&h, u, name, dims[m], rank);
      init[m] = spt_mex_wrap(&h, u, name); /* no copy: the library reads MATLAB's memory */
    }
    o.init = SPT_GCP_INIT_USER;
    o.init_factors = init;
  }

  o.callback = gcp_iteration;
  o.callback_data = &progress;
  st = spt_gcp_opt(h.ctx, h.coo, &o, &h.ktensor);
  spt_mex_stop_if_interrupted(&h, &progress, "GCP-OPT");
  spt_mex_check(&h, st, "GCP-OPT");

  plhs[0] = mxCreateCellMatrix(1, order);
  for (m = 0; m < order; ++m) {
    spt_matrix *f = NULL;
    spt_mex_check(&h, spt_ktensor_factor(h.ktensor, m, &f), "reading a factor");
    mxSetCell(plhs[0], m, spt_mex_matrix_out(&h, f));
  }
  if (nlhs > 1) {
    spt_mex_check(&h, spt_ktensor_result(h.ktensor, &objective, &iterations, &converged), "reading the result");
    spt_mex_check(&h, spt_ktensor_history(h.ktensor, &count, &objectives, &seconds), "reading the history");
    plhs[1] = mxCreateStructMatrix(1, 1, 5, info_fields);
    mxSetField(plhs[1], 0, "objective", mxCreateDoubleScalar(objective));
    mxSetField(plhs[1], 0, "iterations", mxCreateDoubleScalar(iterations));
    mxSetField(plhs[1], 0, "converged", mxCreateLogicalScalar(converged != 0));
    mxSetField(plhs[1], 0, "objectives", spt_mex_row(objectives, (mwSize)count));
    mxSetField(plhs[1], 0, "seconds", spt_mex_row(seconds, (mwSize)count));
  }
  spt_mex_free_all(&h);
}
