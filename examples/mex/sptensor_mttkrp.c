/* SPTENSOR_MTTKRP  Matricized tensor times Khatri-Rao product with libsptensor.
 *
 *   M = sptensor_mttkrp(SUBS, VALS, DIMS, U, N)
 *   M = sptensor_mttkrp(SUBS, VALS, DIMS, U, N, OPTS)
 *
 * The tensor: SUBS nnz x K (1-based, double or uint32), VALS nnz x 1
 * double, DIMS 1 x K or []. U: 1 x K cell of DIMS(k) x R double matrices
 * (U{N} is not read and may be []). N: the mode, 1-based.
 * M(i, r) = sum over nonzeros with SUBS(:,N) = i of
 *           VALS * prod_{k ~= N} U{k}(SUBS(:,k), r),
 * i.e. Tensor Toolbox's mttkrp(X, U, N). M is DIMS(N) x R.
 * No copies: the factors are read in place and the library writes M
 * directly into the returned array (column-major layout flag).
 * OPTS (struct, optional): threads.
 * Errors: sptensor:usage (bad arguments, a factor of the wrong shape, an
 * unknown OPTS field; indices in messages are 1-based) and the
 * sptensor:SPT_ERR_* of spt_mttkrp.
 */
#include "sptensor_mex.h"

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  spt_mex_handles h = {0};
  const spt_matrix *factors[SPT_MEX_MAX_HANDLES];
  spt_matrix *out = NULL;
  spt_index dims[SPT_MEX_MAX_HANDLES];
  uint32_t order, m, mode;
  mwSize rank = 0;
  static const char *const accepted[] = {"threads"};
  const mxArray *opts = nrhs > 5 ? prhs[5] : NULL;
  char name[32];

  if (nrhs < 5 || nrhs > 6 || nlhs > 1) spt_mex_usage(&h, "usage: M = sptensor_mttkrp(subs, vals, dims, U, n [, opts])");
  spt_mex_check_fields(&h, opts, accepted, 1, "sptensor_mttkrp");
  spt_mex_context(&h, opts);
  spt_mex_tensor(&h, prhs[0], prhs[1], prhs[2]);
  order = spt_mex_tensor_summary(&h).order;
  if (order > SPT_MEX_MAX_HANDLES) spt_mex_usage(&h, "too many modes for this example gateway");
  spt_mex_check(&h, spt_coo_dims(h.coo, dims), "querying dims");
  mode = (uint32_t)spt_mex_scalar(&h, prhs[4], "N", 1, 1);
  if (mode > order) spt_mex_usage(&h, "N must be a mode of the tensor (1 .. number of columns of SUBS)");
  mode -= 1;
  if (!mxIsCell(prhs[3]) || mxGetNumberOfElements(prhs[3]) != order)
    spt_mex_usage(&h, "U must be a cell with one DIMS(k) x R matrix per mode");
  for (m = 0; m < order; ++m) {
    const mxArray *u = mxGetCell(prhs[3], m);
    factors[m] = NULL;
    if (m == mode) continue;
    snprintf(name, sizeof name, "U{%u}", (unsigned)m + 1);
    if (!u) u = mxCreateDoubleMatrix(0, 0, mxREAL); /* an empty cell: reported as a 0 x 0 matrix below */
    /* R is the first factor's column count; every factor must have it. */
    spt_mex_check_shape(&h, u, name, dims[m], rank);
    factors[m] = spt_mex_wrap(&h, u, name);
    rank = mxGetN(u);
  }
  if (rank == 0 && mxGetCell(prhs[3], mode)) rank = mxGetN(mxGetCell(prhs[3], mode)); /* order 1: R from U{1} */
  plhs[0] = mxCreateDoubleMatrix(dims[mode], rank, mxREAL);
  spt_mex_check(&h,
                spt_matrix_wrap(h.ctx, SPT_FLOAT64, dims[mode], rank, SPT_COL_MAJOR, mxGetPr(plhs[0]),
                                dims[mode] ? dims[mode] : 1, &out),
                "wrapping M");
  spt_mex_keep_matrix(&h, out);
  spt_mex_check(&h, spt_mttkrp(h.ctx, h.coo, factors, mode, out), "MTTKRP");
  spt_mex_free_all(&h);
}
