#include "reorder/partition_refinement.hpp"

namespace spt::reorder {

PartitionRefiner::PartitionRefiner(spt_index columns)
    : columns_(columns), column_(columns), class_(columns), free_ids_(columns) {
  // A class is only created by splitting one of at least two columns, so at
  // most `columns` classes exist at once: ids 0..columns-1 suffice.
  for (spt_index c = 0; c < columns; ++c) column_[c] = {0, 0};
  for (spt_index s = 0; s < columns; ++s) {
    class_[s] = {0, 0, kNone, kNone, kNone};
    free_ids_[s] = columns - 1 - s;  // pop order 1, 2, 3, ...
  }
  if (columns == 0) return;
  class_[0].size = columns;
  first_ = 0;
  free_top_ = columns - 1;  // id 0 is taken
}

void PartitionRefiner::touch(spt_index c) {
  Column& col = column_[c];
  if (col.last_row == row_) return;
  col.last_row = row_;
  const spt_index s = col.cls;
  Class& from = class_[s];
  if (from.split_row != row_) {
    if (from.size == 1) return;  // alone in its class: splitting would change nothing
    const spt_index t = free_ids_[--free_top_];
    Class& child = class_[t];
    child = {0, 0, from.prev, s, kNone};
    if (from.prev != kNone) class_[from.prev].next = t;
    else first_ = t;
    from.prev = t;
    from.split_row = row_;
    from.child = t;
  }
  const spt_index t = from.child;
  col.cls = t;
  ++class_[t].size;
  if (--from.size == 0) {
    if (from.prev != kNone) class_[from.prev].next = from.next;
    else first_ = from.next;
    if (from.next != kNone) class_[from.next].prev = from.prev;
    free_ids_[free_top_++] = s;
  }
}

Permutation PartitionRefiner::finish() const {
  Permutation new_label(columns_);
  if (columns_ == 0) return new_label;
  // Each class's first position, in class order; then columns in label order.
  buffer<spt_index> next_slot(columns_);
  spt_index position = 0;
  for (spt_index s = first_; s != kNone; s = class_[s].next) {
    next_slot[s] = position;
    position += class_[s].size;
  }
  for (spt_index c = 0; c < columns_; ++c) new_label[c] = next_slot[column_[c].cls]++;
  return new_label;
}

}  // namespace spt::reorder
