// The safetensors header and tensor table (SafetensorsFile::open). The input is the whole file,
// written to a memfd that open() maps like any file. Every tensor it exposes must have
// non-negative dimensions whose element count times the dtype's size is exactly its byte count
// (no wrap-around anywhere), and its bytes must be the ones its data_offsets name in the file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "checkpoint/safetensors.hpp"

#define FUZZ_CHECK(cond)           \
  do {                             \
    if (!(cond)) __builtin_trap(); \
  } while (0)

namespace {

// One memfd for the whole run, rewritten for every input.
int memfd() {
  static const int fd = [] {
    const int f = memfd_create("fuzz_safetensors", 0);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd();
  if (ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)))
    std::abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const minivllm::SafetensorsFile file = minivllm::SafetensorsFile::open(path);
    // Accepted, so the 8-byte length and the header are within the input.
    std::uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
    FUZZ_CHECK(header_len <= size - 8);
    const std::uint64_t data_size = size - 8 - header_len;
    const auto* data_section = data + 8 + header_len;
    const auto header = nlohmann::json::parse(data + 8, data + 8 + header_len);
    for (const minivllm::TensorView& t : file.tensors()) {
      std::int64_t bytes = static_cast<std::int64_t>(minivllm::dtype_size(t.dtype));
      bool zero = false;
      for (std::int64_t d : t.shape) {
        FUZZ_CHECK(d >= 0);
        if (d == 0) zero = true;
        else FUZZ_CHECK(!__builtin_mul_overflow(bytes, d, &bytes));
      }
      FUZZ_CHECK(static_cast<std::uint64_t>(zero ? 0 : bytes) == t.bytes.size());
      FUZZ_CHECK(static_cast<std::uint64_t>(t.numel()) * minivllm::dtype_size(t.dtype) == t.bytes.size());
      const std::uint64_t begin = header.at(t.name).at("data_offsets").at(0).get<std::uint64_t>();
      FUZZ_CHECK(begin <= data_size && t.bytes.size() <= data_size - begin);
      FUZZ_CHECK(t.bytes.empty() || std::memcmp(t.bytes.data(), data_section + begin, t.bytes.size()) == 0);
      FUZZ_CHECK(file.find(t.name) == &t);
    }
  } catch (const minivllm::Error&) {
  }
  return 0;
}
