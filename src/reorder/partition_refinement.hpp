// Partition refinement that orders the columns of a 0/1 matrix given row by
// row (the `lexiOrder` step of LEXI-ORDER, dissertation §5.2, after Paige and
// Tarjan): the columns end in non-increasing lexicographic order of their
// column vectors, read from the first row to the last.
//
// Columns start in one class. Each row splits every class it touches: the
// touched columns move to a new class placed just before the rest, so a
// column with a 1 in an earlier row (where the others have 0) comes first.
// After the last row, classes hold columns with identical vectors; inside a
// class the lower current label comes first, which makes the order total and
// deterministic. Columns never touched (empty slices) stay last.
//
// Cost: O(1) per touch, O(columns) for setup and finish.
#pragma once

#include <cstdint>

#include "reorder/permutation.hpp"

namespace spt::reorder {

class PartitionRefiner {
 public:
  explicit PartitionRefiner(spt_index columns);

  // Start the next row. Rows must be fed in order.
  void begin_row() { ++row_; }
  // Column `c` has a 1 in the current row (repeats within a row are ignored).
  void touch(spt_index c);
  // new_label[c] for every column: its position in the final order.
  Permutation finish() const;

 private:
  static constexpr spt_index kNone = UINT32_MAX;
  // Fields used together sit together: touch() costs one cache miss per
  // column and one per class.
  struct Column {
    uint64_t last_row;  // last row that touched it (rows are numbered from 1)
    spt_index cls;      // its class
  };
  struct Class {
    uint64_t split_row;  // row in which it last split off a child
    spt_index size;
    spt_index prev, next;  // class order (doubly linked)
    spt_index child;       // the class it split into in split_row
  };
  spt_index columns_;
  uint64_t row_ = 0;
  spt_index first_ = 0;  // first class in order
  buffer<Column> column_;
  buffer<Class> class_;
  buffer<spt_index> free_ids_;  // unused class ids (stack)
  spt_index free_top_ = 0;
};

}  // namespace spt::reorder
