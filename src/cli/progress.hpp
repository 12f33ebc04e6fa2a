// Progress bar on stderr, fed by the library's progress callback
// (spt_context_set_progress). On a terminal it redraws one line in place; when
// stderr is a file or pipe (forced with --progress) it prints a line every 10%.
#pragma once

#include <string>

namespace sptcli {

class ProgressBar {
 public:
  explicit ProgressBar(bool terminal) : terminal_(terminal) {}
  ~ProgressBar() { finish(); }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(const char* stage, double fraction);
  // End the current line (if a bar is shown) so later output starts clean.
  void finish();

  // Matches spt_progress_fn; user_data is the ProgressBar.
  static void callback(void* user_data, const char* stage, double fraction);

 private:
  bool terminal_;
  bool drawn_ = false;
  std::string stage_;
  int last_percent_ = -1;
};

// Whether a progress bar should be shown for reading a file of `file_bytes`:
// always with --progress, otherwise only on a terminal and for large files.
bool want_progress(bool forced, unsigned long long file_bytes);

// Whether stderr is a terminal.
bool stderr_is_terminal();

}  // namespace sptcli
