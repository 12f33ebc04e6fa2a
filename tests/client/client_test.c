/* Client test: a plain C99 program that uses only the installed public
 * header and shared library, found through pkg-config or CMake
 * find_package(sptensor).
 *
 *   client_test PATH/TO/nations.tns.xz
 *
 * Checks: MTTKRP on a hand-made tensor against hand-computed values (with a
 * column-major factor), reading a real tensor, CP-ALS for 5 iterations with
 * a fit in (0, 1], and that errors come back as a negative status with a
 * message. Exit status 0 when every check passes, 1 otherwise. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sptensor/sptensor.h>

static int failures = 0;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "client_test:%d: FAILED: ", __LINE__); \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      ++failures;                                         \
    }                                                     \
  } while (0)

#define CHECK_OK(call)                                                                       \
  do {                                                                                       \
    spt_status st_ = (call);                                                                 \
    if (st_ < 0) {                                                                           \
      fprintf(stderr, "client_test:%d: %s returned %s: %s\n", __LINE__, #call,              \
              spt_status_string(st_), spt_thread_last_error());                             \
      ++failures;                                                                            \
      goto done;                                                                             \
    }                                                                                        \
  } while (0)

/* X is 2 x 2 x 2 with X(0,0,0) = 1, X(1,1,0) = 2, X(0,1,1) = 3.
 * B (mode 1) = [1 2; 3 4], C (mode 2) = [5 6; 7 8].
 * Mode-0 MTTKRP: M(i,r) = sum x * B(j,r) * C(k,r):
 *   M(0,0) = 1*1*5 + 3*3*7 = 68    M(0,1) = 1*2*6 + 3*4*8 = 108
 *   M(1,0) = 2*3*5 = 30            M(1,1) = 2*4*6 = 48 */
static void test_mttkrp(void) {
  const spt_index dims[3] = {2, 2, 2};
  /* mode-major: indices[m * nnz + k] */
  const spt_index indices[9] = {0, 1, 0, /* mode 0 */ 0, 1, 1, /* mode 1 */ 0, 0, 1 /* mode 2 */};
  const double values[3] = {1, 2, 3};
  const double b_rowmajor[4] = {1, 2, 3, 4};
  const double c_colmajor[4] = {5, 7, 6, 8}; /* [5 6; 7 8] stored column by column */
  const double expected[4] = {68, 108, 30, 48};
  double result[4] = {0, 0, 0, 0};
  spt_coo *x = NULL;
  spt_matrix *b = NULL, *c = NULL, *out = NULL;
  const spt_matrix *factors[3];
  int i;

  CHECK_OK(spt_coo_create_from_arrays(NULL, SPT_FLOAT64, 3, dims, 3, indices, 3, 0, values, SPT_COO_DEFAULT, &x));
  CHECK_OK(spt_matrix_create_copy(NULL, SPT_FLOAT64, 2, 2, SPT_ROW_MAJOR, b_rowmajor, 2, &b));
  CHECK_OK(spt_matrix_create_copy(NULL, SPT_FLOAT64, 2, 2, SPT_COL_MAJOR, c_colmajor, 2, &c));
  CHECK_OK(spt_matrix_create(NULL, SPT_FLOAT64, 2, 2, SPT_ROW_MAJOR, &out));
  factors[0] = NULL;
  factors[1] = b;
  factors[2] = c;
  CHECK_OK(spt_mttkrp(NULL, x, factors, 0, out));
  CHECK_OK(spt_matrix_copy_out(out, SPT_ROW_MAJOR, result, 2));
  for (i = 0; i < 4; ++i)
    CHECK(fabs(result[i] - expected[i]) < 1e-12, "mttkrp entry %d: got %g, expected %g", i, result[i], expected[i]);
done:
  spt_matrix_free(out);
  spt_matrix_free(c);
  spt_matrix_free(b);
  spt_coo_free(x);
}

static void test_read_and_cpd(const char *path) {
  spt_context *ctx = NULL;
  spt_coo *x = NULL;
  spt_ktensor *k = NULL;
  spt_cpd_options opts;
  spt_coo_summary info;
  uint32_t order = 0;
  spt_nnz nnz = 0;
  spt_index dims[3] = {0, 0, 0};
  double fit = -1;
  int iterations = 0, count = 0;
  const double *fits = NULL, *seconds = NULL;
  spt_status st;

  CHECK_OK(spt_context_create(&ctx));
  CHECK_OK(spt_context_set_threads(ctx, 2));
  CHECK_OK(spt_read(ctx, path, NULL, &x));
  info.struct_size = sizeof info;
  CHECK_OK(spt_coo_info(ctx, x, &info));
  order = info.order;
  nnz = info.nnz;
  CHECK(order == 3, "order of %s: got %u, expected 3", path, (unsigned)order);
  CHECK(nnz == 1992, "nnz of %s: got %llu, expected 1992", path, (unsigned long long)nnz);
  if (order != 3) goto done;
  CHECK_OK(spt_coo_dims(x, dims));
  CHECK(dims[0] == 14 && dims[1] == 55 && dims[2] == 14, "dims: got %u x %u x %u, expected 14 x 55 x 14",
        (unsigned)dims[0], (unsigned)dims[1], (unsigned)dims[2]);

  CHECK_OK(spt_cpd_options_init(&opts));
  opts.rank = 4;
  opts.max_iters = 5;
  opts.tol = 0;
  opts.seed = 1;
  st = spt_cpd_als(ctx, x, &opts, &k);
  CHECK(st == SPT_OK || st == SPT_WARN_NOT_CONVERGED, "spt_cpd_als returned %s: %s", spt_status_string(st),
        spt_last_error(ctx));
  if (st < 0) goto done;
  CHECK_OK(spt_ktensor_result(k, &fit, &iterations, NULL));
  CHECK(fit > 0 && fit <= 1, "fit %g is outside (0, 1]", fit);
  CHECK(iterations == 5, "iterations: got %d, expected 5 (tol 0)", iterations);
  CHECK_OK(spt_ktensor_history(k, &count, &fits, &seconds));
  CHECK(count == iterations, "history holds %d entries for %d iterations", count, iterations);
  if (count > 0) CHECK(fits[count - 1] == fit, "last history fit %g differs from the final fit %g", fits[count - 1], fit);
done:
  spt_ktensor_free(k);
  spt_coo_free(x);
  spt_context_free(ctx);
}

static void test_errors(void) {
  spt_context *ctx = NULL;
  spt_coo *x = NULL;
  spt_cpd_options opts;
  spt_status st;

  CHECK_OK(spt_context_create(&ctx));
  st = spt_read(ctx, "/nonexistent/dir/missing.tns", NULL, &x);
  CHECK(st < 0, "reading a missing file returned %d, expected a negative status", st);
  CHECK(x == NULL, "a failed spt_read wrote a handle");
  CHECK(strlen(spt_last_error(ctx)) > 0, "spt_last_error is empty after a failed read");
  CHECK(strlen(spt_thread_last_error()) > 0, "spt_thread_last_error is empty after a failed read");

  CHECK_OK(spt_cpd_options_init(&opts));
  opts.rank = 0;
  st = spt_cpd_als(ctx, NULL, &opts, NULL);
  CHECK(st == SPT_ERR_INVALID_ARGUMENT, "spt_cpd_als(NULL tensor) returned %s, expected SPT_ERR_INVALID_ARGUMENT",
        spt_status_string(st));
  CHECK(strlen(spt_last_error(ctx)) > 0, "spt_last_error is empty after an invalid argument");
  CHECK(strcmp(spt_status_string(SPT_ERR_PARSE), "SPT_ERR_PARSE") == 0, "spt_status_string(SPT_ERR_PARSE)");
done:
  spt_context_free(ctx);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s PATH/TO/nations.tns.xz\n", argv[0]);
    return 1;
  }
  printf("libsptensor %s (header %d.%d.%d)\n", spt_version(), SPT_VERSION_MAJOR, SPT_VERSION_MINOR,
         SPT_VERSION_PATCH);
  test_mttkrp();
  test_read_and_cpd(argv[1]);
  test_errors();
  if (failures) {
    fprintf(stderr, "client_test: %d check(s) failed\n", failures);
    return 1;
  }
  printf("client_test: all checks passed\n");
  return 0;
}
