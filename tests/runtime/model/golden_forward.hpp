#pragma once
// Shared by the golden parity tests of every backend: the goldens' forward prompts run
// teacher-forced through a model and the paged cache, and the error measure against their top-k.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <minivllm/model.hpp>

#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model_test_support.hpp"

namespace minivllm::testing {

inline std::int64_t blocks_for(std::int64_t tokens, std::int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

inline std::int32_t argmax(const float* row, std::int64_t n) {
  return static_cast<std::int32_t>(std::max_element(row, row + n) - row);
}

// What the golden says about one position of one forward prompt.
struct PositionGolden {
  std::vector<std::int32_t> top_ids;  // best first
  std::vector<double> top_logits;
  double logsumexp = 0;
  std::string where;  // "prompt ... position ..." for failure messages
};

// E: the largest |ours - golden| over the golden's top-k, relative to its largest |logit|.
inline double top_logit_error(const float* row, const PositionGolden& g) {
  double largest = 0, worst = 0;
  for (std::size_t r = 0; r < g.top_ids.size(); ++r) {
    largest = std::max(largest, std::abs(g.top_logits[r]));
    worst = std::max(worst, std::abs(row[g.top_ids[r]] - g.top_logits[r]));
  }
  return worst / largest;
}

// Runs every prompt of golden["forward"] through `model`, in prefill chunks of 128 tokens (to keep
// the logits buffer small) over a fresh cache of `kv_dtype` whose blocks are out of order, and
// calls check(position_golden, logits_row) for each position.
template <class Check>
void for_each_forward_position(Model& model, Ops& ops, const nlohmann::json& golden,
                               std::int64_t vocab, DType kv_dtype, Check&& check) {
  const std::int64_t block_size = 16, chunk = 128;
  for (const auto& f : golden["forward"]) {
    const auto ids = f["ids"].get<std::vector<std::int32_t>>();
    const auto n = static_cast<std::int64_t>(ids.size());
    const std::int64_t num_blocks = blocks_for(n, block_size);
    auto kv = allocate_kv_cache(ops, model.kv_cache_spec(), num_blocks, block_size, kv_dtype);
    const auto table = BlockAllocator(num_blocks).take(num_blocks);
    for (std::int64_t start = 0; start < n; start += chunk) {
      const std::int64_t len = std::min(chunk, n - start);
      BatchBuilder builder(static_cast<std::int32_t>(block_size));
      builder.add(std::span(ids).subspan(start, len), static_cast<std::int32_t>(start), table,
                  LogitsFor::all);
      const Tensor out = model.forward(builder.build(), kv);
      if (out.dtype() != DType::f32 || out.numel() != len * vocab)
        throw std::runtime_error("forward returned logits " + shape_string(out.shape()) +
                                 " of " + std::string(dtype_name(out.dtype())));
      std::vector<float> logits(static_cast<std::size_t>(out.numel()));
      ops.to_host(out, logits.data());
      for (std::int64_t i = 0; i < len; ++i) {
        const std::int64_t pos = start + i;
        const PositionGolden g{f["top_ids"][pos].get<std::vector<std::int32_t>>(),
                               f["top_logits"][pos].get<std::vector<double>>(),
                               f["logsumexp"][pos].get<double>(),
                               "prompt " + f["prompt"].dump() + " position " + std::to_string(pos)};
        check(g, logits.data() + i * vocab);
      }
    }
  }
}

}  // namespace minivllm::testing
