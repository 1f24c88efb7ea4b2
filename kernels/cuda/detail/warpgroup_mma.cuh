#pragma once
// Hopper (sm_90a) warpgroup tensor-core building blocks: wgmma with A (bf16) in registers and B
// (bf16) in shared memory through a matrix descriptor, fp32 accumulators, the fences around it,
// and the helpers that build A fragments (ldmatrix, bf16 pairs). Included by .cu files only; the
// kernels that use them are built for sm_90a.
#include <cstdint>
#include <cstring>

#include <cuda_bf16.h>

namespace minivllm::cuda::detail {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, and r[i] holds
// (row lane / 4, columns 2 (lane % 4) and + 1) of matrix i: for a 16x16 tile, the A fragments
// of wgmma (and of mma.m16n8k16).
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t (&r)[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Two floats as bf16 (round to nearest even) in one register, `lo` in the low half: the order
// of the A fragments and of memory.
__device__ __forceinline__ std::uint32_t pack_bf16x2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  std::uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  return bits;
}

// Descriptor of a B operand in shared memory laid out in the 128-byte swizzle: rows of 128 bytes
// (64 bf16), 16-byte chunk c of row r stored at chunk c ^ (r % 8), in 1024-byte atoms of 8 rows
// that must start 1024-aligned. `leading`: for a K-major operand unused (16); for an MN-major one
// the bytes between blocks of 64 MN elements. `stride`: bytes between groups of 8 rows (1024 when
// the rows are packed). PTX ISA "Matrix Descriptor Format".
__device__ __forceinline__ std::uint64_t swizzle128_descriptor(std::uint32_t smem_addr,
                                                               std::uint32_t leading,
                                                               std::uint32_t stride) {
  return std::uint64_t{(smem_addr & 0x3FFFF) >> 4} | std::uint64_t{(leading >> 4) & 0x3FFF} << 16 |
         std::uint64_t{(stride >> 4) & 0x3FFF} << 32 | std::uint64_t{1} << 62;
}

// Orders earlier register writes (accumulators, A fragments) before the next wgmma reads them.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Waits until at most kPending of this warpgroup's committed wgmma groups are in flight.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving reads or writes of r across a wgmma fence or wait: the async
// instructions use registers the compiler believes it already has.
__device__ __forceinline__ void pin_register(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void pin_register(std::uint32_t& r) {
  asm volatile("" : "+r"(r)::"memory");
}
template <class T, int N>
__device__ __forceinline__ void pin_registers(T (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) pin_register(r[i]);
}

// d (64 x N, fp32, the warpgroup's accumulator fragments) = a b (+ d when accumulate != 0), a the
// 64 x 16 bf16 A fragments in registers (warp w holds rows 16 w.., as mma.m16n8k16's A), b a 16 x N
// operand in shared memory; kTransB 0 when b is K-major, 1 when N-major. Fragments of d: d[4 j +
// e] is row 16 w + lane / 4 + 8 (e / 2), column 8 j + 2 (lane % 4) + e % 2.
template <int kTransB>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], const std::uint32_t (&a)[4],
                                                 std::uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
        "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
        "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
        "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
        "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(kTransB));
}

template <int kTransB>
__device__ __forceinline__ void wgmma_m64n64k16(float (&d)[32], const std::uint32_t (&a)[4],
                                                std::uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
        "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
        "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
        "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
        "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(kTransB));
}

// The same for N = 64 or 128 chosen at compile time.
template <int kN, int kTransB>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[kN / 2], const std::uint32_t (&a)[4],
                                              std::uint64_t b, int accumulate) {
  static_assert(kN == 64 || kN == 128, "instantiated for N = 64 and 128 only");
  if constexpr (kN == 128)
    wgmma_m64n128k16<kTransB>(d, a, b, accumulate);
  else
    wgmma_m64n64k16<kTransB>(d, a, b, accumulate);
}

}  // namespace minivllm::cuda::detail
