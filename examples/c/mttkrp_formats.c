/* One MTTKRP on COO, HiCOO and CSF, built from caller arrays without copies
 * where possible, with the results compared.
 *
 *   cc mttkrp_formats.c $(pkg-config --cflags --libs sptensor) -o mttkrp_formats
 *   ./mttkrp_formats
 *
 * Shows: a COO view of caller arrays (spt_coo_create_view: nothing copied),
 * factor matrices wrapped in place (spt_matrix_wrap; column-major, as from
 * Fortran or MATLAB), conversions to HiCOO and CSF, and MTTKRP on each.
 * Exit status 0 when all three agree. */
#include <math.h>
#include <stdio.h>

#include <sptensor/sptensor.h>

#define NNZ 6
#define RANK 2

int main(void) {
  /* A 3 x 4 x 2 tensor, 0-based coordinates stored mode-major (all mode-0
   * indices, then mode 1, then mode 2: MATLAB's subs layout with ld = NNZ). */
  static const spt_index indices[3 * NNZ] = {0, 0, 1, 2, 2, 2, /* mode 0 */
                                             0, 3, 1, 0, 2, 3, /* mode 1 */
                                             0, 1, 1, 0, 1, 0};/* mode 2 */
  static const double values[NNZ] = {1, 2, 3, 4, 5, 6};
  static const spt_index dims[3] = {3, 4, 2};
  /* Factors U_1 (4 x RANK) and U_2 (2 x RANK), column-major. */
  double u1[4 * RANK] = {1, 2, 3, 4, 0.5, 0.5, 0.5, 0.5};
  double u2[2 * RANK] = {1, -1, 2, 1};
  double out[3][3 * RANK]; /* row-major results of the three formats */
  spt_context *ctx = NULL;
  spt_coo *x = NULL;
  spt_hicoo *h = NULL;
  spt_csf *c = NULL;
  spt_csf_options csf_opts;
  spt_matrix *factors[3] = {NULL, NULL, NULL}, *result[3] = {NULL, NULL, NULL};
  int f, i, failed = 1;
  double diff = 0;

  if (spt_context_create(&ctx) < 0) return 1;
  if (spt_coo_create_view(ctx, SPT_FLOAT64, 3, dims, NNZ, indices, NNZ, values, &x) < 0) goto done;
  if (spt_matrix_wrap(ctx, SPT_FLOAT64, 4, RANK, SPT_COL_MAJOR, u1, 4, &factors[1]) < 0) goto done;
  if (spt_matrix_wrap(ctx, SPT_FLOAT64, 2, RANK, SPT_COL_MAJOR, u2, 2, &factors[2]) < 0) goto done;
  for (f = 0; f < 3; ++f)
    if (spt_matrix_wrap(ctx, SPT_FLOAT64, 3, RANK, SPT_ROW_MAJOR, out[f], RANK, &result[f]) < 0) goto done;

  if (spt_hicoo_from_coo(ctx, x, NULL, &h) < 0) goto done;          /* NULL options: suggested B, L */
  if (spt_csf_options_init(&csf_opts) < 0) goto done;
  csf_opts.policy = SPT_CSF_ALLMODE;                                  /* one tree per mode */
  if (spt_csf_from_coo(ctx, x, &csf_opts, &c) < 0) goto done;

  /* factors[0] (the output mode) is not read and may be NULL. */
  if (spt_mttkrp(ctx, x, (const spt_matrix *const *)factors, 0, result[0]) < 0) goto done;
  if (spt_mttkrp_hicoo(ctx, h, (const spt_matrix *const *)factors, 0, result[1]) < 0) goto done;
  if (spt_mttkrp_csf(ctx, c, (const spt_matrix *const *)factors, 0, result[2]) < 0) goto done;

  for (i = 0; i < 3 * RANK; ++i) {
    if (fabs(out[1][i] - out[0][i]) > diff) diff = fabs(out[1][i] - out[0][i]);
    if (fabs(out[2][i] - out[0][i]) > diff) diff = fabs(out[2][i] - out[0][i]);
  }
  for (i = 0; i < 3; ++i) printf("row %d: %8.3f %8.3f\n", i, out[0][i * RANK], out[0][i * RANK + 1]);
  printf("max difference HiCOO/CSF vs COO: %.2e\n", diff);
  /* Row 0 by hand: 1*U1(0,:).*U2(0,:) + 2*U1(3,:).*U2(1,:) = (1*1*1 + 2*4*-1, 1*.5*2 + 2*.5*1) = (-7, 2). */
  failed = !(diff < 1e-12 && fabs(out[0][0] + 7) < 1e-12 && fabs(out[0][1] - 2) < 1e-12);

done:
  if (failed) fprintf(stderr, "error: %s\n", spt_last_error(ctx));
  for (f = 0; f < 3; ++f) {
    spt_matrix_free(factors[f]);
    spt_matrix_free(result[f]);
  }
  spt_csf_free(c);
  spt_hicoo_free(h);
  spt_coo_free(x);
  spt_context_free(ctx);
  return failed;
}
