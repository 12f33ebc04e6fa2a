/* Helpers shared by the example MEX gateways (sptensor_read.c,
 * sptensor_cpd.c, sptensor_tucker.c, sptensor_mttkrp.c). Header-only so
 * that each gateway builds from one command:
 *
 *   mkoctfile --mex -I$PREFIX/include sptensor_cpd.c -L$PREFIX/lib -lsptensor
 *   mex -I$PREFIX/include sptensor_cpd.c -L$PREFIX/lib -lsptensor      (MATLAB)
 *
 * Conventions of the gateways (what a MATLAB user expects):
 *  - a sparse tensor is passed as SUBS (nnz x N, 1-based, double or uint32,
 *    as Tensor Toolbox's X.subs), VALS (nnz x 1 double, X.vals) and DIMS
 *    (1 x N, or [] to take the largest subscripts);
 *  - matrices are column-major doubles, modes are 1-based;
 *  - errors raise a MATLAB error with identifier "sptensor:<STATUS>" (e.g.
 *    sptensor:SPT_ERR_IO) or "sptensor:usage", carrying the library's
 *    message; every index a message names (modes, rows, nonzeros) is
 *    1-based, so the gateways check what they can name themselves before
 *    the library (whose own messages count from 0) sees it;
 *  - an OPTS field the gateway does not know is an error naming the field
 *    and the accepted ones (a misspelt option is never silently ignored).
 *
 * Memory: library handles are not known to MATLAB's memory manager, and
 * mexErrMsgIdAndTxt does not return, so every gateway records its handles in
 * an spt_mex_handles struct and raises errors only through spt_mex_fail /
 * spt_mex_check, which free them first. Temporary buffers come from mxMalloc,
 * which MATLAB/Octave free automatically when an error unwinds.
 */
#ifndef SPTENSOR_MEX_H
#define SPTENSOR_MEX_H

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "mex.h"
#include "sptensor/sptensor.h"

#define SPT_MEX_MAX_HANDLES 64

/* Every library object a gateway created, freed on error and at the end. */
typedef struct spt_mex_handles {
  spt_context *ctx;
  spt_coo *coo;
  spt_ktensor *ktensor;
  spt_ttensor *ttensor;
  spt_matrix *matrices[SPT_MEX_MAX_HANDLES];
  int matrix_count;
  spt_index *indices; /* mxMalloc'ed 0-based subscripts a COO view reads; freed after the view */
} spt_mex_handles;

static inline void spt_mex_free_all(spt_mex_handles *h) {
  int i;
  for (i = 0; i < h->matrix_count; ++i) spt_matrix_free(h->matrices[i]);
  h->matrix_count = 0;
  spt_ttensor_free(h->ttensor);
  h->ttensor = NULL;
  spt_ktensor_free(h->ktensor);
  h->ktensor = NULL;
  spt_coo_free(h->coo);
  h->coo = NULL;
  if (h->indices) mxFree(h->indices);
  h->indices = NULL;
  spt_context_free(h->ctx);
  h->ctx = NULL;
}

/* Frees every handle, then raises the MATLAB error (does not return). */
static inline void spt_mex_fail(spt_mex_handles *h, const char *id, const char *message) {
  /* The message may point into the context: copy it before freeing. */
  static char text[2048];
  snprintf(text, sizeof text, "%s", message);
  spt_mex_free_all(h);
  mexErrMsgIdAndTxt(id, "%s", text);
}

/* Raises "sptensor:<STATUS>" with "<what>: <library message>" when st is an
 * error (negative). Warnings (positive, e.g. SPT_WARN_NOT_CONVERGED) pass. */
static inline void spt_mex_check(spt_mex_handles *h, spt_status st, const char *what) {
  char id[96], text[2048];
  if (st >= 0) return;
  snprintf(id, sizeof id, "sptensor:%s", spt_status_string(st));
  snprintf(text, sizeof text, "%s: %s", what, spt_last_error(h->ctx));
  spt_mex_fail(h, id, text);
}

static inline void spt_mex_usage(spt_mex_handles *h, const char *message) { spt_mex_fail(h, "sptensor:usage", message); }

static inline void spt_mex_keep_matrix(spt_mex_handles *h, spt_matrix *m) {
  if (h->matrix_count == SPT_MEX_MAX_HANDLES) {
    spt_matrix_free(m);
    spt_mex_usage(h, "too many modes for this example gateway");
  }
  h->matrices[h->matrix_count++] = m;
}

static inline int spt_mex_is_real_double(const mxArray *a) { return mxIsDouble(a) && !mxIsComplex(a) && !mxIsSparse(a); }

/* A real scalar >= minimum that is a whole number. */
static inline double spt_mex_scalar(spt_mex_handles *h, const mxArray *a, const char *name, double minimum, int whole) {
  char text[256];
  double v;
  if (!spt_mex_is_real_double(a) || mxGetNumberOfElements(a) != 1) {
    snprintf(text, sizeof text, "%s must be a real double scalar", name);
    spt_mex_usage(h, text);
  }
  v = mxGetScalar(a);
  if (!(v >= minimum) || (whole && v != (double)(long long)v)) {
    snprintf(text, sizeof text, "%s must be %s >= %g (got %g)", name, whole ? "a whole number" : "a number", minimum, v);
    spt_mex_usage(h, text);
  }
  return v;
}

/* The field `name` of an options struct (NULL when absent or opts is NULL). */
static inline const mxArray *spt_mex_field(spt_mex_handles *h, const mxArray *opts, const char *name) {
  if (!opts) return NULL;
  if (!mxIsStruct(opts) || mxGetNumberOfElements(opts) != 1)
    spt_mex_usage(h, "OPTS must be a scalar struct (e.g. struct('maxiters', 50, 'tol', 1e-4))");
  return mxGetField(opts, 0, name);
}

/* Raises sptensor:usage when OPTS has a field not among `accepted` (count
 * names), naming the field, the accepted ones and, for a field that differs
 * from one only in case (maxIters), that one. */
static inline void spt_mex_check_fields(spt_mex_handles *h, const mxArray *opts, const char *const *accepted, int count,
                                        const char *gateway) {
  char text[1024];
  int f, a, fields;
  if (!opts) return;
  if (!mxIsStruct(opts) || mxGetNumberOfElements(opts) != 1)
    spt_mex_usage(h, "OPTS must be a scalar struct (e.g. struct('maxiters', 50, 'tol', 1e-4))");
  fields = mxGetNumberOfFields(opts);
  for (f = 0; f < fields; ++f) {
    const char *name = mxGetFieldNameByNumber(opts, f);
    const char *same_but_case = NULL;
    size_t used;
    int known = 0;
    for (a = 0; a < count; ++a) {
      size_t i = 0;
      if (!strcmp(name, accepted[a])) known = 1;
      while (name[i] && accepted[a][i] && tolower((unsigned char)name[i]) == accepted[a][i]) ++i;
      if (!name[i] && !accepted[a][i]) same_but_case = accepted[a];
    }
    if (known) continue;
    if (same_but_case)
      snprintf(text, sizeof text, "opts.%s is not an option of %s: option names are lower case, did you mean opts.%s?",
               name, gateway, same_but_case);
    else {
      snprintf(text, sizeof text, "opts.%s is not an option of %s; the options are:", name, gateway);
      for (a = 0; a < count; ++a) {
        used = strlen(text);
        snprintf(text + used, sizeof text - used, "%s %s", a ? "," : "", accepted[a]);
      }
    }
    spt_mex_usage(h, text);
  }
}

/* Context with opts.threads (default: the library's, i.e. OMP_NUM_THREADS
 * or all cores). */
static inline void spt_mex_context(spt_mex_handles *h, const mxArray *opts) {
  const mxArray *threads;
  spt_mex_check(h, spt_context_create(&h->ctx), "creating a context");
  threads = spt_mex_field(h, opts, "threads");
  if (threads)
    spt_mex_check(h, spt_context_set_threads(h->ctx, (int)spt_mex_scalar(h, threads, "opts.threads", 0, 1)),
                  "setting threads");
}

/* Ctrl-C while a decomposition runs. Octave sets octave_interrupt_state
 * (exported by liboctave, declared in its quit.h) when SIGINT arrives; the
 * per-iteration callback polls it and stops the run, and the gateway frees
 * its handles and raises the error sptensor:interrupted in place of the
 * interrupt (spt_mex_stop_if_interrupted).
 * MATLAB has no documented way for a MEX file to see a pending Ctrl-C, so
 * there the run ends first (docs/mex.md). */
#if defined(HAVE_OCTAVE)
extern sig_atomic_t octave_interrupt_state;
static inline int spt_mex_interrupted(void) { return octave_interrupt_state > 0; }
/* The gateway reports the Ctrl-C as its error: the interrupt is handled. */
static inline void spt_mex_interrupt_handled(void) { octave_interrupt_state = 0; }
#else
static inline int spt_mex_interrupted(void) { return 0; }
static inline void spt_mex_interrupt_handled(void) {}
#endif

/* What the per-iteration callback of the decompositions does: prints the
 * fit every `display` iterations (opts.display; 0 = never) and stops the
 * run on Ctrl-C (see spt_mex_interrupted). */
typedef struct spt_mex_progress {
  int display;
  int interrupted; /* set when the callback stopped the run */
  /* Set while the callback runs the interpreter (the flush after a display
   * line). A Ctrl-C that arrives just then makes the interpreter raise its
   * interrupt there; it unwinds through the library, which ends the run with
   * an error, and the flag stays set: that too is the user's Ctrl-C. */
  int in_interpreter;
} spt_mex_progress;

static inline int spt_mex_iteration(void *data, int iteration, double fit, double delta, double seconds) {
  spt_mex_progress *p = (spt_mex_progress *)data;
  (void)seconds;
  if (spt_mex_interrupted()) {
    p->interrupted = 1;
    return 1;
  }
  if (p->display > 0 && iteration % p->display == 0) {
    /* Tensor Toolbox's cp_als / tucker_als 'printitn' line */
    mexPrintf(" Iter %2d: f = %e f-delta = %7.1e\n", iteration, fit, delta);
    /* Show the line now; not when an interrupt is pending, which the
     * interpreter would raise inside this callback. */
    p->in_interpreter = 1;
#if defined(HAVE_OCTAVE)
    if (!spt_mex_interrupted()) mexEvalString("fflush(stdout);");
#else
    mexEvalString("drawnow;");
#endif
    p->in_interpreter = 0;
  }
  return 0;
}

/* After the library returned, before its status is checked: when the run
 * ended for a Ctrl-C (the callback stopped it, or the interpreter raised the
 * interrupt inside the callback), frees everything and raises
 * sptensor:interrupted. */
static inline void spt_mex_stop_if_interrupted(spt_mex_handles *h, const spt_mex_progress *p, const char *what) {
  char text[256];
  if (!p->interrupted && !p->in_interpreter) return;
  spt_mex_interrupt_handled();
  snprintf(text, sizeof text, "%s interrupted (Ctrl-C); no result", what);
  spt_mex_fail(h, "sptensor:interrupted", text);
}

/* opts.display: a whole number >= 0 (0 when absent). */
static inline int spt_mex_display(spt_mex_handles *h, const mxArray *opts) {
  const mxArray *field = spt_mex_field(h, opts, "display");
  return field ? (int)spt_mex_scalar(h, field, "opts.display", 0, 1) : 0;
}

/* COO tensor from SUBS (nnz x N, 1-based, double or uint32), VALS (nnz x 1
 * double) and DIMS (1 x N double, or [] to infer). The library's
 * subscripts are 0-based uint32, so SUBS is converted once into a buffer
 * (kept in h until the tensor is freed); VALS is not copied at all: the
 * tensor is a read-only view (spt_coo_create_view) of that buffer and of
 * MATLAB's values. Non-finite values are rejected here, as a view does not
 * check them. */
static inline void spt_mex_tensor(spt_mex_handles *h, const mxArray *subs, const mxArray *vals, const mxArray *dims_in) {
  mwSize nnz, order, m, k, total;
  spt_index dims[SPT_MEX_MAX_HANDLES];
  const double *v;
  char text[256];
  if (!(spt_mex_is_real_double(subs) || mxIsUint32(subs)) || mxGetNumberOfDimensions(subs) != 2)
    spt_mex_usage(h, "SUBS must be an nnz x N matrix of 1-based subscripts (double or uint32)");
  nnz = mxGetM(subs);
  order = mxGetN(subs);
  if (order < 1 || order > SPT_MEX_MAX_HANDLES) spt_mex_usage(h, "SUBS must have one column per mode (1 to 64)");
  if (!spt_mex_is_real_double(vals) || mxGetNumberOfElements(vals) != (size_t)nnz) {
    snprintf(text, sizeof text, "VALS must be a real double vector with one value per row of SUBS (%llu)",
             (unsigned long long)nnz);
    spt_mex_usage(h, text);
  }
  v = mxGetPr(vals);
  for (k = 0; k < nnz; ++k)
    if (!mxIsFinite(v[k])) {
      snprintf(text, sizeof text, "VALS(%llu) is not finite", (unsigned long long)k + 1);
      spt_mex_usage(h, text);
    }
  total = nnz * order;
  h->indices = (spt_index *)mxMalloc((total ? total : 1) * sizeof *h->indices);
  if (mxIsUint32(subs)) {
    const spt_index *s = (const spt_index *)mxGetData(subs);
    for (k = 0; k < total; ++k) {
      if (s[k] == 0) spt_mex_usage(h, "SUBS must be 1-based (found a 0)");
      h->indices[k] = s[k] - 1;
    }
  } else {
    const double *s = mxGetPr(subs);
    for (k = 0; k < total; ++k) {
      if (!(s[k] >= 1 && s[k] <= 4294967295.0) || s[k] != (double)(spt_index)s[k]) {
        snprintf(text, sizeof text, "SUBS(%llu, %llu) = %g is not a whole number in [1, 2^32-1]",
                 (unsigned long long)(k % nnz) + 1, (unsigned long long)(k / nnz) + 1, s[k]);
        spt_mex_usage(h, text);
      }
      h->indices[k] = (spt_index)s[k] - 1;
    }
  }
  if (dims_in && !mxIsEmpty(dims_in)) {
    const double *d;
    if (!spt_mex_is_real_double(dims_in) || mxGetNumberOfElements(dims_in) != (size_t)order)
      spt_mex_usage(h, "DIMS must be a double vector with one size per column of SUBS, or []");
    d = mxGetPr(dims_in);
    for (m = 0; m < order; ++m) {
      if (!(d[m] >= 1 && d[m] <= 4294967295.0) || d[m] != (double)(spt_index)d[m]) {
        snprintf(text, sizeof text, "DIMS(%llu) = %g is not a whole number in [1, 2^32-1]", (unsigned long long)m + 1,
                 d[m]);
        spt_mex_usage(h, text);
      }
      dims[m] = (spt_index)d[m];
    }
    /* Checked here so that the message counts from 1 (the library's would
     * name the 0-based mode and nonzero). */
    for (m = 0; m < order; ++m)
      for (k = 0; k < nnz; ++k)
        if (h->indices[m * nnz + k] >= dims[m]) {
          snprintf(text, sizeof text, "SUBS(%llu, %llu) = %llu exceeds DIMS(%llu) = %llu", (unsigned long long)k + 1,
                   (unsigned long long)m + 1, (unsigned long long)h->indices[m * nnz + k] + 1,
                   (unsigned long long)m + 1, (unsigned long long)dims[m]);
          spt_mex_usage(h, text);
        }
  } else { /* the largest subscript of each mode */
    for (m = 0; m < order; ++m) {
      spt_index largest = 0;
      for (k = 0; k < nnz; ++k)
        if (h->indices[m * nnz + k] > largest) largest = h->indices[m * nnz + k];
      dims[m] = largest + 1;
    }
  }
  /* The view validates every index against dims once (the error names the
   * nonzero); mode m's subscripts start at indices + m * nnz (ld = nnz). */
  spt_mex_check(h,
                spt_coo_create_view(h->ctx, SPT_FLOAT64, (uint32_t)order, dims, (spt_nnz)nnz, h->indices,
                                    (spt_nnz)(nnz ? nnz : 1), v, &h->coo),
                "building the tensor from SUBS and VALS");
}

/* What h->coo holds (order, nonzero count, dtype): spt_coo_info into a
 * summary whose struct_size is set first, as every spt_X_info wants. */
static inline spt_coo_summary spt_mex_tensor_summary(spt_mex_handles *h) {
  spt_coo_summary s;
  s.struct_size = sizeof s;
  spt_mex_check(h, spt_coo_info(h->ctx, h->coo, &s), "querying the tensor");
  return s;
}

/* Wraps a column-major double matrix in place (no copy). The library only
 * reads factor inputs; the const cast is for spt_matrix_wrap's signature,
 * which also serves outputs. */
static inline spt_matrix *spt_mex_wrap(spt_mex_handles *h, const mxArray *a, const char *name) {
  spt_matrix *m = NULL;
  char text[256];
  if (!spt_mex_is_real_double(a) || mxGetNumberOfDimensions(a) != 2) {
    snprintf(text, sizeof text, "%s must be a real double matrix", name);
    spt_mex_usage(h, text);
  }
  spt_mex_check(h,
                spt_matrix_wrap(h->ctx, SPT_FLOAT64, mxGetM(a), mxGetN(a), SPT_COL_MAJOR, (void *)mxGetPr(a),
                                mxGetM(a) ? mxGetM(a) : 1, &m),
                name);
  spt_mex_keep_matrix(h, m);
  return m;
}

/* Raises sptensor:usage unless `a` is a real double rows x cols matrix
 * (cols 0: any number of columns); `name` is how the message calls it, with
 * 1-based numbers (e.g. "opts.init{2}"). */
static inline void spt_mex_check_shape(spt_mex_handles *h, const mxArray *a, const char *name, mwSize rows,
                                       mwSize cols) {
  char text[256];
  if (!spt_mex_is_real_double(a) || mxGetNumberOfDimensions(a) != 2) {
    snprintf(text, sizeof text, "%s must be a real double matrix", name);
    spt_mex_usage(h, text);
  }
  if (mxGetM(a) != (size_t)rows || (cols && mxGetN(a) != (size_t)cols)) {
    if (cols)
      snprintf(text, sizeof text, "%s must be %llu x %llu (got %llu x %llu)", name, (unsigned long long)rows,
               (unsigned long long)cols, (unsigned long long)mxGetM(a), (unsigned long long)mxGetN(a));
    else
      snprintf(text, sizeof text, "%s must have %llu rows (got %llu)", name, (unsigned long long)rows,
               (unsigned long long)mxGetM(a));
    spt_mex_usage(h, text);
  }
}

/* A new I x R double mxArray holding a copy of a library matrix (one copy,
 * written straight into MATLAB's memory in column-major order). */
static inline mxArray *spt_mex_matrix_out(spt_mex_handles *h, const spt_matrix *m) {
  spt_matrix_summary s;
  spt_nnz rows, cols;
  mxArray *out;
  s.struct_size = sizeof s;
  spt_mex_check(h, spt_matrix_info(h->ctx, m, &s), "querying a factor");
  rows = s.rows;
  cols = s.cols;
  out = mxCreateDoubleMatrix((mwSize)rows, (mwSize)cols, mxREAL);
  spt_mex_check(h, spt_matrix_copy_out(m, SPT_COL_MAJOR, mxGetPr(out), rows ? rows : 1), "copying a factor");
  return out;
}

/* 1 x n double row vector from n doubles. */
static inline mxArray *spt_mex_row(const double *values, mwSize n) {
  mxArray *out = mxCreateDoubleMatrix(1, n, mxREAL);
  if (n) memcpy(mxGetPr(out), values, n * sizeof(double));
  return out;
}

#endif /* SPTENSOR_MEX_H */
