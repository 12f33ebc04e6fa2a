// A gtest fixture for reader tests: a temporary directory, a 2-thread
// context, read options, and helpers to write bytes, read a file back and
// check the error message. test_io_errors.cpp and test_io_stream.cpp derive
// their fixtures from it.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sptensor/sptensor.h"

namespace spt::test {

class ReadFixture : public ::testing::Test {
 protected:
  // `prefix` names the temporary directory (/tmp/<prefix>_XXXXXX).
  explicit ReadFixture(const char* prefix) : prefix_(prefix) {}

  void SetUp() override {
    std::string tmpl = "/tmp/" + prefix_ + "_XXXXXX";
    dir_ = mkdtemp(tmpl.data());
    spt_context_create(&ctx_);
    spt_context_set_threads(ctx_, 2);
    spt_read_options_init(&opts_);
  }
  void TearDown() override {
    spt_coo_free(x_);
    spt_context_free(ctx_);
    std::filesystem::remove_all(dir_);
  }

  std::string file(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }

  std::string put(const std::string& name, const std::string& bytes) {
    std::string p = file(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
  }

  // Read `path` into x_; on failure nothing must be written to the output.
  spt_status read(const std::string& path) {
    spt_coo_free(x_);
    x_ = nullptr;
    spt_status s = spt_read(ctx_, path.c_str(), &opts_, &x_);
    if (s != SPT_OK) EXPECT_EQ(x_, nullptr);
    message_ = spt_last_error(ctx_);
    return s;
  }

  // Every string of `parts` appears in the last message.
  void expect_message(const std::vector<std::string>& parts) {
    for (const std::string& part : parts)
      EXPECT_NE(message_.find(part), std::string::npos) << message_ << "\n  lacks: " << part;
  }

  // A small valid tensor (3 x 3, 3 nonzeros) written to `name` (format and
  // compression from the extension).
  std::string valid_file(const std::string& name) {
    const double vals[] = {1.0, 2.0, 3.0};
    const spt_index ind[] = {0, 1, 2, 2, 1, 0};
    const spt_index dims[] = {3, 3};
    spt_coo* t = nullptr;
    EXPECT_EQ(spt_coo_create_from_arrays(ctx_, SPT_FLOAT64, 2, dims, 3, ind, 3, 0, vals, 0, &t), SPT_OK);
    std::string p = file(name);
    EXPECT_EQ(spt_write(ctx_, t, p.c_str(), nullptr), SPT_OK) << spt_last_error(ctx_);
    spt_coo_free(t);
    return p;
  }

  std::string prefix_;
  std::string dir_;
  spt_context* ctx_ = nullptr;
  spt_read_options opts_;
  spt_coo* x_ = nullptr;
  std::string message_;
};

}  // namespace spt::test
