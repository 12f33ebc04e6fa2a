// File I/O through the public API: the real tensors in tests/data, round
// trips between every format (text, extended text, .sptb, SPLATT .bin,
// gzip/xz/zstd), exact value formatting, options (index base, dims, dtype,
// duplicates), parallel chunking and progress reporting.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "common/test_util.hpp"
#include "core/coo.hpp"
#include "io/checksum.hpp"
#include "sptensor/sptensor.h"

namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/spt_test_io_XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (fs::path(path_) / name).string(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Ctx {
  spt_context* ctx = nullptr;
  explicit Ctx(int threads = 2) {
    spt_context_create(&ctx);
    spt_context_set_threads(ctx, threads);
  }
  ~Ctx() { spt_context_free(ctx); }
  operator spt_context*() const { return ctx; }
};

struct Tensor {
  spt_coo* x = nullptr;
  ~Tensor() { spt_coo_free(x); }
  spt_coo** out() {
    spt_coo_free(x);
    x = nullptr;
    return &x;
  }
};

spt_read_options read_opts() {
  spt_read_options o;
  spt_read_options_init(&o);
  return o;
}

spt_write_options write_opts() {
  spt_write_options o;
  spt_write_options_init(&o);
  return o;
}

// Bit-exact comparison of shape, indices and values (same order).
void expect_identical(const spt_coo_s& a, const spt_coo_s& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.dims, b.dims);
  ASSERT_EQ(a.nnz, b.nnz);
  for (uint32_t m = 0; m < a.order(); ++m)
    ASSERT_EQ(0, std::memcmp(a.ind[m], b.ind[m], a.nnz * sizeof(spt_index))) << "mode " << m;
  ASSERT_EQ(0, std::memcmp(a.val, b.val, a.nnz * spt::dtype_size(a.dtype()))) << "values";
}

spt_coo* read_ok(spt_context* ctx, const std::string& path, const spt_read_options* o = nullptr) {
  spt_coo* x = nullptr;
  spt_status s = spt_read(ctx, path.c_str(), o, &x);
  EXPECT_EQ(s, SPT_OK) << spt_last_error(ctx);
  return x;
}

// ---------------------------------------------------------------------------

TEST(Checksum, Xxh64KnownVectors) {
  EXPECT_EQ(spt::io::Xxh64::hash("", 0), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(spt::io::Xxh64::hash("a", 1), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(spt::io::Xxh64::hash("abc", 3), 0x44BC2CF5AD770999ULL);
  std::string s(1000, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 31 + 7);
  spt::io::Xxh64 h;
  for (size_t i = 0; i < s.size(); i += 37) h.update(s.data() + i, std::min<size_t>(37, s.size() - i));
  EXPECT_EQ(h.digest(), spt::io::Xxh64::hash(s.data(), s.size()));
}

struct RealTensor {
  const char* file;
  std::vector<spt_index> dims;
  spt_nnz nnz;
};

class RealTensors : public ::testing::TestWithParam<RealTensor> {};

// dims and nnz from the data README; every index inside dims (checked by
// the reader) and the maximum index of each mode equal to its dim (dims are
// inferred); values positive as in the source.
TEST_P(RealTensors, ShapeMatchesReadme) {
  const RealTensor& t = GetParam();
  std::string path = spt::test::data_file(t.file);
  if (path.empty()) GTEST_SKIP() << t.file << " not found";
  Ctx ctx;
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(x.x->dims, t.dims);
  EXPECT_EQ(x.x->nnz, t.nnz);
  for (uint32_t m = 0; m < x.x->order(); ++m) {
    spt_index mx = 0;
    for (spt_nnz k = 0; k < x.x->nnz; ++k) mx = std::max(mx, x.x->ind[m][k]);
    EXPECT_EQ(mx + 1, t.dims[m]);
  }
  const double* v = x.x->values<double>();
  for (spt_nnz k = 0; k < x.x->nnz; ++k) ASSERT_GT(v[k], 0.0);
  // The files are sorted lexicographically: the first line is the smallest
  // coordinate and the reader keeps file order.
  for (spt_nnz k = 1; k < std::min<spt_nnz>(x.x->nnz, 1000); ++k) ASSERT_LE(x.x->ind[0][k - 1], x.x->ind[0][k]);
}

INSTANTIATE_TEST_SUITE_P(
    Data, RealTensors,
    ::testing::Values(RealTensor{"nations.tns.xz", {14, 55, 14}, 1992}, RealTensor{"umls.tns.xz", {135, 46, 135}, 6529},
                      RealTensor{"kinship.tns.xz", {104, 25, 104}, 10686},
                      RealTensor{"jf17k-4ary.tns.xz", {23, 1484, 2215, 2023, 1176}, 9509},
                      RealTensor{"ciao-user-item-category-month.tns.xz", {2248, 16861, 6, 131}, 35936},
                      RealTensor{"email-eu-day.tns.xz", {979, 979, 804}, 894892}),
    [](const auto& info) {
      std::string n = info.param.file;
      n = n.substr(0, n.find('.'));
      for (char& c : n)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// The ciao tensor holds 24 non-integer means (x.5 values): the float path.
TEST(ReadReal, CiaoHasExactHalfValues) {
  std::string path = spt::test::data_file("ciao-user-item-category-month.tns.xz");
  if (path.empty()) GTEST_SKIP();
  Ctx ctx;
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  int fractional = 0;
  const double* v = x.x->values<double>();
  for (spt_nnz k = 0; k < x.x->nnz; ++k) {
    ASSERT_GE(v[k], 1.0);
    ASSERT_LE(v[k], 5.0);
    if (v[k] != std::floor(v[k])) ++fractional;
  }
  EXPECT_EQ(fractional, 24);
}

// The reader gives the same tensor for 1 and 2 threads and for the text,
// the .sptb and the SPLATT .bin versions of a real file (email-eu-day: many
// chunks).
TEST(ReadReal, ThreadsAndFormatsAgree) {
  std::string path = spt::test::data_file("email-eu-day.tns.xz");
  if (path.empty()) GTEST_SKIP();
  TempDir dir;
  Ctx one(1), two(2);
  Tensor a, b, c, d;
  ASSERT_EQ(spt_read(one, path.c_str(), nullptr, a.out()), SPT_OK) << spt_last_error(one);
  ASSERT_EQ(spt_read(two, path.c_str(), nullptr, b.out()), SPT_OK) << spt_last_error(two);
  expect_identical(*a.x, *b.x);
  ASSERT_EQ(spt_write(two, a.x, dir.file("e.sptb").c_str(), nullptr), SPT_OK) << spt_last_error(two);
  ASSERT_EQ(spt_read(two, dir.file("e.sptb").c_str(), nullptr, c.out()), SPT_OK) << spt_last_error(two);
  expect_identical(*a.x, *c.x);
  ASSERT_EQ(spt_write(two, a.x, dir.file("e.bin").c_str(), nullptr), SPT_OK) << spt_last_error(two);
  ASSERT_EQ(spt_read(two, dir.file("e.bin").c_str(), nullptr, d.out()), SPT_OK) << spt_last_error(two);
  expect_identical(*a.x, *d.x);
}

// ---------------------------------------------------------------------------
// Round trips of random tensors through every format
// ---------------------------------------------------------------------------

struct Route {
  const char* name;
  const char* file;                   // extension picks format and compression
  spt_file_format format;             // forced format (AUTO = by extension)
  bool keeps_dims;                    // plain .tns infers dims from the data
};

class RoundTrip : public ::testing::TestWithParam<std::tuple<Route, spt_dtype>> {};

TEST_P(RoundTrip, BitExact) {
  const Route& r = std::get<0>(GetParam());
  const spt_dtype dtype = std::get<1>(GetParam());
  TempDir dir;
  Ctx ctx;
  for (const auto& spec : spt::test::standard_specs()) {
    spt_coo_s x = spt::test::random_coo(dtype, spec);
    const std::string path = dir.file(r.file);
    spt_write_options wo = write_opts();
    wo.format = r.format;
    ASSERT_EQ(spt_write(ctx, &x, path.c_str(), &wo), SPT_OK) << spt_last_error(ctx);
    spt_read_options ro = read_opts();
    ro.dtype = dtype;
    if (!r.keeps_dims) {
      ro.order = x.order();
      ro.dims = x.dims.data();
    }
    Tensor y;
    ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, y.out()), SPT_OK) << spt_last_error(ctx);
    expect_identical(x, *y.x);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, RoundTrip,
    ::testing::Combine(::testing::Values(Route{"tns", "t.tns", SPT_FILE_AUTO, false},
                                         Route{"tns_extended", "t.tns", SPT_FILE_TNS_EXTENDED, true},
                                         Route{"sptb", "t.sptb", SPT_FILE_AUTO, true},
                                         Route{"splatt_bin", "t.bin", SPT_FILE_AUTO, true},
                                         Route{"tns_gz", "t.tns.gz", SPT_FILE_AUTO, false},
                                         Route{"tns_xz", "t.tns.xz", SPT_FILE_AUTO, false},
                                         Route{"tns_zst", "t.tns.zst", SPT_FILE_AUTO, false},
                                         Route{"sptb_zst", "t.sptb.zst", SPT_FILE_AUTO, true},
                                         Route{"bin_xz", "t.bin.xz", SPT_FILE_AUTO, true},
                                         Route{"extended_gz", "t.tns.gz", SPT_FILE_TNS_EXTENDED, true}),
                       ::testing::Values(SPT_FLOAT64, SPT_FLOAT32)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param).name) +
             (std::get<1>(info.param) == SPT_FLOAT32 ? "_float32" : "_float64");
    });

// text -> .sptb -> SPLATT .bin -> .tns.xz -> text, on a real tensor.
TEST(RoundTripChain, TextBinarySplattCompressed) {
  std::string path = spt::test::data_file("ciao-user-item-category-month.tns.xz");
  if (path.empty()) GTEST_SKIP();
  TempDir dir;
  Ctx ctx;
  Tensor orig;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, orig.out()), SPT_OK) << spt_last_error(ctx);
  const char* chain[] = {"a.tns", "b.sptb", "c.bin", "d.tns.xz", "e.sptb.gz", "f.tns"};
  spt_coo* current = orig.x;
  std::vector<Tensor> steps(std::size(chain));
  for (size_t i = 0; i < std::size(chain); ++i) {
    ASSERT_EQ(spt_write(ctx, current, dir.file(chain[i]).c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
    ASSERT_EQ(spt_read(ctx, dir.file(chain[i]).c_str(), nullptr, steps[i].out()), SPT_OK) << spt_last_error(ctx);
    expect_identical(*orig.x, *steps[i].x);
    current = steps[i].x;
  }
  // The uncompressed text written from the real data reproduces the
  // original file byte for byte (integers and x.5 values print exactly).
  EXPECT_EQ(read_all(dir.file("a.tns")), read_all(dir.file("f.tns")));
}

// Compression is detected from the content, not the name.
TEST(Compression, DetectedByMagicNotExtension) {
  TempDir dir;
  Ctx ctx;
  spt::test::RandomTensorSpec spec;
  spec.dims = {5, 6, 7};
  spec.nnz = 50;
  spt_coo_s x = spt::test::random_coo(SPT_FLOAT64, spec);
  for (spt_compression c : {SPT_COMPRESS_GZIP, SPT_COMPRESS_XZ, SPT_COMPRESS_ZSTD}) {
    spt_write_options wo = write_opts();
    wo.compression = c;
    wo.format = SPT_FILE_TNS_EXTENDED;
    const std::string path = dir.file("data.txt");
    ASSERT_EQ(spt_write(ctx, &x, path.c_str(), &wo), SPT_OK) << spt_last_error(ctx);
    std::string bytes = read_all(path);
    ASSERT_GE(bytes.size(), 4u);
    EXPECT_NE(bytes.substr(0, 2), "2\n");  // really compressed
    Tensor y;
    ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, y.out()), SPT_OK) << spt_last_error(ctx);
    expect_identical(x, *y.x);
  }
}

// ---------------------------------------------------------------------------
// Text details
// ---------------------------------------------------------------------------

TEST(TextWrite, ShortestRoundTripValues) {
  TempDir dir;
  Ctx ctx;
  const double vals[] = {0.1, 1.0 / 3.0, 1e-300, -2.5e300, 5e-324, 42.0, -7.0, 123456789012345678.0,
                         std::numeric_limits<double>::max()};
  const spt_nnz n = std::size(vals);
  std::vector<spt_index> ind(2 * n);
  for (spt_nnz k = 0; k < n; ++k) ind[k] = ind[n + k] = static_cast<spt_index>(k);
  Tensor x;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 2, nullptr, n, ind.data(), n, 0, vals, 0, x.out()), SPT_OK);
  const std::string path = dir.file("v.tns");
  ASSERT_EQ(spt_write(ctx, x.x, path.c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  std::string text = read_all(path);
  EXPECT_EQ(text.substr(0, text.find('\n', text.find('\n') + 1) + 1), "1 1 0.1\n2 2 0.3333333333333333\n");
  EXPECT_NE(text.find("6 6 42\n"), std::string::npos);
  EXPECT_NE(text.find("7 7 -7\n"), std::string::npos);
  Tensor y;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, y.out()), SPT_OK) << spt_last_error(ctx);
  expect_identical(*x.x, *y.x);
}

TEST(TextWrite, PrecisionAndIndexBase) {
  TempDir dir;
  Ctx ctx;
  const double vals[] = {1.0 / 3.0, 2.0 / 3.0};
  const spt_index ind[] = {0, 1, 2, 3};
  Tensor x;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 2, nullptr, 2, ind, 2, 0, vals, 0, x.out()), SPT_OK);
  spt_write_options wo = write_opts();
  wo.precision = 3;
  wo.index_base = 0;
  const std::string path = dir.file("p.tns");
  ASSERT_EQ(spt_write(ctx, x.x, path.c_str(), &wo), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(read_all(path), "0 2 0.333\n1 3 0.667\n");
  spt_read_options ro = read_opts();
  ro.index_base = 0;
  Tensor y;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, y.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(y.x->ind[0][1], 1u);
  EXPECT_EQ(y.x->ind[1][1], 3u);
  EXPECT_DOUBLE_EQ(y.x->values<double>()[1], 0.667);
}

TEST(TextWrite, ExtendedHeaderLayout) {
  TempDir dir;
  Ctx ctx;
  const double vals[] = {2.5};
  const spt_index dims[] = {3, 4, 5};
  const spt_index ind[] = {2, 0, 4};
  Tensor x;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 3, dims, 1, ind, 1, 0, vals, 0, x.out()), SPT_OK);
  spt_write_options wo = write_opts();
  wo.format = SPT_FILE_TNS_EXTENDED;
  ASSERT_EQ(spt_write(ctx, x.x, dir.file("e.tns").c_str(), &wo), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(read_all(dir.file("e.tns")), "3\n3 4 5\n3 1 5 2.5\n");
}

TEST(TextRead, CommentsBlankLinesTabsCrlfAndNoFinalNewline) {
  TempDir dir;
  Ctx ctx;
  const std::string path = dir.file("c.tns");
  write_text(path, "# a comment\n\n  # indented comment\n1 2 3 1.5\r\n2\t1\t1\t-2e3\n\n   \n3 3  3 7 \n4 1 2 0.25");
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(x.x->nnz, 4u);
  EXPECT_EQ(x.x->dims, (std::vector<spt_index>{4, 3, 3}));
  const double* v = x.x->values<double>();
  EXPECT_EQ(v[0], 1.5);
  EXPECT_EQ(v[1], -2000.0);
  EXPECT_EQ(v[2], 7.0);
  EXPECT_EQ(v[3], 0.25);
  EXPECT_EQ(x.x->ind[0][3], 3u);
  EXPECT_EQ(x.x->ind[2][0], 2u);
}

TEST(TextRead, ExtendedHeaderDetectedAndForced) {
  TempDir dir;
  Ctx ctx;
  const std::string path = dir.file("x.tns");
  write_text(path, "# ParTI!\n3\n4 5 6\n1 1 1 1.0\n2 3 4 2.0\n");
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(x.x->dims, (std::vector<spt_index>{4, 5, 6}));  // header dims, not the max index
  EXPECT_EQ(x.x->nnz, 2u);
  spt_read_options ro = read_opts();
  ro.format = SPT_FILE_TNS_EXTENDED;
  Tensor y;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, y.out()), SPT_OK) << spt_last_error(ctx);
  expect_identical(*x.x, *y.x);
  // A header with no entries is an empty tensor with the header's dims.
  write_text(path, "2\n7 8\n");
  Tensor z;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, z.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(z.x->nnz, 0u);
  EXPECT_EQ(z.x->dims, (std::vector<spt_index>{7, 8}));
}

TEST(TextRead, ExplicitDimsAndEmptyFile) {
  TempDir dir;
  Ctx ctx;
  const std::string path = dir.file("d.tns");
  write_text(path, "1 1 1\n2 2 2\n");
  const spt_index dims[] = {10, 20};
  spt_read_options ro = read_opts();
  ro.order = 2;
  ro.dims = dims;
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, x.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(x.x->dims, (std::vector<spt_index>{10, 20}));
  write_text(path, "# nothing\n");
  Tensor e;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, e.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(e.x->nnz, 0u);
  EXPECT_EQ(e.x->dims, (std::vector<spt_index>{10, 20}));
}

TEST(TextRead, LargestIndexAndFloat32) {
  TempDir dir;
  Ctx ctx;
  const std::string path = dir.file("big.tns");
  write_text(path, "4294967295 1 0.1\n");  // largest 1-based index: dims = 2^32 - 1
  spt_read_options ro = read_opts();
  ro.dtype = SPT_FLOAT32;
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, x.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(x.x->dims[0], 4294967295u);
  EXPECT_EQ(x.x->ind[0][0], 4294967294u);
  EXPECT_EQ(x.x->dtype(), SPT_FLOAT32);
  EXPECT_EQ(x.x->values<float>()[0], 0.1f);  // parsed as float: correctly rounded
}

TEST(TextRead, NonFiniteAcceptedUnlessRejected) {
  TempDir dir;
  Ctx ctx;
  const std::string path = dir.file("n.tns");
  write_text(path, "1 1 nan\n2 2 inf\n3 3 -inf\n4 4 1e999\n");
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  const double* v = x.x->values<double>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[2], -std::numeric_limits<double>::infinity());
  EXPECT_EQ(v[3], std::numeric_limits<double>::infinity());  // overflow reads as inf
}

TEST(TextRead, DuplicatesKeepSumReject) {
  TempDir dir;
  Ctx ctx;
  const std::string path = dir.file("dup.tns");
  write_text(path, "2 1 1.0\n1 1 2.0\n2 1 3.0\n1 2 4.0\n2 1 0.5\n");
  Tensor keep;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, keep.out()), SPT_OK);
  EXPECT_EQ(keep.x->nnz, 5u);
  spt_read_options ro = read_opts();
  ro.duplicates = SPT_DUPLICATES_SUM;
  Tensor sum;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, sum.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(sum.x->nnz, 3u);  // (1,1)=2, (1,2)=4, (2,1)=4.5, sorted
  const double* v = sum.x->values<double>();
  EXPECT_EQ(sum.x->ind[0][0], 0u);
  EXPECT_EQ(sum.x->ind[1][0], 0u);
  EXPECT_EQ(v[0], 2.0);
  EXPECT_EQ(sum.x->ind[1][1], 1u);
  EXPECT_EQ(v[1], 4.0);
  EXPECT_EQ(sum.x->ind[0][2], 1u);
  EXPECT_EQ(v[2], 4.5);
  ro.duplicates = SPT_DUPLICATES_REJECT;
  Tensor rej;
  EXPECT_EQ(spt_read(ctx, path.c_str(), &ro, rej.out()), SPT_ERR_PARSE);
  std::string msg = spt_last_error(ctx);
  EXPECT_NE(msg.find("dup.tns:3: duplicate coordinate (1, 0)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("first seen at " + path + ":1"), std::string::npos) << msg;
}

// Many chunks: a generated file with comments sprinkled in is read
// identically with 1 and 2 threads, and matches the generating arrays.
TEST(TextRead, ManyChunksWithCommentsMatchSource) {
  TempDir dir;
  const std::string path = dir.file("many.tns");
  std::string text;
  std::vector<spt_index> i0, i1;
  std::vector<double> vals;
  for (int k = 0; k < 60000; ++k) {
    if (k % 997 == 0) text += "# comment\n\n";
    i0.push_back(static_cast<spt_index>(k % 1234));
    i1.push_back(static_cast<spt_index>((k * 7) % 55));
    vals.push_back(k % 3 == 0 ? k : k / 8.0);
    text += std::to_string(i0.back() + 1) + " " + std::to_string(i1.back() + 1) + " ";
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g\n", vals.back());
    text += buf;
  }
  write_text(path, text);
  Ctx one(1), two(2);
  Tensor a, b;
  ASSERT_EQ(spt_read(one, path.c_str(), nullptr, a.out()), SPT_OK) << spt_last_error(one);
  ASSERT_EQ(spt_read(two, path.c_str(), nullptr, b.out()), SPT_OK) << spt_last_error(two);
  expect_identical(*a.x, *b.x);
  ASSERT_EQ(a.x->nnz, vals.size());
  for (size_t k = 0; k < vals.size(); ++k) {
    ASSERT_EQ(a.x->ind[0][k], i0[k]);
    ASSERT_EQ(a.x->ind[1][k], i1[k]);
    ASSERT_EQ(a.x->values<double>()[k], vals[k]);
  }
}

// ---------------------------------------------------------------------------
// SPLATT .bin layout
// ---------------------------------------------------------------------------

TEST(SplattBin, WrittenLayoutMatchesSplatt) {
  TempDir dir;
  Ctx ctx;
  const double vals[] = {1.5, -2.0};
  const spt_index dims[] = {3, 4};
  const spt_index ind[] = {0, 2, 3, 1};  // mode 0: 0 2; mode 1: 3 1
  Tensor x;
  ASSERT_EQ(spt_coo_create_from_arrays(ctx, SPT_FLOAT64, 2, dims, 2, ind, 2, 0, vals, 0, x.out()), SPT_OK);
  ASSERT_EQ(spt_write(ctx, x.x, dir.file("s.bin").c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  std::string b = read_all(dir.file("s.bin"));
  ASSERT_EQ(b.size(), 4u + 8 + 8 + 4 * (1 + 2 + 1) + 4 * 2 * 2 + 8 * 2);
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, b.data() + at, 8);
    return v;
  };
  EXPECT_EQ(u32(0), 0u);   // SPLATT_BIN_COORD
  EXPECT_EQ(u64(4), 4u);   // idx_width
  EXPECT_EQ(u64(12), 8u);  // val_width
  EXPECT_EQ(u32(20), 2u);  // nmodes
  EXPECT_EQ(u32(24), 3u);
  EXPECT_EQ(u32(28), 4u);
  EXPECT_EQ(u32(32), 2u);  // nnz
  EXPECT_EQ(u32(36), 0u);
  EXPECT_EQ(u32(40), 2u);
  EXPECT_EQ(u32(44), 3u);
  EXPECT_EQ(u32(48), 1u);
  double v1;
  std::memcpy(&v1, b.data() + 60, 8);
  EXPECT_EQ(v1, -2.0);
}

// SPLATT files with 64-bit indices and 32-bit values (as a SPLATT build
// with wide indices writes) are converted.
TEST(SplattBin, ReadsWideIndicesAndFloatValues) {
  TempDir dir;
  Ctx ctx;
  std::string b;
  auto put = [&](const void* p, size_t n) { b.append(static_cast<const char*>(p), n); };
  int32_t magic = 0;
  uint64_t iw = 8, vw = 4, nmodes = 3, dims[3] = {5, 6, 7}, nnz = 2;
  uint64_t ind[3][2] = {{0, 4}, {5, 1}, {6, 0}};
  float vals[2] = {0.5f, 3.25f};
  put(&magic, 4);
  put(&iw, 8);
  put(&vw, 8);
  put(&nmodes, 8);
  put(dims, sizeof dims);
  put(&nnz, 8);
  put(ind, sizeof ind);
  put(vals, sizeof vals);
  write_text(dir.file("w.bin"), b);
  Tensor x;
  ASSERT_EQ(spt_read(ctx, dir.file("w.bin").c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(x.x->dims, (std::vector<spt_index>{5, 6, 7}));
  EXPECT_EQ(x.x->ind[0][1], 4u);
  EXPECT_EQ(x.x->ind[1][0], 5u);
  EXPECT_EQ(x.x->ind[2][0], 6u);
  EXPECT_EQ(x.x->values<double>()[1], 3.25);
}

// ---------------------------------------------------------------------------
// Writing: atomic rename, progress, options
// ---------------------------------------------------------------------------

TEST(Write, LeavesNoTemporaryFilesAndReplacesAtomically) {
  TempDir dir;
  Ctx ctx;
  spt::test::RandomTensorSpec spec;
  spec.dims = {9, 9};
  spec.nnz = 40;
  spt_coo_s x = spt::test::random_coo(SPT_FLOAT64, spec);
  const std::string path = dir.file("t.tns");
  write_text(path, "old contents\n");
  ASSERT_EQ(spt_write(ctx, &x, path.c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
  }
  EXPECT_EQ(files, 1);
  EXPECT_NE(read_all(path), "old contents\n");
  // A failing write (directory missing) reports SPT_ERR_IO and creates nothing.
  EXPECT_EQ(spt_write(ctx, &x, dir.file("missing/t.tns").c_str(), nullptr), SPT_ERR_IO);
  EXPECT_NE(std::string(spt_last_error(ctx)).find("missing/t.tns"), std::string::npos);
}

TEST(Progress, ReadReportsIncreasingFractionsEndingAtOne) {
  std::string path = spt::test::data_file("email-eu-day.tns.xz");
  if (path.empty()) GTEST_SKIP();
  Ctx ctx;
  struct Seen {
    std::vector<double> fractions;
    bool stage_ok = true;
  } seen;
  spt_context_set_progress(
      ctx,
      [](void* data, const char* stage, double f) {
        auto* s = static_cast<Seen*>(data);
        if (std::string(stage) != "read") s->stage_ok = false;
        s->fractions.push_back(f);
      },
      &seen);
  Tensor x;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, x.out()), SPT_OK);
  EXPECT_TRUE(seen.stage_ok);
  ASSERT_GE(seen.fractions.size(), 3u);
  EXPECT_EQ(seen.fractions.front(), 0.0);
  EXPECT_EQ(seen.fractions.back(), 1.0);
  for (size_t i = 1; i < seen.fractions.size(); ++i) EXPECT_GE(seen.fractions[i], seen.fractions[i - 1]);
}

TEST(Options, InitDefaultsAndNullOptions) {
  spt_read_options ro;
  std::memset(&ro, 0xAB, sizeof ro);
  ASSERT_EQ(spt_read_options_init(&ro), SPT_OK);
  EXPECT_EQ(ro.struct_size, sizeof ro);
  EXPECT_EQ(ro.format, SPT_FILE_AUTO);
  EXPECT_EQ(ro.dtype, SPT_FLOAT64);
  EXPECT_EQ(ro.index_base, 1);
  EXPECT_EQ(ro.order, 0u);
  EXPECT_EQ(ro.dims, nullptr);
  EXPECT_EQ(ro.duplicates, SPT_DUPLICATES_KEEP);
  EXPECT_EQ(ro.reject_nonfinite, 0);
  spt_write_options wo;
  ASSERT_EQ(spt_write_options_init(&wo), SPT_OK);
  EXPECT_EQ(wo.format, SPT_FILE_AUTO);
  EXPECT_EQ(wo.compression, SPT_COMPRESS_AUTO);
  EXPECT_EQ(wo.index_base, 1);
  EXPECT_EQ(wo.precision, 0);
  EXPECT_EQ((spt_read_options_init)(nullptr), SPT_ERR_INVALID_ARGUMENT);
  // NULL context and NULL options work.
  TempDir dir;
  write_text(dir.file("a.tns"), "1 1 1\n");
  spt_coo* x = nullptr;
  ASSERT_EQ(spt_read(nullptr, dir.file("a.tns").c_str(), nullptr, &x), SPT_OK) << spt_thread_last_error();
  EXPECT_EQ(spt_write(nullptr, x, dir.file("b.sptb").c_str(), nullptr), SPT_OK);
  spt_coo_free(x);
}

}  // namespace

// ---------------------------------------------------------------------------
// Zero-copy .sptb loads (opt-in map_binary): the arrays are the mapped file
// until something writes in place; every operation still sees exactly the
// file's contents.
// ---------------------------------------------------------------------------

TEST(SptbZeroCopy, MappedLoadOutlivesFileAndCopiesOnWrite) {
  TempDir dir;
  Ctx ctx;
  for (spt_dtype dtype : {SPT_FLOAT32, SPT_FLOAT64}) {
    spt::test::RandomTensorSpec spec;
    spec.dims = {40, 7, 300};
    spec.nnz = 5000;
    spt_coo_s x = spt::test::random_coo(dtype, spec);
    const std::string path = dir.file("z.sptb");
    ASSERT_EQ(spt_write(ctx, &x, path.c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
    spt_read_options ro = read_opts();
    ro.dtype = dtype;
    ro.map_binary = 1;
    Tensor y;
    ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, y.out()), SPT_OK) << spt_last_error(ctx);
    ASSERT_TRUE(y.x->backing) << "same-dtype .sptb load with map_binary should map the file";
    expect_identical(x, *y.x);
    // The mapping survives the file's removal.
    fs::remove(path);
    expect_identical(x, *y.x);

    // Append copies the mapped arrays first, then adds the new nonzero.
    const spt_index coord[3] = {1, 2, 3};
    const double v64 = 0.5;
    const float v32 = 0.5f;
    const void* v = dtype == SPT_FLOAT32 ? static_cast<const void*>(&v32) : static_cast<const void*>(&v64);
    ASSERT_EQ(spt_coo_append(ctx, y.x, 1, coord, 1, 0, v, 0), SPT_OK) << spt_last_error(ctx);
    EXPECT_FALSE(y.x->backing);
    ASSERT_EQ(y.x->nnz, x.nnz + 1);
    for (uint32_t m = 0; m < 3; ++m) {
      EXPECT_EQ(0, std::memcmp(y.x->ind[m], x.ind[m], x.nnz * sizeof(spt_index)));
      EXPECT_EQ(y.x->ind[m][x.nnz], coord[m]);
    }
  }
}

TEST(SptbZeroCopy, SortAndCoalesceOfMappedTensorMatchOwnedCopy) {
  TempDir dir;
  Ctx ctx;
  spt::test::RandomTensorSpec spec;
  spec.dims = {9, 8, 7, 6};
  spec.nnz = 3000;  // many duplicate coordinates
  spt_coo_s x = spt::test::random_coo(SPT_FLOAT64, spec);
  const std::string path = dir.file("s.sptb");
  ASSERT_EQ(spt_write(ctx, &x, path.c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  spt_read_options copy = read_opts();
  copy.copy_binary = 1;
  spt_read_options map = read_opts();
  map.map_binary = 1;
  Tensor mapped, owned, by_default;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &map, mapped.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_read(ctx, path.c_str(), &copy, owned.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, by_default.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_TRUE(mapped.x->backing);
  ASSERT_FALSE(owned.x->backing) << "copy_binary must copy";
  ASSERT_FALSE(by_default.x->backing) << "a plain .sptb is read by copy unless map_binary is set";
  expect_identical(*mapped.x, *by_default.x);
  expect_identical(*mapped.x, *owned.x);
  const uint32_t order[4] = {2, 0, 3, 1};
  ASSERT_EQ(spt_coo_sort(ctx, mapped.x, order), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_coo_sort(ctx, owned.x, order), SPT_OK) << spt_last_error(ctx);
  expect_identical(*mapped.x, *owned.x);
  Tensor mapped2;
  ASSERT_EQ(spt_read(ctx, path.c_str(), &map, mapped2.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_coo_coalesce(ctx, mapped2.x, SPT_DUPLICATES_SUM), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_coo_coalesce(ctx, owned.x, SPT_DUPLICATES_SUM), SPT_OK) << spt_last_error(ctx);
  expect_identical(*mapped2.x, *owned.x);
  // The file on disk is untouched by the in-memory changes.
  Tensor again;
  ASSERT_EQ(spt_read(ctx, path.c_str(), nullptr, again.out()), SPT_OK) << spt_last_error(ctx);
  expect_identical(x, *again.x);
}

TEST(SptbZeroCopy, CompressedAndConvertedLoadsAgree) {
  TempDir dir;
  Ctx ctx;
  spt::test::RandomTensorSpec spec;
  spec.dims = {30, 20, 10};
  spec.nnz = 2000;
  spt_coo_s x = spt::test::random_coo(SPT_FLOAT32, spec);
  ASSERT_EQ(spt_write(ctx, &x, dir.file("c.sptb.zst").c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  spt_read_options ro = read_opts();
  ro.dtype = SPT_FLOAT32;
  Tensor y, z;
  // Decompressed image adopted as the tensor's storage.
  ASSERT_EQ(spt_read(ctx, dir.file("c.sptb.zst").c_str(), &ro, y.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_TRUE(y.x->backing);
  expect_identical(x, *y.x);
  // Another dtype: converted into owned arrays.
  ro.dtype = SPT_FLOAT64;
  ASSERT_EQ(spt_read(ctx, dir.file("c.sptb.zst").c_str(), &ro, z.out()), SPT_OK) << spt_last_error(ctx);
  EXPECT_FALSE(z.x->backing);
  for (spt_nnz k = 0; k < x.nnz; ++k) ASSERT_EQ(z.x->values<double>()[k], double(x.values<float>()[k]));
}

// ---------------------------------------------------------------------------
// Writers keep every piece of information
// ---------------------------------------------------------------------------

// Text output keeps dims larger than the max indices (extended header) and
// stays plain FROSTT when the max indices give the dims.
TEST(WriterKeepsDims, TextWritesTheHeaderOnlyWhenNeeded) {
  TempDir dir;
  Ctx ctx;
  const std::string ext = dir.file("ext.tns");
  write_text(ext, "3\n5 6 7\n1 1 1 1.5\n2 2 2 2.5\n");
  Tensor x;
  ASSERT_EQ(spt_read(ctx, ext.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  for (const char* name : {"out.tns", "out.tns.gz", "out.tns.xz", "out.tns.zst"}) {
    const std::string out = dir.file(name);
    ASSERT_EQ(spt_write(ctx, x.x, out.c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
    Tensor y;
    ASSERT_EQ(spt_read(ctx, out.c_str(), nullptr, y.out()), SPT_OK) << spt_last_error(ctx);
    EXPECT_EQ(y.x->dims, (std::vector<spt_index>{5, 6, 7})) << name;
    expect_identical(*x.x, *y.x);
  }
  EXPECT_EQ(read_all(dir.file("out.tns")), "3\n5 6 7\n1 1 1 1.5\n2 2 2 2.5\n");
  // Forced plain format also keeps the dims (there is no way to without).
  spt_write_options wo = write_opts();
  wo.format = SPT_FILE_TNS;
  ASSERT_EQ(spt_write(ctx, x.x, dir.file("forced.tns").c_str(), &wo), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(read_all(dir.file("forced.tns")), "3\n5 6 7\n1 1 1 1.5\n2 2 2 2.5\n");
  // One dim short of its max index + 1 in the last mode only.
  write_text(ext, "3\n2 2 3\n1 1 1 1.5\n2 2 2 2.5\n");
  ASSERT_EQ(spt_read(ctx, ext.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_write(ctx, x.x, dir.file("last.tns").c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(read_all(dir.file("last.tns")), "3\n2 2 3\n1 1 1 1.5\n2 2 2 2.5\n");
  // Dims equal to the max indices: plain FROSTT, readable by other tools.
  write_text(ext, "3\n2 2 2\n1 1 1 1.5\n2 2 2 2.5\n");
  ASSERT_EQ(spt_read(ctx, ext.c_str(), nullptr, x.out()), SPT_OK) << spt_last_error(ctx);
  ASSERT_EQ(spt_write(ctx, x.x, dir.file("plain.tns").c_str(), nullptr), SPT_OK) << spt_last_error(ctx);
  EXPECT_EQ(read_all(dir.file("plain.tns")), "1 1 1 1.5\n2 2 2 2.5\n");
}

// An empty tensor round-trips with its dims and dtype through every format
// and compression the writer supports.
TEST(WriterKeepsDims, EmptyTensorRoundTripsEverywhere) {
  TempDir dir;
  Ctx ctx;
  for (spt_dtype dtype : {SPT_FLOAT64, SPT_FLOAT32}) {
    const spt_index dims[] = {5, 6, 7};
    Tensor x;
    ASSERT_EQ(spt_coo_create(ctx, dtype, 3, dims, x.out()), SPT_OK);
    for (const char* name : {"e.tns", "e.tns.gz", "e.tns.xz", "e.tns.zst", "e.sptb", "e.sptb.gz", "e.sptb.xz",
                             "e.sptb.zst", "e.bin", "e.bin.gz", "e.bin.xz", "e.bin.zst"}) {
      for (spt_file_format format : {SPT_FILE_AUTO, SPT_FILE_TNS_EXTENDED}) {
        if (format == SPT_FILE_TNS_EXTENDED && std::string(name).find(".tns") == std::string::npos) continue;
        const std::string path = dir.file(name);
        spt_write_options wo = write_opts();
        wo.format = format;
        ASSERT_EQ(spt_write(ctx, x.x, path.c_str(), &wo), SPT_OK) << name << ": " << spt_last_error(ctx);
        EXPECT_GT(fs::file_size(path), 0u) << name;
        spt_read_options ro = read_opts();
        ro.dtype = dtype;
        Tensor y;
        ASSERT_EQ(spt_read(ctx, path.c_str(), &ro, y.out()), SPT_OK) << name << ": " << spt_last_error(ctx);
        EXPECT_EQ(y.x->nnz, 0u) << name;
        EXPECT_EQ(y.x->dims, (std::vector<spt_index>{5, 6, 7})) << name;
        EXPECT_EQ(y.x->dtype(), dtype) << name;
      }
    }
  }
}
