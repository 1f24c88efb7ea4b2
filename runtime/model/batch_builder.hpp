#pragma once
// Assembles a Batch sequence by sequence, deriving positions, slot mapping and block-table rows
// from each sequence's block table. The engine's scheduler (and the tests) build steps with it.
#include <cstdint>
#include <span>
#include <vector>

#include <minivllm/batch.hpp>

namespace minivllm {

// Which of a sequence's new tokens get logits.
enum class LogitsFor : std::uint8_t {
  last,  // the last new token (decode, last prefill chunk)
  all,   // every new token (prompt logprobs)
  none,  // none (a prefill chunk that does not end the prompt)
};

class BatchBuilder {
 public:
  explicit BatchBuilder(std::int32_t block_size);

  // Adds a sequence whose `new_tokens` follow `num_cached` tokens already in the KV cache;
  // `block_table` holds the blocks for all num_cached + new_tokens.size() positions (more is
  // fine). Throws minivllm::Error when the table is too short or new_tokens is empty.
  void add(std::span<const std::int32_t> new_tokens, std::int32_t num_cached,
           std::span<const std::int32_t> block_table, LogitsFor logits = LogitsFor::last);

  // The batch so far; the builder is empty afterwards.
  Batch build();

 private:
  std::int32_t block_size_;
  Batch batch_;
  std::vector<std::vector<std::int32_t>> tables_;
};

}  // namespace minivllm
