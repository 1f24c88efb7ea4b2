#pragma once
// Element types of tensors and checkpoint files.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace minivllm {

// fp8_e4m3 is a storage type only (the fp8 KV cache, kv_cache.hpp): no op computes in it.
enum class DType : std::uint8_t { bf16, f16, f32, fp8_e4m3 };

constexpr std::size_t dtype_size(DType t) {
  return t == DType::f32 ? 4 : t == DType::fp8_e4m3 ? 1 : 2;
}

// Names as safetensors spells them ("BF16", "F16", "F32", "F8_E4M3").
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bf16: return "BF16";
    case DType::f16: return "F16";
    case DType::f32: return "F32";
    case DType::fp8_e4m3: return "F8_E4M3";
  }
  return "?";
}

// The dtypes a checkpoint tensor may have (no fp8: nothing loads it).
constexpr std::optional<DType> dtype_from_name(std::string_view s) {
  if (s == "BF16") return DType::bf16;
  if (s == "F16") return DType::f16;
  if (s == "F32") return DType::f32;
  return std::nullopt;
}

}  // namespace minivllm
