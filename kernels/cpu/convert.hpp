#pragma once
// Reading bf16 or f32 data as f32: the CPU reference computes in fp32 whatever the storage type.
#include <cstdint>

#include <minivllm/dtype.hpp>

namespace minivllm::cpu {

// dst[i] = src[i] as f32, for i < n; `src` holds bf16 or f32 values (f16 is not supported).
void to_f32(const void* src, DType src_dtype, float* dst, std::int64_t n);

// sum_i a[i] * b[i], accumulated in f32 with the order left to the vectorizer.
float dot(const float* a, const float* b, std::int64_t n);

}  // namespace minivllm::cpu
