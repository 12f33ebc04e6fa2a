/* SPTENSOR_READ  Read a sparse tensor file with libsptensor.
 *
 *   [SUBS, VALS, DIMS] = sptensor_read(FILENAME)
 *   [SUBS, VALS, DIMS] = sptensor_read(FILENAME, OPTS)
 *
 * FILENAME: FROSTT .tns (1-based text), extended .tns, SPLATT .bin or
 * libsptensor .sptb, optionally gzip/xz/zstd compressed (detected).
 * SUBS: nnz x N double, 1-based subscripts; VALS: nnz x 1 double;
 * DIMS: 1 x N double. With Tensor Toolbox: X = sptensor(SUBS, VALS, DIMS).
 * Nonzeros come in file order; repeated coordinates are kept.
 * OPTS (struct, optional): threads (parser threads; default: all cores or
 * OMP_NUM_THREADS).
 * Errors: sptensor:SPT_ERR_IO (cannot open), sptensor:SPT_ERR_PARSE (the
 * message gives FILE:LINE), sptensor:usage.
 */
#include "sptensor_mex.h"

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  spt_mex_handles h = {0};
  char *path;
  spt_coo_summary summary;
  uint32_t order, m;
  spt_nnz nnz, k;
  spt_index *dims;
  const void *values;
  double *subs, *dims_out;
  static const char *const accepted[] = {"threads"};

  if (nrhs < 1 || nrhs > 2 || nlhs > 3) spt_mex_usage(&h, "usage: [subs, vals, dims] = sptensor_read(filename [, opts])");
  if (!mxIsChar(prhs[0])) spt_mex_usage(&h, "FILENAME must be a character vector");
  spt_mex_check_fields(&h, nrhs > 1 ? prhs[1] : NULL, accepted, 1, "sptensor_read");
  spt_mex_context(&h, nrhs > 1 ? prhs[1] : NULL);
  path = mxArrayToString(prhs[0]);
  spt_mex_check(&h, spt_read(h.ctx, path, NULL, &h.coo), "reading the tensor");
  mxFree(path);
  summary = spt_mex_tensor_summary(&h); /* dtype float64: spt_read's default */
  order = summary.order;
  nnz = summary.nnz;

  /* Subscripts: the library keeps 0-based uint32 per mode; MATLAB wants
   * 1-based doubles, so this one conversion is the only copy. */
  plhs[0] = mxCreateDoubleMatrix((mwSize)nnz, order, mxREAL);
  subs = mxGetPr(plhs[0]);
  for (m = 0; m < order; ++m) {
    const spt_index *idx = NULL;
    spt_mex_check(&h, spt_coo_indices(h.coo, m, &idx), "reading subscripts");
    for (k = 0; k < nnz; ++k) subs[m * nnz + k] = (double)idx[k] + 1.0;
  }
  if (nlhs > 1) {
    plhs[1] = mxCreateDoubleMatrix((mwSize)nnz, 1, mxREAL);
    spt_mex_check(&h, spt_coo_values(h.coo, &values), "reading values");
    if (nnz) memcpy(mxGetPr(plhs[1]), values, nnz * sizeof(double)); /* dtype is float64 (spt_read default) */
  }
  if (nlhs > 2) {
    dims = (spt_index *)mxMalloc(order * sizeof *dims);
    spt_mex_check(&h, spt_coo_dims(h.coo, dims), "reading dims");
    plhs[2] = mxCreateDoubleMatrix(1, order, mxREAL);
    dims_out = mxGetPr(plhs[2]);
    for (m = 0; m < order; ++m) dims_out[m] = dims[m];
    mxFree(dims);
  }
  spt_mex_free_all(&h);
}
