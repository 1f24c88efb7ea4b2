#pragma once
// Warp-level tensor-core pieces (sm_80+ mma.sync m16n8k16 with fp32 accumulators) and the
// shared-memory layout that keeps their ldmatrix loads free of bank conflicts. Fragment layout
// (PTX ISA, "Matrix Fragments for mma.m16n8k16"), lane = 4 g + t: A (16 x 16, row-major) a[0]
// holds (row g, columns 2t, 2t + 1), a[1] (row g + 8, the same columns), a[2] (row g, columns
// 2t + 8, 2t + 9), a[3] (row g + 8, those); B (16 x 8) b0 holds (rows 2t, 2t + 1, column g), b1
// (rows 2t + 8, 2t + 9, column g); the accumulators d[0..3] (row g, columns 2t, 2t + 1), (row
// g + 8, the same). A register holds two 16-bit values, the lower column (or row) in its low half.
// Included by .cu files only.
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace minivllm::cuda::detail {

// Byte offset of 16-byte chunk c of row r in rows of 128 bytes, chunk c stored at c ^ (r % 8):
// ldmatrix's eight row addresses of one chunk then hit distinct banks.
__device__ __forceinline__ std::uint32_t swizzled(int r, int c) {
  return static_cast<std::uint32_t>(r * 128 + ((c ^ (r & 7)) << 4));
}

// ldmatrix_x4 (warpgroup_mma.cuh) transposed: r[i] holds (rows 2 (lane % 4) and + 1, column
// lane / 4) of matrix i, the first row in the low half.
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a b for A and B of T (bf16 or f16).
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const std::uint32_t (&a)[4],
                                             std::uint32_t b0, std::uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<T, __half>);
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

}  // namespace minivllm::cuda::detail
