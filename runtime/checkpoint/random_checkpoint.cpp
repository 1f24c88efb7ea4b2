#include "checkpoint/random_checkpoint.hpp"

#include <cmath>

#include <minivllm/error.hpp>

#include "kernels/bf16.hpp"

namespace minivllm {
namespace {

constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// value = offset + scale * v, v in [-1, 1): the three tensor kinds of random-v1.
struct Distribution {
  double offset;
  double scale;
};

Distribution distribution_of(const TensorSpec& t) {
  if (ends_with(t.name, "norm.weight")) return {1.0, 0.1};
  if (ends_with(t.name, ".bias")) return {0.0, 0.1};
  if (ends_with(t.name, "embed_tokens.weight") || ends_with(t.name, "lm_head.weight"))
    return {0.0, 1.0};
  return {0.0, std::sqrt(3.0 / static_cast<double>(t.shape.at(1)))};
}

void fill_tensor(const TensorSpec& t, std::uint64_t seed, std::int64_t first,
                 std::span<std::byte> dest) {
  const std::uint64_t tensor_seed = fnv1a64(t.name) ^ seed;
  const Distribution d = distribution_of(t);
  auto* out = reinterpret_cast<std::uint16_t*>(dest.data());
  const std::size_t count = dest.size() / sizeof(std::uint16_t);
  for (std::size_t k = 0; k < count; ++k) {
    std::uint64_t i = static_cast<std::uint64_t>(first) + k;
    std::uint64_t z = splitmix64_mix(tensor_seed + (i + 1) * kGoldenGamma);
    double u = static_cast<double>(z >> 40) * 0x1p-24;
    double v = 2.0 * u - 1.0;
    // Written as the reference computes it: offset only for norms (1 + 0.1 v), plain products
    // otherwise, so no rounding step differs.
    double x = d.offset != 0.0 ? d.offset + d.scale * v : d.scale * v;
    out[k] = f32_to_bf16(static_cast<float>(x));
  }
}

}  // namespace

void write_random_checkpoint(const std::filesystem::path& hf_config,
                             const std::vector<CheckpointTensor>& checkpoint_tensors,
                             const std::filesystem::path& out_dir, std::uint64_t seed,
                             const WriteProgress& progress) {
  std::vector<TensorSpec> tensors;
  for (const CheckpointTensor& t : checkpoint_tensors) {
    const bool vector = ends_with(t.name, "norm.weight") || ends_with(t.name, ".bias");
    if (t.shape.size() != (vector ? 1u : 2u))
      throw Error("random-v1: tensor '" + t.name + "' has shape " + shape_string(t.shape) +
                  " (norms and biases are 1-d, embeddings and linears 2-d)");
    tensors.push_back({t.name, DType::bf16, t.shape});
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw Error(out_dir.string() + ": cannot create folder: " + ec.message());
  const auto config_copy = out_dir / "config.json";
  if (!std::filesystem::equivalent(hf_config, config_copy, ec))
    std::filesystem::copy_file(hf_config, config_copy,
                               std::filesystem::copy_options::overwrite_existing);
  write_safetensors(out_dir / "model.safetensors", tensors,
                    {{"format", "pt"}, {"generator", "random-v1"}},
                    [&](std::size_t index, std::int64_t first, std::span<std::byte> dest) {
                      fill_tensor(tensors[index], seed, first, dest);
                    },
                    0, progress);
}

}  // namespace minivllm
