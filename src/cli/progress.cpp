#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace sptcli {

namespace {
// Files smaller than this load in well under a second; no bar for them.
constexpr unsigned long long kProgressMinBytes = 4ull << 20;
constexpr int kBarWidth = 40;
}  // namespace

bool stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

bool want_progress(bool forced, unsigned long long file_bytes) {
  return forced || (stderr_is_terminal() && file_bytes >= kProgressMinBytes);
}

void ProgressBar::callback(void* user_data, const char* stage, double fraction) {
  static_cast<ProgressBar*>(user_data)->update(stage ? stage : "", fraction);
}

void ProgressBar::update(const char* stage, double fraction) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  if (stage_ != stage) {
    finish();
    stage_ = stage;
    last_percent_ = -1;
  }
  int percent = static_cast<int>(fraction * 100.0);
  // Redraw only when the shown number changes: the library may call often.
  if (terminal_) {
    if (percent == last_percent_) return;
    int filled = static_cast<int>(fraction * kBarWidth);
    std::fprintf(stderr, "\r%-6s [%s%s] %3d%%", stage_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kBarWidth - filled, '.').c_str(), percent);
    drawn_ = true;
  } else {
    int step = percent / 10 * 10;
    if (step == last_percent_ / 10 * 10 && last_percent_ >= 0) return;
    std::fprintf(stderr, "%s: %d%%\n", stage_.c_str(), step);
    percent = step;
  }
  last_percent_ = percent;
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (drawn_) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
  }
  drawn_ = false;
}

}  // namespace sptcli
