/* SPTENSOR_TUCKER  Tucker decomposition (HOOI) of a sparse tensor with libsptensor.
 *
 *   [G, U, INFO] = sptensor_tucker(SUBS, VALS, DIMS, RANKS)
 *   [G, U, INFO] = sptensor_tucker(SUBS, VALS, DIMS, RANKS, OPTS)
 *
 * The tensor: SUBS nnz x N (1-based, double or uint32), VALS nnz x 1 double,
 * DIMS 1 x N or []. RANKS: 1 x N core sizes (or one number for every mode).
 * Numerics follow Tensor Toolbox's tucker_als: X ~ G x_1 U{1} x_2 U{2} ... x_N U{N}.
 * G: RANKS(1) x ... x RANKS(N) double array; U: 1 x N cell of DIMS(n) x
 * RANKS(n) matrices with orthonormal columns; INFO: struct with fit,
 * iterations, fits (fit after each sweep).
 * OPTS (struct, all optional):
 *   maxiters  maximum HOOI sweeps (default 50)
 *   tol       stop when the fit changes by less than tol (default 1e-4)
 *   init      'hosvd' (default, as tucker_als 'nvecs') or 'random'
 *   seed      seed for init 'random' (default 0)
 *   threads   OpenMP threads (default: OMP_NUM_THREADS or all cores)
 *   display   print the fit every display iterations, as Tensor Toolbox's
 *             printitn (default 0: never)
 * Ctrl-C (Octave) stops the run within one iteration: sptensor:interrupted.
 * Errors: sptensor:usage (bad arguments, an unknown OPTS field, a rank above
 * its dimension; indices in messages are 1-based), sptensor:interrupted, and
 * the sptensor:SPT_ERR_* of spt_tucker_hooi.
 */
#include "sptensor_mex.h"

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  spt_mex_handles h = {0};
  const mxArray *opts = nrhs > 4 ? prhs[4] : NULL;
  const mxArray *field;
  spt_tucker_options o;
  spt_index ranks[SPT_MEX_MAX_HANDLES];
  mwSize core_dims[SPT_MEX_MAX_HANDLES];
  uint32_t order, m;
  mwSize count_ranks, total = 1;
  const double *r;
  spt_ttensor_summary result;
  int count = 0;
  const double *fits = NULL;
  const void *core = NULL;
  const char *info_fields[] = {"fit", "iterations", "fits"};
  static const char *const accepted[] = {"maxiters", "tol", "init", "seed", "threads", "display"};
  spt_mex_progress progress = {0, 0, 0};
  spt_index dims[SPT_MEX_MAX_HANDLES];
  char text[256];
  spt_status st;

  if (nrhs < 4 || nrhs > 5 || nlhs > 3)
    spt_mex_usage(&h, "usage: [G, U, info] = sptensor_tucker(subs, vals, dims, ranks [, opts])");
  spt_mex_check_fields(&h, opts, accepted, (int)(sizeof accepted / sizeof *accepted), "sptensor_tucker");
  spt_mex_context(&h, opts);
  spt_mex_tensor(&h, prhs[0], prhs[1], prhs[2]);
  order = spt_mex_tensor_summary(&h).order;
  if (order > SPT_MEX_MAX_HANDLES) spt_mex_usage(&h, "too many modes for this example gateway");
  spt_mex_check(&h, spt_coo_dims(h.coo, dims), "querying dims");
  progress.display = spt_mex_display(&h, opts);
  count_ranks = mxGetNumberOfElements(prhs[3]);
  if (!spt_mex_is_real_double(prhs[3]) || (count_ranks != 1 && count_ranks != order))
    spt_mex_usage(&h, "RANKS must be one number or one per mode");
  r = mxGetPr(prhs[3]);
  for (m = 0; m < order; ++m) {
    double v = r[count_ranks == 1 ? 0 : m];
    if (!(v >= 1 && v <= 4294967295.0) || v != (double)(spt_index)v) spt_mex_usage(&h, "RANKS must be whole numbers >= 1");
    ranks[m] = (spt_index)v;
    if (ranks[m] > dims[m]) {
      snprintf(text, sizeof text, "RANKS(%u) = %u exceeds DIMS(%u) = %u", (unsigned)m + 1, (unsigned)ranks[m],
               (unsigned)m + 1, (unsigned)dims[m]);
      spt_mex_usage(&h, text);
    }
  }

  spt_mex_check(&h, spt_tucker_options_init(&o), "initialising options");
  o.ranks = ranks;
  o.ranks_count = order;
  if ((field = spt_mex_field(&h, opts, "maxiters"))) o.max_iters = (int)spt_mex_scalar(&h, field, "opts.maxiters", 1, 1);
  if ((field = spt_mex_field(&h, opts, "tol"))) o.tol = spt_mex_scalar(&h, field, "opts.tol", 0, 0);
  if ((field = spt_mex_field(&h, opts, "seed"))) o.seed = (uint64_t)spt_mex_scalar(&h, field, "opts.seed", 0, 1);
  if ((field = spt_mex_field(&h, opts, "init"))) {
    char name[16] = "";
    if (!mxIsChar(field) || mxGetString(field, name, sizeof name) != 0) name[0] = '\0';
    if (!strcmp(name, "hosvd")) o.init = SPT_TUCKER_INIT_HOSVD;
    else if (!strcmp(name, "random")) o.init = SPT_TUCKER_INIT_RANDOM;
    else spt_mex_usage(&h, "opts.init must be 'hosvd' or 'random'");
  }

  o.callback = spt_mex_iteration;
  o.callback_data = &progress;
  st = spt_tucker_hooi(h.ctx, h.coo, &o, &h.ttensor);
  spt_mex_stop_if_interrupted(&h, &progress, "Tucker-HOOI");
  spt_mex_check(&h, st, "Tucker-HOOI");

  /* The core is stored first index fastest, MATLAB's own order: one memcpy. */
  for (m = 0; m < order; ++m) {
    core_dims[m] = ranks[m];
    total *= ranks[m];
  }
  spt_mex_check(&h, spt_ttensor_core(h.ttensor, &core), "reading the core");
  plhs[0] = mxCreateNumericArray(order, core_dims, mxDOUBLE_CLASS, mxREAL);
  memcpy(mxGetPr(plhs[0]), core, total * sizeof(double));
  if (nlhs > 1) {
    plhs[1] = mxCreateCellMatrix(1, order);
    for (m = 0; m < order; ++m) {
      const spt_matrix *f = NULL;
      spt_mex_check(&h, spt_ttensor_factor(h.ttensor, m, &f), "reading a factor");
      mxSetCell(plhs[1], m, spt_mex_matrix_out(&h, f));
    }
  }
  if (nlhs > 2) {
    result.struct_size = sizeof result;
    spt_mex_check(&h, spt_ttensor_info(h.ctx, h.ttensor, &result), "reading the result");
    spt_mex_check(&h, spt_ttensor_history(h.ttensor, &count, &fits, NULL), "reading the history");
    plhs[2] = mxCreateStructMatrix(1, 1, 3, info_fields);
    mxSetField(plhs[2], 0, "fit", mxCreateDoubleScalar(result.fit));
    mxSetField(plhs[2], 0, "iterations", mxCreateDoubleScalar(result.iterations));
    mxSetField(plhs[2], 0, "fits", spt_mex_row(fits, (mwSize)count));
  }
  spt_mex_free_all(&h);
}
