#include "cli/progress_bar.hpp"

#include <unistd.h>

#include <cstdio>

namespace minivllm::cli {

namespace {
constexpr int kWidth = 30;
}  // namespace

ProgressBar::ProgressBar(std::string label, std::string unit)
    : enabled_(::isatty(STDERR_FILENO) == 1), label_(std::move(label)), unit_(std::move(unit)) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::fputc('\n', stderr);
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_ || total == 0) return;
  std::lock_guard lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (done < total && drawn_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  drawn_ = true;
  const int filled = static_cast<int>(kWidth * done / total);
  std::fprintf(stderr, "\r%s [%.*s%*s] %llu/%llu %s %3d%%", label_.c_str(), filled,
               "##############################", kWidth - filled, "",
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
               unit_.c_str(), static_cast<int>(100 * done / total));
  std::fflush(stderr);
}

}  // namespace minivllm::cli
