// One implementation behind the doors: the same seeded requests through the LLM facade (the
// actors: engine, scheduler, worker) and through the engine core's step loop (LLMEngine) driven
// directly on the same loaded model give the same tokens, logprobs, prompt logprobs, finish
// reasons and prefix-cache hits. Tiny Qwen3 on the CPU backend, float32.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <minivllm/llm.hpp>

#include "actor_test_support.hpp"
#include "actors/loaded_model_runner.hpp"
#include "engine/llm_engine.hpp"

namespace minivllm {
namespace {

std::vector<std::int32_t> ids(int n, int salt) {
  std::vector<std::int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(100 + (i * 7 + salt * 13) % 900);
  return out;
}

// Two rounds: the second's prompts share the first's prefixes, so the prefix cache answers.
std::vector<std::vector<GenerateRequest>> rounds() {
  SamplingParams sampled;
  sampled.temperature = 0.8;
  sampled.top_p = 0.9;
  sampled.seed = 7;
  sampled.max_tokens = 12;
  sampled.logprobs = 2;
  SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 9;
  greedy.prompt_logprobs = 3;
  greedy.logprobs = 0;
  SamplingParams two = sampled;
  two.n = 2;
  two.seed = 11;
  two.prompt_logprobs = 1;
  std::vector<std::vector<GenerateRequest>> out(2);
  out[0] = {{"a", "", ids(40, 1), {}, sampled}, {"b", "", ids(23, 2), {}, greedy},
            {"c", "", ids(50, 3), {}, two}};
  auto longer = [](std::vector<std::int32_t> p) {
    for (std::int32_t t : {5, 6, 7, 8, 9}) p.push_back(t);
    return p;
  };
  out[1] = {{"d", "", longer(ids(40, 1)), {}, sampled}, {"e", "", longer(ids(50, 3)), {}, greedy}};
  return out;
}

void expect_same(const RequestOutput& core, const RequestOutput& actors) {
  SCOPED_TRACE("request " + core.request_id);
  EXPECT_EQ(core.prompt_token_ids, actors.prompt_token_ids);
  EXPECT_EQ(core.num_cached_tokens, actors.num_cached_tokens);
  ASSERT_EQ(core.prompt_logprobs.size(), actors.prompt_logprobs.size());
  for (std::size_t i = 0; i < core.prompt_logprobs.size(); ++i) {
    ASSERT_EQ(core.prompt_logprobs[i].has_value(), actors.prompt_logprobs[i].has_value()) << i;
    if (!core.prompt_logprobs[i]) continue;
    EXPECT_EQ(core.prompt_logprobs[i]->chosen.token, actors.prompt_logprobs[i]->chosen.token);
    EXPECT_EQ(core.prompt_logprobs[i]->chosen.logprob, actors.prompt_logprobs[i]->chosen.logprob);
    EXPECT_EQ(core.prompt_logprobs[i]->chosen.rank, actors.prompt_logprobs[i]->chosen.rank);
    ASSERT_EQ(core.prompt_logprobs[i]->top.size(), actors.prompt_logprobs[i]->top.size());
    for (std::size_t k = 0; k < core.prompt_logprobs[i]->top.size(); ++k)
      EXPECT_EQ(core.prompt_logprobs[i]->top[k].token, actors.prompt_logprobs[i]->top[k].token);
  }
  ASSERT_EQ(core.outputs.size(), actors.outputs.size());
  for (std::size_t c = 0; c < core.outputs.size(); ++c) {
    const CompletionOutput& x = core.outputs[c];
    const CompletionOutput& y = actors.outputs[c];
    EXPECT_EQ(x.token_ids, y.token_ids) << "completion " << c;
    EXPECT_EQ(x.finish_reason, y.finish_reason) << "completion " << c;
    ASSERT_EQ(x.logprobs.size(), y.logprobs.size()) << "completion " << c;
    for (std::size_t i = 0; i < x.logprobs.size(); ++i) {
      EXPECT_EQ(x.logprobs[i].chosen.token, y.logprobs[i].chosen.token);
      EXPECT_EQ(x.logprobs[i].chosen.logprob, y.logprobs[i].chosen.logprob);
      EXPECT_EQ(x.logprobs[i].top.size(), y.logprobs[i].top.size());
    }
  }
}

TEST(Doors, TheFacadeAndTheEngineCoreGiveTheSameOutputs) {
  const Config config = testing::tiny_config("tiny-qwen3", {"model.max_model_len=1024"});

  std::map<std::string, RequestOutput> core;
  {
    const RuntimeSpec spec = runtime_spec(config);
    LoadedRunner loaded = load_model_runner(config);
    LLMEngine engine(spec.engine, *loaded.runner);
    for (const auto& round : rounds()) {
      for (const GenerateRequest& r : round)
        engine.add_request(r.request_id, r.prompt_token_ids, r.params);
      for (RequestOutput& out : engine.run_until_done()) core[out.request_id] = std::move(out);
    }
  }

  LLM llm(config);
  std::size_t compared = 0;
  for (const auto& round : rounds()) {
    for (GenerateResult& result : llm.generate(round)) {
      ASSERT_TRUE(result.ok()) << result.error;
      ASSERT_EQ(core.count(result.output.request_id), 1u) << result.output.request_id;
      expect_same(core.at(result.output.request_id), result.output);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 5u);
  // The second round found its prefixes (2 blocks of 16 of the 40-token prompt, 3 of the 50).
  EXPECT_EQ(core.at("d").num_cached_tokens, 32);
  EXPECT_EQ(core.at("b").prompt_logprobs.size(), 23u);
  EXPECT_EQ(core.at("e").prompt_logprobs.size(), 55u);
  EXPECT_EQ(core.at("c").outputs.size(), 2u);
}

}  // namespace
}  // namespace minivllm
