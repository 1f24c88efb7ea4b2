#include "engine/generation_config.hpp"

#include <cstdio>

#include <minivllm/error.hpp>

#include "checkpoint/config_json.hpp"

namespace minivllm {

GenerationConfig load_generation_config(const std::filesystem::path& model_dir) {
  GenerationConfig g;
  const auto file = model_dir / "generation_config.json";
  if (!std::filesystem::exists(file)) return g;
  g.found = true;
  const std::unique_ptr<ConfigFields> f = load_config_fields(file);
  auto number = [&](const char* field) -> std::optional<double> {
    if (!f->has(field)) return std::nullopt;
    return f->number(field, 0);
  };
  g.sampling.temperature = number("temperature");
  g.sampling.top_p = number("top_p");
  g.sampling.min_p = number("min_p");
  g.sampling.repetition_penalty = number("repetition_penalty");
  if (f->has("top_k")) {
    const std::int64_t k = f->integer("top_k", 0);
    if (k < -1 || k > INT32_MAX) f->fail("top_k", "expected -1, 0 (off) or a positive count, got " + f->dump("top_k"));
    g.sampling.top_k = static_cast<int>(k);
  }
  for (std::int64_t id : f->integers("eos_token_id")) {
    if (id < 0) f->fail("eos_token_id", "expected token ids, got " + f->dump("eos_token_id"));
    g.eos_token_ids.push_back(id);
  }
  try {
    SamplingParams{}.with_defaults(g.sampling).validate();
  } catch (const Error& e) {
    throw Error(file.string() + ": " + e.what());
  }
  return g;
}

std::string describe(const SamplingDefaults& d) {
  std::string s;
  auto add = [&s](const char* name, const auto& value) {
    if (!value) return;
    char text[64];
    std::snprintf(text, sizeof text, "%s %g", name, static_cast<double>(*value));
    s += (s.empty() ? "" : ", ") + std::string(text);
  };
  add("temperature", d.temperature);
  add("top_p", d.top_p);
  add("top_k", d.top_k);
  add("min_p", d.min_p);
  add("repetition_penalty", d.repetition_penalty);
  return s.empty() ? "none" : s;
}

}  // namespace minivllm
