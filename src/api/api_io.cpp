// C ABI: reading and writing tensor files (formats and compression are
// handled in src/io/).
#include <cstddef>
#include <memory>

#include "api/guard.hpp"
#include "api/options_init.hpp"
#include "core/coo.hpp"
#include "io/io.hpp"

using namespace spt;

extern "C" {

SPT_API spt_status spt_read_options_init_size(spt_read_options* opts, size_t struct_size) {
  return guarded("spt_read_options_init", [&] {
    spt_read_options d;
    io::default_read_options(&d);
    write_options_defaults(opts, struct_size, d, offsetof(spt_read_options, copy_binary));
  });
}

SPT_API spt_status spt_write_options_init_size(spt_write_options* opts, size_t struct_size) {
  return guarded("spt_write_options_init", [&] {
    spt_write_options d;
    io::default_write_options(&d);
    write_options_defaults(opts, struct_size, d, sizeof(spt_write_options));
  });
}

// The exported symbols behind the header's macros of the same names (for
// callers that cannot use the macros, e.g. through an FFI): they write this
// release's whole struct.
SPT_API spt_status (spt_read_options_init)(spt_read_options* opts) { return spt_read_options_init_size(opts, sizeof *opts); }
SPT_API spt_status (spt_write_options_init)(spt_write_options* opts) {
  return spt_write_options_init_size(opts, sizeof *opts);
}

SPT_API spt_status spt_read(spt_context* ctx, const char* path, const spt_read_options* opts, spt_coo** out) {
  return guarded(ctx, "spt_read", [&] {
    require_not_null(path, "path");
    require_not_null(out, "out");
    require(path[0] != '\0', "path must not be empty");
    const io::ReadOptions options = io::read_options_from(opts);
    auto x = std::make_unique<spt_coo_s>(io::read_tensor(resolve(ctx), path, options));
    *out = x.release();
  });
}

SPT_API spt_status spt_write(spt_context* ctx, const spt_coo* x, const char* path, const spt_write_options* opts) {
  return guarded(ctx, "spt_write", [&] {
    require_not_null(x, "x");
    require_not_null(path, "path");
    require(path[0] != '\0', "path must not be empty");
    const io::WriteOptions options = io::write_options_from(opts);
    io::write_tensor(resolve(ctx), *x, path, options);
  });
}

}  // extern "C"
