// CudaOps' step runner against the model's forward called directly, on tiny-qwen3: a script of
// prefill, decode and mixed steps (40 sequences, decode batches padded to graph buckets, prefill
// steps of one and two sequences padded to token buckets, with and without a cached prefix and a
// logits row, block tables growing past powers of two) runs in four ways, each over its own KV
// cache:
//   direct   model.forward per step: every op uploads its batch arrays itself;
//   staged   the step runner without graphs: the batch uploaded once per step;
//   graphs   the step runner with CUDA graphs: pure-decode and small prefill steps replayed;
//   padded   the step runner without graphs, given the graphs' padded batch on replayed steps.
// staged must equal direct bitwise, and graphs must equal padded bitwise at every step (the same
// kernels on the same shapes, so the same cache contents; a replayed prefill launches attention
// blocks for its bucket's longest query, whose extra blocks return at once), in f32 and bf16.
// graphs against direct differ only by the padding (GEMM row counts, the decode split plan, and
// the cache contents that follow): the same argmax but for near ties, and in f32 logits within
// 1e-4 of the largest.
// A third pass of the script must not take new device memory. Skips without a CUDA device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cuda_ops.hpp"
#include "backend/cuda_step_runner.hpp"
#include "backend/step_graphs.hpp"
#include "backend/step_shapes.hpp"
#include "model/batch_builder.hpp"
#include "model/kv_cache_alloc.hpp"
#include "model/load_model.hpp"
#include "model_test_support.hpp"
#include "tiny_model_on_cuda.hpp"

namespace minivllm {
namespace {

constexpr std::int32_t kBlockSize = 16;
constexpr std::int64_t kNumBlocks = 512;
constexpr std::int32_t kNumSeqs = 40;  // and two more that only take a prompt each, at the end

// One step: which sequences take how many new tokens, in batch order, and their logits rows.
struct Chunk {
  std::int32_t seq = 0;
  std::int32_t tokens = 0;
  LogitsFor logits = LogitsFor::last;
};
using Step = std::vector<Chunk>;

std::vector<Step> script() {
  std::vector<Step> steps;
  auto decode = [&](std::int32_t first, std::int32_t count, int times) {
    for (int t = 0; t < times; ++t) {
      Step s;
      for (std::int32_t i = first; i < first + count; ++i) s.emplace_back(i, 1);
      steps.push_back(s);
    }
  };
  steps.push_back({{0, 7}, {1, 20}, {2, 33}, {3, 1}, {4, 16}});  // prefill only
  decode(0, 5, 3);                                               // bucket 8
  Step mixed;                                                    // decodes first, then a chunk
  for (std::int32_t i = 0; i < 5; ++i) mixed.emplace_back(i, 1);
  mixed.emplace_back(5, 40);
  steps.push_back(mixed);
  decode(0, 6, 2);
  steps.push_back({{5, 24}});            // one sequence after a 42-token prefix: bucket 32, width 8
  steps.push_back({{6, 9}, {7, 64}});    // two prompts, 73 tokens: bucket 128
  steps.push_back({{8, 64}});            // exactly a bucket: a pad sequence of no tokens
  steps.push_back({{9, 30, LogitsFor::none}});  // a chunk that does not end its prompt
  steps.push_back({{10, 5, LogitsFor::all}});   // prompt logprobs: more rows than sequences
  Step prompts;  // many short prompts; sequence 3's decode after them, not leading
  for (std::int32_t i = 6; i < kNumSeqs; ++i) prompts.emplace_back(i, 1 + i % 13);
  prompts.emplace_back(3, 1);
  steps.push_back(prompts);
  decode(0, kNumSeqs, 3);  // bucket 40
  decode(0, 17, 20);       // bucket 24, contexts crossing block boundaries
  decode(0, 8, 2);         // exactly a bucket
  decode(2, 1, 18);        // bucket 1, block table width 4 -> 8
  // One prefill shape (bucket 32, width 2) captured at a 17-token query, then replayed for a
  // 31-token one: the attention must launch for the bucket, not for the captured query.
  steps.push_back({{kNumSeqs, 17}});
  steps.push_back({{kNumSeqs + 1, 31}});
  return steps;
}

// The script's batches: random tokens, blocks handed out out of order.
std::vector<Batch> script_batches(std::int64_t vocab) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> token(0, static_cast<std::int32_t>(vocab - 1));
  testing::BlockAllocator blocks(kNumBlocks);
  std::vector<std::int32_t> cached(kNumSeqs + 2, 0);
  std::vector<std::vector<std::int32_t>> tables(kNumSeqs + 2);
  std::vector<Batch> batches;
  for (const Step& step : script()) {
    BatchBuilder builder(kBlockSize);
    for (const auto& [seq, count, logits] : step) {
      const auto needed = static_cast<std::size_t>((cached[seq] + count + kBlockSize - 1) / kBlockSize);
      if (needed > tables[seq].size()) {
        const auto more = blocks.take(static_cast<std::int64_t>(needed - tables[seq].size()));
        tables[seq].insert(tables[seq].end(), more.begin(), more.end());
      }
      std::vector<std::int32_t> tokens(static_cast<std::size_t>(count));
      for (auto& t : tokens) t = token(rng);
      builder.add(tokens, cached[seq], tables[seq], logits);
      cached[seq] += count;
    }
    batches.push_back(builder.build());
  }
  return batches;
}

class CudaStepRunnerTest : public testing::TinyModelOnCuda {
 protected:
  // A KV cache of its own and a forward over it.
  struct Mode {
    KvCacheView kv;
    StepForward forward;
  };
  std::unique_ptr<Mode> mode() {
    auto m = std::make_unique<Mode>();
    m->kv = allocate_kv_cache(*ops_, loaded_.model->kv_cache_spec(), kNumBlocks, kBlockSize,
                              GetParam());
    m->forward = [model = loaded_.model.get(), kv = &m->kv](const Batch& b) {
      return model->forward(b, *kv);
    };
    return m;
  }
  std::unique_ptr<cuda::CudaStepRunner> runner(const Mode& m, bool graphs) {
    return std::make_unique<cuda::CudaStepRunner>(*ops_, m.forward, graphs);
  }
  std::vector<float> host(const Tensor& t) {
    std::vector<float> out(static_cast<std::size_t>(t.numel()));
    ops_->to_host(t, out.data());
    return out;
  }
};

// Index of the first differing float (bit patterns), or -1.
std::int64_t first_difference(std::span<const float> a, std::span<const float> b) {
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<std::int64_t>(i);
  return a.size() == b.size() ? -1 : static_cast<std::int64_t>(std::min(a.size(), b.size()));
}

TEST_P(CudaStepRunnerTest, StagedAndGraphStepsEqualTheDirectForward) {
  const bool f32 = GetParam() == DType::f32;
  const std::int64_t vocab = loaded_.config.vocab_size;
  const std::vector<Batch> batches = script_batches(vocab);
  auto direct = mode(), staged = mode(), graphed = mode(), padded = mode();
  auto staged_runner = runner(*staged, false);
  auto graph_runner = runner(*graphed, true);
  auto padded_runner = runner(*padded, false);

  std::size_t graph_steps = 0, prefill_steps = 0, bitwise_equal = 0, second_pass_allocations = 0;
  double worst = 0;
  // Pass 1 meets every size; pass 2 may still take a block or two, for a size class whose
  // blocks pass 1 gave away for good after its busiest step (a graph's inputs); pass 3 takes none.
  for (int pass = 0; pass < 3; ++pass) {
    const std::size_t allocations = ops_->device_allocations();
    const std::size_t arena = graph_runner->graphs()->arena_bytes();
    for (std::size_t i = 0; i < batches.size(); ++i) {
      const Batch& batch = batches[i];
      const std::string where = "pass " + std::to_string(pass) + " step " + std::to_string(i);
      const auto n = static_cast<std::size_t>(batch.logits_rows.size());
      const std::vector<float> want = host(direct->forward(batch));
      ASSERT_EQ(want.size(), n * vocab) << where;
      ASSERT_EQ(first_difference(host(staged_runner->run(batch)), want), -1) << where;

      // graphs and padded share their history: the same keys and values in their caches.
      const std::vector<float> graph = host(graph_runner->run(batch));
      const std::optional<StepShape> shape = graph_runner->graphs()->shape_of(batch);
      std::vector<float> eager;
      if (shape) {
        graph_steps += pass == 0;
        prefill_steps += pass == 0 && shape->max_query_len > 1;
        Batch pad;
        pad_step(batch, *shape, pad);
        eager = host(padded_runner->run(pad));
        eager.resize(n * vocab);  // the pad rows come last
      } else {
        eager = host(padded_runner->run(batch));
      }
      ASSERT_EQ(first_difference(graph, eager), -1) << where;

      bitwise_equal += pass == 0 && first_difference(graph, want) == -1;
      for (std::size_t r = 0; r < n; ++r) {
        const float* g = graph.data() + r * vocab;
        const float* w = want.data() + r * vocab;
        float largest = 0, diff = 0;
        for (std::int64_t v = 0; v < vocab; ++v) {
          largest = std::max(largest, std::abs(w[v]));
          diff = std::max(diff, std::abs(g[v] - w[v]));
        }
        worst = std::max(worst, static_cast<double>(diff / largest));
        // The same token, unless the unpadded step's top two are closer than the difference.
        const auto token = std::max_element(w, w + vocab) - w;
        if (std::max_element(g, g + vocab) - g != token) {
          float second = -INFINITY;
          for (std::int64_t v = 0; v < vocab; ++v)
            if (v != token) second = std::max(second, w[v]);
          EXPECT_LE(w[token] - second, 2 * diff) << where << " row " << r;
        }
      }
    }
    if (pass == 1) second_pass_allocations = ops_->device_allocations() - allocations;
    if (pass > 0) {
      EXPECT_EQ(graph_runner->graphs()->arena_bytes(), arena) << "pass " << pass;
    }
    if (pass == 2) {
      EXPECT_EQ(ops_->device_allocations(), allocations);
    }
  }
  if (f32) {
    EXPECT_LE(worst, 1e-4);
  }
  const cuda::StepGraphs& graphs = *graph_runner->graphs();
  EXPECT_EQ(graphs.replays(), 3 * graph_steps);
  EXPECT_EQ(prefill_steps, 6u);  // the script's prefills of one or two sequences
  std::cout << "[ step runner ] " << dtype_name(GetParam()) << ": " << batches.size()
            << " steps, " << graph_steps << " replayed (" << prefill_steps << " prefills) from "
            << graphs.num_graphs()
            << " graphs (arena " << graphs.arena_bytes() / (1 << 20) << " MiB); graphs mode "
            << "bitwise equal to the direct forward in " << bitwise_equal << "/" << batches.size()
            << " steps, worst |diff| / max |logit| " << worst << "; "
            << second_pass_allocations << " cudaMalloc in pass 2, none after\n";
}

TEST_P(CudaStepRunnerTest, PreparedGraphsServeStepsAsCapturedOnes) {
  // Decode buckets 1, 2, 4, 8, 16, 24 at widths 1, 2, 4; prefill buckets of one sequence up to
  // the 65 tokens width 4 holds (4, 8, 16, 32, 64), at width 4.
  constexpr StepLimits kLimits{20, 512, 3, kBlockSize};
  std::set<StepShape> prepared;
  for (std::int32_t seqs : {1, 2, 4, 8, 16, 24})
    for (std::int32_t width : {1, 2, 4}) prepared.insert({seqs, seqs, seqs, width, 1});
  for (std::int32_t tokens : {4, 8, 16, 32, 64}) prepared.insert(prefill_shape(tokens, 4));
  const std::vector<Batch> batches = script_batches(loaded_.config.vocab_size);
  auto prepared_mode = mode(), lazy_mode = mode();
  auto prepared_runner = runner(*prepared_mode, true);
  auto lazy_runner = runner(*lazy_mode, true);
  prepared_runner->prepare(kLimits);
  const cuda::StepGraphs& graphs = *prepared_runner->graphs();
  EXPECT_EQ(graphs.num_graphs(), prepared.size());
  for (const StepShape& shape : prepared)
    EXPECT_TRUE(graphs.captured(shape)) << shape.seqs << " sequences, " << shape.tokens
                                        << " tokens, width " << shape.width;
  EXPECT_EQ(graphs.replays(), 0u);

  std::set<StepShape> unprepared;
  std::size_t prepared_prefills = 0;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    const Batch& batch = batches[i];
    if (const std::optional<StepShape> shape = graphs.shape_of(batch)) {
      if (!prepared.contains(*shape)) unprepared.insert(*shape);
      prepared_prefills += prepared.contains(*shape) && shape->max_query_len > 1;
    }
    // Both caches see the same steps, so a prepared graph must give a captured one's logits.
    ASSERT_EQ(first_difference(host(prepared_runner->run(batch)), host(lazy_runner->run(batch))),
              -1)
        << "step " << i;
  }
  // 64 tokens, 17 and 31 tokens. The 24 tokens after sequence 5's 42-token prefix need 5 blocks,
  // width 8, wider than prepared.
  EXPECT_EQ(prepared_prefills, 3u);
  EXPECT_EQ(graphs.num_graphs(), prepared.size() + unprepared.size());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaStepRunnerTest, ::testing::Values(DType::f32, DType::bf16),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace minivllm
