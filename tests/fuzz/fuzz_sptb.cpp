// libFuzzer target: the .sptb binary loader (and SPLATT .bin through
// format detection). A valid checksum is a 64-bit hash, which mutation
// never hits, so for half of the inputs (chosen by the length) the harness
// first stores the checksum the loader will compute: the header and array
// checks behind the checksum are then reached too. Loads both zero-copy
// (mapped) and copied, and with a dtype conversion.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fuzz_common.hpp"
#include "io/checksum.hpp"

namespace {

constexpr size_t kHeader = 64, kChecksumAt = 40;
constexpr size_t kBlock = size_t(1) << 18;

// The checksum of a .sptb image as the writer computes it: XXH64 of the
// header (checksum field zeroed) combined with the XXH64 of each 256 KiB
// payload block.
void store_checksum(std::vector<uint8_t>& b) {
  using spt::io::Xxh64;
  std::memset(b.data() + kChecksumAt, 0, 8);
  uint64_t head = Xxh64::hash(b.data(), kHeader);
  std::vector<uint64_t> blocks;
  for (size_t at = kHeader; at < b.size(); at += kBlock)
    blocks.push_back(Xxh64::hash(b.data() + at, std::min(kBlock, b.size() - at)));
  Xxh64 h;
  h.update(&head, sizeof head);
  h.update(blocks.data(), blocks.size() * sizeof(uint64_t));
  uint64_t sum = h.digest();
  std::memcpy(b.data() + kChecksumAt, &sum, 8);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spt_fuzz;
  std::vector<uint8_t> bytes(data, data + size);
  if (size >= kHeader && (size & 1) == 0) store_checksum(bytes);
  spt_read_options o;
  spt_read_options_init(&o);
  o.format = (size & 2) ? SPT_FILE_AUTO : SPT_FILE_SPT_BIN;
  o.copy_binary = static_cast<int>((size >> 2) & 1);
  o.dtype = (size & 8) ? SPT_FLOAT32 : SPT_FLOAT64;
  read_and_check(as_file(bytes.data(), bytes.size()), o);
  return 0;
}
