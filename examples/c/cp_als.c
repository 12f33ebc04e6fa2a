/* CP-ALS on a sparse tensor file, with the storage format chosen for you.
 *
 *   cc cp_als.c $(pkg-config --cflags --libs sptensor) -o cp_als
 *   ./cp_als tensor.tns.xz [rank]
 *
 * Reads the file (FROSTT .tns, extended .tns, SPLATT .bin or .sptb, each
 * optionally gzip/xz/zstd compressed), asks the library which format a CP-ALS
 * should run on and why, runs CP-ALS with a fixed seed and prints the fit per
 * iteration (through the callback), the final fit and the largest weights.
 * Exit status 0 on success, 1 on a library error (message on stderr), 2 on
 * usage errors. */
#include <stdio.h>
#include <stdlib.h>

#include <sptensor/sptensor.h>

/* Called by spt_cpd_als after every sweep; returning non-zero stops early. */
static int print_iteration(void *user_data, int iteration, double fit, double delta, double seconds) {
  (void)user_data;
  printf("  iter %3d  fit %.6f  delta %.2e  %.3f s\n", iteration, fit, delta, seconds);
  return 0;
}

int main(int argc, char **argv) {
  spt_context *ctx = NULL;
  spt_coo *x = NULL;
  spt_ktensor *model = NULL;
  spt_cpd_options opts;
  spt_format_advice advice;
  spt_coo_summary info;
  char reason[512];
  spt_status status;
  double fit = 0;
  int iterations = 0, converged = 0, failed = 1;
  spt_index rank = 8, r;
  const double *lambda = NULL;

  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s TENSOR_FILE [RANK]\n", argv[0]);
    return 2;
  }
  if (argc == 3) rank = (spt_index)strtoul(argv[2], NULL, 10);
  if (spt_context_create(&ctx) < 0) {
    fprintf(stderr, "error: %s\n", spt_thread_last_error());
    return 1;
  }
  spt_context_set_seed(ctx, 42); /* reproducible random initialisation */

  if (spt_read(ctx, argv[1], NULL, &x) < 0) goto done;
  info.struct_size = sizeof info; /* every *_summary: set struct_size first */
  if (spt_coo_info(ctx, x, &info) < 0) goto done;
  printf("%s: order %u, %llu nonzeros\n", argv[1], info.order, (unsigned long long)info.nnz);

  /* Which format (COO, CSF, HiCOO) and why; spt_cpd_als with format AUTO
   * makes the same choice, so this call is only informative. */
  advice.struct_size = sizeof advice;
  advice.reason = reason;
  advice.reason_capacity = sizeof reason;
  if (spt_suggest_format(ctx, x, rank, &advice) < 0) goto done;
  printf("format: %s\n", reason);

  spt_cpd_options_init(&opts); /* always first: sets struct_size and defaults */
  opts.rank = rank;
  opts.max_iters = 50;
  opts.tol = 1e-5;
  opts.callback = print_iteration;
  status = spt_cpd_als(ctx, x, &opts, &model);
  if (status < 0) goto done; /* > 0 is a warning: SPT_WARN_NOT_CONVERGED, result usable */

  spt_ktensor_result(model, &fit, &iterations, &converged);
  printf("fit %.6f after %d iterations (%s)\n", fit, iterations, converged ? "converged" : "not converged");
  /* The ktensor's dtype is the tensor's: float64 here (spt_read's default). */
  spt_ktensor_lambda(model, (void **)&lambda);
  printf("weights:");
  for (r = 0; r < rank && r < 4; ++r) printf(" %.4g", lambda[r]);
  printf("%s\n", rank > 4 ? " ..." : "");
  failed = !(fit > 0 && fit <= 1);

done:
  if (failed) fprintf(stderr, "error: %s\n", spt_last_error(ctx));
  spt_ktensor_free(model);
  spt_coo_free(x);
  spt_context_free(ctx);
  return failed;
}
