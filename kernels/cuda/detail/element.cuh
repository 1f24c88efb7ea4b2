#pragma once
// Device side of the kernels' element types: storage is __nv_bfloat16 or float, math is fp32.
// Included by .cu files only (the public .cuh headers expose DType and void*).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <minivllm/dtype.hpp>

namespace minivllm::cuda::detail {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// Elements of T in one 16-byte load.
template <class T>
inline constexpr int kVecElems = 16 / static_cast<int>(sizeof(T));

// out[i] = p[i] as f32, i < kVecElems<T>, in one 16-byte load; p must be 16-byte aligned.
template <class T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[kVecElems<T>]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  T elems[kVecElems<T>];
  memcpy(elems, &raw, sizeof raw);  // not a pointer cast: that would break aliasing rules
#pragma unroll
  for (int i = 0; i < kVecElems<T>; ++i) out[i] = to_float(elems[i]);
}

// kElems (1 or kVecElems<T>) consecutive elements of T moved by one access: a T, or 16 bytes.
template <class T, int kElems>
using Packet = std::conditional_t<kElems == 1, T, uint4>;

// out[i] = the packet's elements as f32.
template <class T, int kElems>
__device__ __forceinline__ void unpack(const Packet<T, kElems>& packet, float (&out)[kElems]) {
  static_assert(sizeof packet == kElems * sizeof(T));
  T elems[kElems];
  memcpy(elems, &packet, sizeof packet);
#pragma unroll
  for (int i = 0; i < kElems; ++i) out[i] = to_float(elems[i]);
}

// The packet of v's elements rounded to T.
template <class T, int kElems>
__device__ __forceinline__ Packet<T, kElems> pack(const float (&v)[kElems]) {
  T elems[kElems];
#pragma unroll
  for (int i = 0; i < kElems; ++i) elems[i] = from_float<T>(v[i]);
  Packet<T, kElems> packet;
  static_assert(sizeof packet == sizeof elems);
  memcpy(&packet, elems, sizeof packet);
  return packet;
}

// Whether every pointer is 16-byte aligned (null counts as aligned): load_vec and
// Packet<T, kVecElems<T>> accesses need it.
template <class... P>
bool vec_aligned(const P*... p) {
  return ((reinterpret_cast<std::uintptr_t>(p) % 16 == 0) && ...);
}

template <class T>
struct ElementType {
  using type = T;
};

// Calls launch(ElementType<T>{}) with T the storage type of `dtype`; F16 and fp8 are not supported.
template <class F>
cudaError_t dispatch_element_type(DType dtype, F&& launch) {
  switch (dtype) {
    case DType::bf16: return launch(ElementType<__nv_bfloat16>{});
    case DType::f32: return launch(ElementType<float>{});
    case DType::f16:
    case DType::fp8_e4m3: break;
  }
  return cudaErrorInvalidValue;
}

// Threads for a block that loops over `width` elements: a multiple of 32, at most 256.
inline unsigned threads_for_width(std::int64_t width) {
  const std::int64_t warps = (width + 31) / 32;
  return static_cast<unsigned>(32 * (warps < 8 ? (warps < 1 ? 1 : warps) : 8));
}

// The largest grid.x; launchers reject work that would need more blocks.
inline constexpr std::int64_t kMaxGridX = 0x7FFFFFFF;

}  // namespace minivllm::cuda::detail
