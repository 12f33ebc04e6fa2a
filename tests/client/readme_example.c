/* The C example of README.md (keep the two in sync): read a tensor, run
 * CP-ALS, print the fit. The client test compiles and runs it. */
#include <stdio.h>
#include <sptensor/sptensor.h>

int main(int argc, char **argv) {
  spt_context *ctx = NULL;
  spt_coo *x = NULL;
  spt_ktensor *model = NULL;
  spt_cpd_options opts;
  double fit = 0;
  int iters = 0, failed = 1;

  if (argc != 2 || spt_context_create(&ctx) < 0) return 2;
  if (spt_read(ctx, argv[1], NULL, &x) < 0) goto done; /* .tns[.xz|.gz|.zst], .bin, .sptb */
  spt_cpd_options_init(&opts);
  opts.rank = 8;
  opts.max_iters = 50;
  if (spt_cpd_als(ctx, x, &opts, &model) < 0) goto done; /* > 0: warning, e.g. not converged */
  spt_ktensor_result(model, &fit, &iters, NULL);
  printf("fit %.4f after %d iterations\n", fit, iters);
  failed = 0;
done:
  if (failed) fprintf(stderr, "error: %s\n", spt_last_error(ctx));
  spt_ktensor_free(model);
  spt_coo_free(x);
  spt_context_free(ctx);
  return failed;
}
