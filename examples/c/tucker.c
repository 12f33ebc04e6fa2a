/* Tucker-HOOI of a sparse tensor file.
 *
 *   cc tucker.c $(pkg-config --cflags --libs sptensor) -o tucker
 *   ./tucker tensor.tns.xz [rank]
 *
 * Runs Tucker-HOOI with the same rank in every mode (HOSVD initialisation,
 * computed from the sparse tensor), prints the fit, the core's shape and
 * its largest entry, and checks that the factor matrices have orthonormal
 * columns. Exit status 0 on success, 1 on an error, 2 on usage errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <sptensor/sptensor.h>

#define MAX_ORDER 16

int main(int argc, char **argv) {
  spt_context *ctx = NULL;
  spt_coo *x = NULL;
  spt_ttensor *model = NULL;
  spt_tucker_options opts;
  spt_coo_summary info;
  spt_ttensor_summary result;
  spt_matrix_summary shape;
  spt_index ranks[MAX_ORDER], core_dims[MAX_ORDER], dims[MAX_ORDER];
  uint32_t order = 0, m;
  spt_index rank = 4;
  double largest = 0, worst = 0;
  int failed = 1;
  spt_nnz core_size = 1, k;
  const double *core = NULL;

  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s TENSOR_FILE [RANK]\n", argv[0]);
    return 2;
  }
  if (argc == 3) rank = (spt_index)strtoul(argv[2], NULL, 10);
  if (spt_context_create(&ctx) < 0) return 1;

  if (spt_read(ctx, argv[1], NULL, &x) < 0) goto done;
  info.struct_size = sizeof info; /* every *_summary: set struct_size first */
  if (spt_coo_info(ctx, x, &info) < 0) goto done;
  order = info.order;
  if (order > MAX_ORDER) {
    fprintf(stderr, "this example handles orders up to %d\n", MAX_ORDER);
    goto done;
  }
  spt_coo_dims(x, dims);
  for (m = 0; m < order; ++m) ranks[m] = rank < dims[m] ? rank : dims[m]; /* R_n <= I_n */

  spt_tucker_options_init(&opts);
  opts.ranks = ranks;
  opts.ranks_count = order;
  opts.max_iters = 20;
  opts.tol = 1e-6;
  if (spt_tucker_hooi(ctx, x, &opts, &model) < 0) goto done;

  result.struct_size = sizeof result;
  if (spt_ttensor_info(ctx, model, &result) < 0) goto done;
  spt_ttensor_core_dims(model, core_dims, NULL);
  spt_ttensor_core(model, (const void **)&core); /* first index fastest */
  printf("fit %.6f after %d iterations; core", result.fit, result.iterations);
  for (m = 0; m < order; ++m) {
    printf("%s%u", m ? " x " : " ", core_dims[m]);
    core_size *= core_dims[m];
  }
  for (k = 0; k < core_size; ++k)
    if (fabs(core[k]) > largest) largest = fabs(core[k]);
  printf(", largest |core entry| %.4g\n", largest);

  /* U_m' U_m = I: copy each factor out (column-major) and check. */
  for (m = 0; m < order; ++m) {
    const spt_matrix *u = NULL;
    spt_nnz rows, cols, i, a, b;
    double *buf;
    spt_ttensor_factor(model, m, &u);
    shape.struct_size = sizeof shape;
    if (spt_matrix_info(ctx, u, &shape) < 0) goto done;
    rows = shape.rows;
    cols = shape.cols;
    buf = malloc(sizeof(double) * rows * cols);
    if (!buf || spt_matrix_copy_out(u, SPT_COL_MAJOR, buf, rows) < 0) {
      free(buf);
      goto done;
    }
    for (a = 0; a < cols; ++a)
      for (b = 0; b < cols; ++b) {
        double dot = 0;
        for (i = 0; i < rows; ++i) dot += buf[a * rows + i] * buf[b * rows + i];
        if (fabs(dot - (a == b)) > worst) worst = fabs(dot - (a == b));
      }
    free(buf);
  }
  printf("max |U'U - I| over all factors: %.2e\n", worst);
  failed = !(result.fit > 0 && result.fit <= 1 && worst < 1e-8);

done:
  if (failed) fprintf(stderr, "error: %s\n", spt_last_error(ctx));
  spt_ttensor_free(model);
  spt_coo_free(x);
  spt_context_free(ctx);
  return failed;
}
