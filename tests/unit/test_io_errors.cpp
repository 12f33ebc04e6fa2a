// Malformed input: every case checks the status code AND that the message
// names the file and line (text) or the specific problem (binary).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/read_fixture.hpp"
#include "common/test_util.hpp"
#include "sptensor/sptensor.h"

namespace fs = std::filesystem;

namespace {

class IoErrors : public spt::test::ReadFixture {
 protected:
  IoErrors() : ReadFixture("spt_test_io_errors") {}

  // Reads `text` as a .tns file and expects `status` with every string in
  // `parts` inside the message.
  void expect_text_error(const std::string& text, spt_status status, std::vector<std::string> parts) {
    std::string p = put("bad.tns", text);
    EXPECT_EQ(read(p), status) << message_;
    expect_message(parts);
  }
};

// ---- text -------------------------------------------------------------------

TEST_F(IoErrors, EmptyFile) { expect_text_error("", SPT_ERR_PARSE, {"bad.tns", "no nonzeros", "dims"}); }

TEST_F(IoErrors, OnlyCommentsAndBlankLines) {
  expect_text_error("# header\n\n   \n# more\n", SPT_ERR_PARSE, {"bad.tns", "no nonzeros"});
}

TEST_F(IoErrors, FewerColumnsThanFirstLine) {
  expect_text_error("1 1 1 1.0\n2 2 2 2.0\n3 3 3.0\n", SPT_ERR_PARSE,
                    {"bad.tns:3:", "expected 4 columns", "order 3 from the first entry on line 1", "found 3"});
}

TEST_F(IoErrors, MoreColumnsThanFirstLine) {
  expect_text_error("# c\n1 1 1.0\n2 2 2 2.0\n", SPT_ERR_PARSE, {"bad.tns:3:", "expected 3 columns", "line 2", "found 4"});
}

TEST_F(IoErrors, IndexZeroInOneBasedFile) {
  expect_text_error("1 1 1.0\n2 0 1.0\n", SPT_ERR_PARSE, {"bad.tns:2: column 2", "'0'", "below the index base 1"});
}

TEST_F(IoErrors, NegativeIndex) {
  expect_text_error("1 1 1.0\n\n-3 1 1.0\n", SPT_ERR_PARSE, {"bad.tns:3: column 1", "negative index '-3'"});
}

TEST_F(IoErrors, NonNumericIndexToken) {
  expect_text_error("1 1 1.0\n1 x7 1.0\n", SPT_ERR_PARSE, {"bad.tns:2: column 2", "integer index", "'x7'"});
}

TEST_F(IoErrors, FractionalIndex) {
  expect_text_error("1 1 1.0\n1.5 2 1.0\n", SPT_ERR_PARSE, {"bad.tns:2: column 1", "'1.5'"});
}

TEST_F(IoErrors, NonNumericValue) {
  expect_text_error("1 1 1.0\n2 2 abc\n", SPT_ERR_PARSE, {"bad.tns:2: column 3", "expected a number as the value", "'abc'"});
}

TEST_F(IoErrors, IndexBeyond32Bits) {
  expect_text_error("1 1 1.0\n4294967296 1 1.0\n", SPT_ERR_OVERFLOW,
                    {"bad.tns:2: column 1", "'4294967296'", "does not fit a 32-bit"});
}

TEST_F(IoErrors, IndexBeyond64Bits) {
  expect_text_error("1 123456789012345678901234567890 1.0\n", SPT_ERR_OVERFLOW, {"bad.tns:1: column 2", "does not fit"});
}

TEST_F(IoErrors, ZeroBasedIndexTooLarge) {
  opts_.index_base = 0;  // 0-based: 4294967295 would need dims = 2^32
  expect_text_error("4294967295 1 1.0\n", SPT_ERR_OVERFLOW, {"bad.tns:1: column 1", "index base 0"});
}

TEST_F(IoErrors, IndexPastExplicitDims) {
  const spt_index dims[] = {5, 2};
  opts_.order = 2;
  opts_.dims = dims;
  expect_text_error("1 1 1.0\n5 2 1.0\n5 3 1.0\n", SPT_ERR_PARSE, {"bad.tns:3: column 2", "'3'", "outside dims[1] = 2"});
}

TEST_F(IoErrors, OrderDisagreesWithCaller) {
  opts_.order = 4;
  expect_text_error("1 1 1 1.0\n", SPT_ERR_PARSE, {"bad.tns:1:", "expected 5 columns", "given by the caller", "found 4"});
}

TEST_F(IoErrors, NanRejected) {
  opts_.reject_nonfinite = 1;
  expect_text_error("1 1 1.0\n2 2 NaN\n", SPT_ERR_PARSE, {"bad.tns:2: column 3", "'NaN'", "not finite"});
}

TEST_F(IoErrors, InfRejected) {
  opts_.reject_nonfinite = 1;
  expect_text_error("1 1 -inf\n", SPT_ERR_PARSE, {"bad.tns:1: column 3", "'-inf'", "not finite"});
}

TEST_F(IoErrors, ValueOverflowRejectedAsNonFinite) {
  opts_.reject_nonfinite = 1;
  expect_text_error("1 1 2\n1 2 1e400\n", SPT_ERR_PARSE, {"bad.tns:2: column 3", "'1e400'", "not finite"});
}

TEST_F(IoErrors, MissingValue) {
  expect_text_error("1 1 1 1.0\n2 2 2 \n", SPT_ERR_PARSE, {"bad.tns:2:", "expected 4 columns", "found 3"});
}

TEST_F(IoErrors, ExtendedHeaderOrderDisagreesWithEntries) {
  expect_text_error("3\n4 4 4\n1 1 1 1 1.0\n", SPT_ERR_PARSE,
                    {"bad.tns:3:", "expected 4 columns", "from the header on line 1", "found 5"});
}

TEST_F(IoErrors, ExtendedHeaderWrongDimsCount) {
  expect_text_error("3\n4 4\n1 1 1 1.0\n", SPT_ERR_PARSE, {"bad.tns:2:", "expected 3 dims", "found 2"});
}

TEST_F(IoErrors, ExtendedHeaderDimBeyond32Bits) {
  expect_text_error("2\n5 4294967296\n1 1 1.0\n", SPT_ERR_OVERFLOW, {"bad.tns:2:", "dims[1] = 4294967296", "32-bit"});
}

TEST_F(IoErrors, ExtendedHeaderDimBeyond64Bits) {
  expect_text_error("3\n10 99999999999999999999999 10\n1 1 1 1.0\n", SPT_ERR_OVERFLOW,
                    {"bad.tns:2:", "'99999999999999999999999'", "does not fit 64 bits"});
}

TEST_F(IoErrors, ExtendedHeaderZeroDim) {
  expect_text_error("2\n5 0\n", SPT_ERR_PARSE, {"bad.tns:2:", "dims[1] is 0"});
}

TEST_F(IoErrors, ExtendedHeaderIndexPastHeaderDims) {
  expect_text_error("2\n2 2\n1 1 1.0\n3 1 1.0\n", SPT_ERR_PARSE, {"bad.tns:4: column 1", "outside dims[0] = 2"});
}

TEST_F(IoErrors, ExtendedHeaderDisagreesWithCallerDims) {
  const spt_index dims[] = {5, 6};
  opts_.order = 2;
  opts_.dims = dims;
  expect_text_error("2\n5 7\n1 1 1.0\n", SPT_ERR_PARSE, {"bad.tns:2:", "dims[1] = 7", "caller passed dims[1] = 6"});
}

TEST_F(IoErrors, ForcedPlainTnsOnExtendedFile) {
  opts_.format = SPT_FILE_TNS;
  expect_text_error("2\n5 7\n1 1 1.0\n", SPT_ERR_PARSE, {"bad.tns:1:", "at least 2 columns", "found 1"});
}

TEST_F(IoErrors, FirstErrorInFileOrderAcrossChunks) {
  // Two bad lines far apart (different chunks when parsed by 2 threads):
  // the earlier one is reported, with its exact line number.
  std::string text;
  for (int k = 1; k <= 200000; ++k) {
    if (k == 120001) text += "1 2 3 4\n";
    else if (k == 170001) text += "1 zz 3\n";
    else text += std::to_string(k % 1000 + 1) + " " + std::to_string(k % 77 + 1) + " 1\n";
  }
  expect_text_error(text, SPT_ERR_PARSE, {"bad.tns:120001:", "expected 3 columns", "found 4"});
}

TEST_F(IoErrors, DuplicateRejectedWithBothLines) {
  opts_.duplicates = SPT_DUPLICATES_REJECT;
  expect_text_error("# c\n1 1 1.0\n2 2 1.0\n\n1 1 5.0\n", SPT_ERR_PARSE,
                    {"bad.tns:5: duplicate coordinate (0, 0)", "first seen at " + file("bad.tns") + ":2"});
}

// ---- files and compression ------------------------------------------------------

TEST_F(IoErrors, MissingFile) {
  EXPECT_EQ(read(file("nope.tns")), SPT_ERR_IO);
  expect_message({"nope.tns", "cannot open", "No such file"});
}

TEST_F(IoErrors, DirectoryInsteadOfFile) {
  EXPECT_EQ(read(dir_), SPT_ERR_IO);
  expect_message({dir_, "is a directory"});
}

TEST_F(IoErrors, TruncatedXzStream) {
  std::string p = valid_file("t.tns.xz");
  std::string bytes = slurp(p);
  put("t.tns.xz", bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.tns.xz", "xz stream is truncated or corrupt"});
}

TEST_F(IoErrors, TruncatedGzipStream) {
  std::string p = valid_file("t.tns.gz");
  std::string bytes = slurp(p);
  put("t.tns.gz", bytes.substr(0, bytes.size() - 10));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.tns.gz", "gzip stream is truncated"});
}

TEST_F(IoErrors, CorruptZstdStream) {
  std::string p = valid_file("t.tns.zst");
  std::string bytes = slurp(p);
  put("t.tns.zst", bytes.substr(0, bytes.size() - 3));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.tns.zst", "zstd stream"});
}

// ---- our binary (.sptb) -----------------------------------------------------------

TEST_F(IoErrors, SptbTruncated) {
  std::string p = valid_file("t.sptb");
  std::string bytes = slurp(p);
  put("t.sptb", bytes.substr(0, bytes.size() - 8));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.sptb", "truncated .sptb file", "3 nonzeros of order 2"});
}

TEST_F(IoErrors, SptbShorterThanHeader) {
  std::string p = valid_file("t.sptb");
  put("t.sptb", slurp(p).substr(0, 20));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.sptb", "shorter than its 64-byte header"});
}

TEST_F(IoErrors, SptbBadMagicWhenForced) {
  std::string p = put("t.sptb", "1 1 1.0\n");
  opts_.format = SPT_FILE_SPT_BIN;
  put("t.sptb", std::string(100, 'x'));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.sptb", "bad magic", "SPTB"});
}

TEST_F(IoErrors, SptbWrongChecksum) {
  std::string p = valid_file("t.sptb");
  std::string bytes = slurp(p);
  bytes[bytes.size() - 1] ^= 0x01;  // flip a bit of the last value
  put("t.sptb", bytes);
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.sptb", "wrong checksum", "corrupt"});
}

// Every payload byte is covered by the checksum, the zero padding between
// sections included, whether the file is copied or mapped: a flipped bit
// anywhere after the header is "wrong checksum".
TEST_F(IoErrors, SptbEveryPayloadByteIsChecksummed) {
  std::string p = valid_file("t.sptb");  // order 2, 3 nonzeros: 4 padding bytes after each index array
  const std::string good = slurp(p);
  ASSERT_EQ(good.size(), 64u + 8 + 16 + 16 + 24);
  for (int map : {0, 1}) {
    opts_.map_binary = map;
    for (size_t at = 64; at < good.size(); ++at) {
      std::string bytes = good;
      bytes[at] ^= 0x10;
      put("t.sptb", bytes);
      EXPECT_EQ(read(p), SPT_ERR_PARSE) << "byte " << at << " map " << map;
      expect_message({"t.sptb", "wrong checksum"});
    }
  }
}

// A checksum-valid file whose indices exceed the caller's dims: the
// streaming bounds check must catch it on both load paths (mapped in place
// and copied), naming the nonzero and mode.
TEST_F(IoErrors, SptbIndexOutsideCallerDims) {
  std::string p = valid_file("t.sptb");  // mode 1 holds indices 2, 1, 0
  const spt_index dims[] = {3, 2};
  opts_.order = 2;
  opts_.dims = dims;
  for (int copy : {0, 1}) {
    opts_.copy_binary = copy;
    EXPECT_EQ(read(p), SPT_ERR_PARSE) << "copy_binary " << copy;
    expect_message({"t.sptb", "nonzero 0", "index 2 in mode 1", "outside dims[1] = 2"});
  }
}

TEST_F(IoErrors, SptbUnsupportedVersion) {
  std::string p = valid_file("t.sptb");
  std::string bytes = slurp(p);
  bytes[4] = 2;
  put("t.sptb", bytes);
  EXPECT_EQ(read(p), SPT_ERR_UNSUPPORTED);
  expect_message({"t.sptb", "version 2", "upgrade"});
}

TEST_F(IoErrors, SptbBigEndianMarker) {
  std::string p = valid_file("t.sptb");
  std::string bytes = slurp(p);
  const uint32_t swapped = 0x04030201u;
  std::memcpy(&bytes[8], &swapped, 4);
  put("t.sptb", bytes);
  EXPECT_EQ(read(p), SPT_ERR_UNSUPPORTED);
  expect_message({"t.sptb", "big-endian"});
}

TEST_F(IoErrors, SptbHugeNnzInTruncatedFile) {
  std::string p = valid_file("t.sptb");
  std::string bytes = slurp(p);
  const uint64_t nnz = uint64_t(1) << 33;  // > 2^32 nonzeros claimed
  const uint64_t payload = 8 + 2 * nnz * 4 + nnz * 8;
  std::memcpy(&bytes[24], &nnz, 8);
  std::memcpy(&bytes[32], &payload, 8);
  put("t.sptb", bytes);
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.sptb", "truncated", "8589934592 nonzeros"});
}

TEST_F(IoErrors, SptbSizeOverflowInHeader) {
  std::string p = valid_file("t.sptb");
  std::string bytes = slurp(p);
  const uint64_t nnz = uint64_t(1) << 62;  // nnz * 8 bytes overflows 64 bits
  std::memcpy(&bytes[24], &nnz, 8);
  put("t.sptb", bytes);
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.sptb", "more than 2^64 bytes"});
}

// ---- SPLATT .bin -------------------------------------------------------------------

TEST_F(IoErrors, SplattTruncated) {
  std::string p = valid_file("t.bin");
  std::string bytes = slurp(p);
  put("t.bin", bytes.substr(0, bytes.size() - 4));
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.bin", "truncated SPLATT binary file", "3 nonzeros"});
}

TEST_F(IoErrors, SplattCsfUnsupported) {
  std::string p = valid_file("t.bin");
  std::string bytes = slurp(p);
  bytes[0] = 1;  // SPLATT_BIN_CSF
  put("t.bin", bytes);
  EXPECT_EQ(read(p), SPT_ERR_UNSUPPORTED);
  expect_message({"t.bin", "CSF"});
}

TEST_F(IoErrors, SplattIndexOutsideDims) {
  std::string p = valid_file("t.bin");
  std::string bytes = slurp(p);
  // Layout: 20-byte header, nmodes, 2 dims, nnz (4 bytes each), then mode 0.
  const uint32_t bad = 3;  // dims[0] = 3
  std::memcpy(&bytes[20 + 16 + 4], &bad, 4);
  put("t.bin", bytes);
  EXPECT_EQ(read(p), SPT_ERR_PARSE);
  expect_message({"t.bin", "nonzero 1", "outside dims[0] = 3"});
}

TEST_F(IoErrors, SplattWideIndexOverflow) {
  std::string b;
  auto add = [&](const void* q, size_t n) { b.append(static_cast<const char*>(q), n); };
  int32_t magic = 0;
  uint64_t iw = 8, vw = 8, nmodes = 1, dim = 4294967295ull, nnz = 1, idx = 4294967295ull;
  double v = 1.0;
  add(&magic, 4), add(&iw, 8), add(&vw, 8), add(&nmodes, 8), add(&dim, 8), add(&nnz, 8), add(&idx, 8), add(&v, 8);
  std::string p = put("w.bin", b);
  EXPECT_EQ(read(p), SPT_ERR_OVERFLOW);
  expect_message({"w.bin", "nonzero 0", "4294967295", "32-bit"});
}

// ---- invalid arguments --------------------------------------------------------------

TEST_F(IoErrors, InvalidOptions) {
  std::string p = put("ok.tns", "1 1 1.0\n");
  opts_.index_base = 2;
  EXPECT_EQ(read(p), SPT_ERR_INVALID_ARGUMENT);
  expect_message({"index_base must be 0 or 1"});
  spt_read_options_init(&opts_);
  const spt_index dims[] = {3, 3};
  opts_.dims = dims;  // order left 0
  EXPECT_EQ(read(p), SPT_ERR_INVALID_ARGUMENT);
  expect_message({"opts->order is 0"});
  spt_read_options_init(&opts_);
  opts_.struct_size = 0;
  EXPECT_EQ(read(p), SPT_ERR_INVALID_ARGUMENT);
  expect_message({"spt_read_options_init"});
  spt_read_options_init(&opts_);
  spt_coo* out = nullptr;
  EXPECT_EQ(spt_read(ctx_, nullptr, &opts_, &out), SPT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(spt_read(ctx_, p.c_str(), &opts_, nullptr), SPT_ERR_INVALID_ARGUMENT);
  spt_write_options wo;
  spt_write_options_init(&wo);
  wo.precision = -1;
  ASSERT_EQ(read(p), SPT_OK);
  EXPECT_EQ(spt_write(ctx_, x_, file("o.tns").c_str(), &wo), SPT_ERR_INVALID_ARGUMENT);
  expect_message({});
  EXPECT_NE(std::string(spt_last_error(ctx_)).find("precision"), std::string::npos);
}

}  // namespace
