#pragma once
// A progress bar on stderr for long commands (bench throughput, checkpoint), drawn only when
// stderr is a terminal: redirected runs and the tests see nothing of it.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace minivllm::cli {

class ProgressBar {
 public:
  // `unit` names what is counted ("requests", "MB").
  ProgressBar(std::string label, std::string unit);
  ~ProgressBar();  // ends the line if one was drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `done` of `total`; safe from several threads. Redraws at most every 100 ms, and at the end.
  void update(std::uint64_t done, std::uint64_t total);

 private:
  const bool enabled_;
  std::string label_, unit_;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
  bool drawn_ = false;
};

}  // namespace minivllm::cli
