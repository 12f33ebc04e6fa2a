// libFuzzer target: the FROSTT .tns text parser (plain format: "i1 .. iN v"
// per line), reading the input as a file. Options vary with the input
// length (so every input byte stays text): index base, dtype, duplicate
// policy and the non-finite check.
#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spt_fuzz;
  spt_read_options o;
  spt_read_options_init(&o);
  o.format = SPT_FILE_TNS;
  o.index_base = static_cast<int>(size & 1);
  o.dtype = (size & 2) ? SPT_FLOAT32 : SPT_FLOAT64;
  o.duplicates = static_cast<spt_duplicates>((size >> 2) % 3);
  o.reject_nonfinite = static_cast<int>((size >> 4) & 1);
  read_and_check(as_file(data, size), o);
  return 0;
}
