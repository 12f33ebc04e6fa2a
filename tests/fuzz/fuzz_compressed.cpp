// libFuzzer target: the gzip / xz / zstd readers, in memory
// (spt::io::decompress on the input as each kind), then the whole read path
// (magic detection, decompression, parsing) on the input as a file.
#include "fuzz_common.hpp"
#include "core/error.hpp"
#include "io/compression.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spt_fuzz;
  for (spt_compression kind : {SPT_COMPRESS_GZIP, SPT_COMPRESS_XZ, SPT_COMPRESS_ZSTD}) {
    try {
      spt::buffer<char> out = spt::io::decompress(kind, data, size, 1, "fuzz");
      (void)out;
    } catch (const spt::Error& e) {
      FUZZ_CHECK(e.code() == SPT_ERR_PARSE || e.code() == SPT_ERR_UNSUPPORTED || e.code() == SPT_ERR_OUT_OF_MEMORY ||
                 e.code() == SPT_ERR_OVERFLOW);
    } catch (const std::bad_alloc&) {
    }
  }
  spt_read_options o;
  spt_read_options_init(&o);
  read_and_check(as_file(data, size), o);
  return 0;
}
