// libFuzzer target: the ParTI!/B-CSF extended .tns variant (an order line
// and a dims line before the entries), both forced and auto-detected, and
// with caller-given dims that the header must agree with.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spt_fuzz;
  spt_read_options o;
  spt_read_options_init(&o);
  o.format = (size & 1) ? SPT_FILE_TNS_EXTENDED : SPT_FILE_AUTO;
  o.index_base = static_cast<int>((size >> 1) & 1);
  o.duplicates = static_cast<spt_duplicates>((size >> 2) % 3);
  static const spt_index dims[] = {4, 4, 4};
  if ((size >> 4) % 4 == 3) {
    o.order = 3;
    o.dims = dims;
  }
  read_and_check(as_file(data, size), o);
  return 0;
}
