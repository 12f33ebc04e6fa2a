// Dense matrix object behind spt_matrix, and the row-major references that
// kernels take.
#pragma once

#include <cstring>

#include "core/buffer.hpp"
#include "core/dtype.hpp"

struct spt_matrix_s {
  spt_nnz rows = 0;
  spt_nnz cols = 0;
  spt_nnz ld = 0;
  spt_layout layout = SPT_ROW_MAJOR;
  spt::ValueStore own;        // storage unless wrapped
  void* wrapped = nullptr;    // caller memory (spt_matrix_wrap)
  spt_dtype wrapped_dtype = SPT_FLOAT64;

  spt_dtype dtype() const { return wrapped ? wrapped_dtype : own.dtype(); }
  void* data() { return wrapped ? wrapped : own.data(); }
  const void* data() const { return wrapped ? wrapped : own.data(); }
  template <typename T>
  T* ptr() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* ptr() const {
    return static_cast<const T*>(data());
  }
  // Element (i, j) of a matrix of dtype T, whatever the layout.
  template <typename T>
  T& at(spt_nnz i, spt_nnz j) {
    return layout == SPT_ROW_MAJOR ? ptr<T>()[i * ld + j] : ptr<T>()[j * ld + i];
  }
  template <typename T>
  T at(spt_nnz i, spt_nnz j) const {
    return layout == SPT_ROW_MAJOR ? ptr<T>()[i * ld + j] : ptr<T>()[j * ld + i];
  }
};

namespace spt {

// Row-major matrix reference handed to kernels: element (i,j) at data[i*ld+j].
template <typename T>
struct MatRef {
  T* data = nullptr;
  spt_nnz rows = 0;
  spt_nnz cols = 0;
  spt_nnz ld = 0;
  T& operator()(spt_nnz i, spt_nnz j) const { return data[i * ld + j]; }
  T* row(spt_nnz i) const { return data + i * ld; }
};

template <typename T>
using ConstMatRef = MatRef<const T>;

// Owned row-major matrix for internal temporaries.
template <typename T>
struct DenseMatrix {
  buffer<T> values;
  spt_nnz rows = 0;
  spt_nnz cols = 0;
  DenseMatrix() = default;
  DenseMatrix(spt_nnz r, spt_nnz c) : rows(r), cols(c) { values.assign(checked_mul(r, c, "matrix size"), T(0)); }
  MatRef<T> ref() { return {values.data(), rows, cols, cols}; }
  ConstMatRef<T> cref() const { return {values.data(), rows, cols, cols}; }
  T& operator()(spt_nnz i, spt_nnz j) { return values[i * cols + j]; }
  T operator()(spt_nnz i, spt_nnz j) const { return values[i * cols + j]; }
};

// Make a zero-filled owning matrix.
// `what` names the matrix in out-of-memory messages ("the factor matrix of
// mode 2"); NULL = "a dense matrix".
void init_matrix(spt_matrix_s& m, spt_dtype dtype, spt_nnz rows, spt_nnz cols, spt_layout layout,
                 const char* what = nullptr);

// A row-major view of any spt_matrix: direct when it is already row-major,
// otherwise a row-major copy; write_back() copies changes back into a
// column-major original (for outputs).
template <typename T>
class RowMajor {
 public:
  explicit RowMajor(spt_matrix_s& m) : m_(&m) {
    if (m.layout == SPT_ROW_MAJOR) {
      ref_ = {m.ptr<T>(), m.rows, m.cols, m.ld};
    } else {
      copy_ = DenseMatrix<T>(m.rows, m.cols);
      for (spt_nnz i = 0; i < m.rows; ++i)
        for (spt_nnz j = 0; j < m.cols; ++j) copy_(i, j) = m.at<T>(i, j);
      ref_ = copy_.ref();
    }
  }
  MatRef<T> ref() const { return ref_; }
  ConstMatRef<T> cref() const { return {ref_.data, ref_.rows, ref_.cols, ref_.ld}; }
  void write_back() {
    if (m_->layout == SPT_ROW_MAJOR) return;
    for (spt_nnz i = 0; i < m_->rows; ++i)
      for (spt_nnz j = 0; j < m_->cols; ++j) m_->at<T>(i, j) = copy_(i, j);
  }

 private:
  spt_matrix_s* m_;
  DenseMatrix<T> copy_;
  MatRef<T> ref_;
};

}  // namespace spt
