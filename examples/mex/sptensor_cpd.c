/* SPTENSOR_CPD  CP decomposition (CP-ALS) of a sparse tensor with libsptensor.
 *
 *   [LAMBDA, U, INFO] = sptensor_cpd(SUBS, VALS, DIMS, R)
 *   [LAMBDA, U, INFO] = sptensor_cpd(SUBS, VALS, DIMS, R, OPTS)
 *
 * The tensor: SUBS nnz x N (1-based, double or uint32), VALS nnz x 1 double,
 * DIMS 1 x N or [] (largest subscripts). Numerics follow Tensor Toolbox's
 * cp_als: X ~ sum_r LAMBDA(r) U{1}(:,r) o U{2}(:,r) o ... o U{N}(:,r).
 * LAMBDA: R x 1 (decreasing); U: 1 x N cell of DIMS(n) x R matrices (unit
 * columns); INFO: struct with fit, iterations, converged (logical), fits
 * (fit after each sweep) and seconds (time of each sweep).
 * OPTS (struct, all optional):
 *   maxiters  maximum sweeps (default 50)
 *   tol       stop when the fit changes by less than tol (default 1e-4)
 *   seed      seed of the random initial factors (default 0), the same
 *             stream as `sptensor cpd --seed`, so equal seeds give equal
 *             results
 *   init      1 x N cell of DIMS(n) x R starting factors (read in place)
 *   format    'auto' (default), 'coo', 'csf', 'hicoo' or 'fcoo'; 'hbcsf' and
 *             'hls' are named but CP-ALS does not run on them
 *             (sptensor:SPT_ERR_UNSUPPORTED)
 *   threads   OpenMP threads (default: OMP_NUM_THREADS or all cores)
 *   display   print the fit every display iterations, as Tensor Toolbox's
 *             printitn (default 0: never)
 * Reaching maxiters is not an error (INFO.converged is false).
 * Ctrl-C (Octave) stops the run within one iteration: sptensor:interrupted.
 * Errors: sptensor:usage (bad arguments, an unknown OPTS field, a subscript
 * outside DIMS; indices in messages are 1-based), sptensor:interrupted, and
 * the sptensor:SPT_ERR_* of spt_cpd_als.
 */
#include "sptensor_mex.h"

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  spt_mex_handles h = {0};
  const mxArray *opts = nrhs > 4 ? prhs[4] : NULL;
  const mxArray *field;
  spt_cpd_options o;
  const spt_matrix *init[SPT_MEX_MAX_HANDLES];
  uint32_t order, m;
  spt_index rank;
  spt_status st;
  double fit = 0;
  int iterations = 0, converged = 0, count = 0;
  const double *fits = NULL, *seconds = NULL;
  const char *info_fields[] = {"fit", "iterations", "converged", "fits", "seconds"};
  static const char *const accepted[] = {"maxiters", "tol", "seed", "init", "format", "threads", "display"};
  spt_mex_progress progress = {0, 0, 0};
  spt_index dims[SPT_MEX_MAX_HANDLES];

  if (nrhs < 4 || nrhs > 5 || nlhs > 3)
    spt_mex_usage(&h, "usage: [lambda, U, info] = sptensor_cpd(subs, vals, dims, R [, opts])");
  spt_mex_check_fields(&h, opts, accepted, (int)(sizeof accepted / sizeof *accepted), "sptensor_cpd");
  spt_mex_context(&h, opts);
  spt_mex_tensor(&h, prhs[0], prhs[1], prhs[2]);
  order = spt_mex_tensor_summary(&h).order;
  spt_mex_check(&h, spt_coo_dims(h.coo, dims), "querying dims");
  rank = (spt_index)spt_mex_scalar(&h, prhs[3], "R", 1, 1);
  progress.display = spt_mex_display(&h, opts);

  spt_mex_check(&h, spt_cpd_options_init(&o), "initialising options");
  o.rank = rank;
  if ((field = spt_mex_field(&h, opts, "maxiters"))) o.max_iters = (int)spt_mex_scalar(&h, field, "opts.maxiters", 1, 1);
  if ((field = spt_mex_field(&h, opts, "tol"))) o.tol = spt_mex_scalar(&h, field, "opts.tol", 0, 0);
  if ((field = spt_mex_field(&h, opts, "seed"))) o.seed = (uint64_t)spt_mex_scalar(&h, field, "opts.seed", 0, 1);
  if ((field = spt_mex_field(&h, opts, "format"))) {
    char name[16] = "";
    if (!mxIsChar(field) || mxGetString(field, name, sizeof name) != 0) name[0] = '\0';
    if (!strcmp(name, "auto")) o.format = SPT_TENSOR_FORMAT_AUTO;
    else if (!strcmp(name, "coo")) o.format = SPT_TENSOR_FORMAT_COO;
    else if (!strcmp(name, "csf")) o.format = SPT_TENSOR_FORMAT_CSF;
    else if (!strcmp(name, "hicoo")) o.format = SPT_TENSOR_FORMAT_HICOO;
    else if (!strcmp(name, "fcoo")) o.format = SPT_TENSOR_FORMAT_FCOO;
    else if (!strcmp(name, "hbcsf")) o.format = SPT_TENSOR_FORMAT_HBCSF;
    else if (!strcmp(name, "hls")) o.format = SPT_TENSOR_FORMAT_HLS;
    else spt_mex_usage(&h, "opts.format must be 'auto', 'coo', 'csf', 'hicoo', 'fcoo', 'hbcsf' or 'hls'");
  }
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
    o.init = SPT_CPD_INIT_USER;
    o.init_factors = init;
  }

  o.callback = spt_mex_iteration;
  o.callback_data = &progress;
  st = spt_cpd_als(h.ctx, h.coo, &o, &h.ktensor);
  spt_mex_stop_if_interrupted(&h, &progress, "CP-ALS");
  spt_mex_check(&h, st, "CP-ALS");

  { /* lambda */
    void *lambda = NULL;
    spt_mex_check(&h, spt_ktensor_lambda(h.ktensor, &lambda), "reading lambda");
    plhs[0] = mxCreateDoubleMatrix(rank, 1, mxREAL);
    memcpy(mxGetPr(plhs[0]), lambda, rank * sizeof(double));
  }
  if (nlhs > 1) {
    plhs[1] = mxCreateCellMatrix(1, order);
    for (m = 0; m < order; ++m) {
      spt_matrix *f = NULL;
      spt_mex_check(&h, spt_ktensor_factor(h.ktensor, m, &f), "reading a factor");
      mxSetCell(plhs[1], m, spt_mex_matrix_out(&h, f));
    }
  }
  if (nlhs > 2) {
    spt_mex_check(&h, spt_ktensor_result(h.ktensor, &fit, &iterations, &converged), "reading the result");
    spt_mex_check(&h, spt_ktensor_history(h.ktensor, &count, &fits, &seconds), "reading the history");
    plhs[2] = mxCreateStructMatrix(1, 1, 5, info_fields);
    mxSetField(plhs[2], 0, "fit", mxCreateDoubleScalar(fit));
    mxSetField(plhs[2], 0, "iterations", mxCreateDoubleScalar(iterations));
    mxSetField(plhs[2], 0, "converged", mxCreateLogicalScalar(converged != 0));
    mxSetField(plhs[2], 0, "fits", spt_mex_row(fits, (mwSize)count));
    mxSetField(plhs[2], 0, "seconds", spt_mex_row(seconds, (mwSize)count));
  }
  spt_mex_free_all(&h);
}
