#pragma once
// HF's Split pre-tokenizer with behavior "Isolated": the text is cut into the regex's matches
// and the gaps between them. HF compiles the pattern with Oniguruma; minivllm uses PCRE2 (UTF,
// UCP, JIT) and translates the one class whose meaning differs (\s, see oniguruma_to_pcre2).
// Known gap: Debian 12's PCRE2 (10.42) has Unicode 14 tables, so characters added in Unicode
// 15/16 (CJK extension H/I, new scripts and digits) are not \p{L}/\p{N} to it and text holding
// them may split differently from HF; all other text splits identically.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace minivllm {

class SplitPattern {
 public:
  // Throws minivllm::Error naming the pattern if PCRE2 rejects it.
  explicit SplitPattern(std::string_view oniguruma_pattern);
  SplitPattern(SplitPattern&&) noexcept;
  SplitPattern& operator=(SplitPattern&&) noexcept;
  ~SplitPattern();

  // Appends the pieces of `text` (valid UTF-8, not checked again here) to `pieces`, in order;
  // together they cover the text exactly.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

  // The pattern as given to PCRE2.
  const std::string& pcre2_pattern() const { return pcre2_pattern_; }

 private:
  struct Compiled;
  std::string pcre2_pattern_;
  std::unique_ptr<Compiled> compiled_;
};

// Oniguruma's Unicode \s and PCRE2's differ (NEL, U+180E): rewrite \s and \S as explicit
// classes so PCRE2 matches what Oniguruma does. Other syntax is shared by both and copied.
std::string oniguruma_to_pcre2(std::string_view pattern);

}  // namespace minivllm
