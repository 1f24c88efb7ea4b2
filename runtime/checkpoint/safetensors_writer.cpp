// Writing safetensors: tensors are generated and written in parallel chunks (pwrite at their final
// offsets), so a multi-gigabyte checkpoint costs about as much as generating its values.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "checkpoint/safetensors.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;

// Elements per unit of parallel work: large enough to amortise scheduling, small enough to balance.
constexpr std::int64_t kChunkElements = std::int64_t{1} << 22;

std::string quoted(const std::string& s) { return nlohmann::json(s).dump(-1, ' ', true); }

std::string shape_json(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out + "]";
}

// The compact header (keys in spec order, __metadata__ last), padded with spaces to 8 bytes.
std::string make_header(const std::vector<TensorSpec>& specs,
                        const std::map<std::string, std::string>& metadata,
                        std::vector<std::uint64_t>& offsets) {
  std::string h = "{";
  std::uint64_t offset = 0;
  for (const TensorSpec& s : specs) {
    std::uint64_t bytes = static_cast<std::uint64_t>(s.numel()) * dtype_size(s.dtype);
    offsets.push_back(offset);
    h += quoted(s.name) + ":{\"dtype\":\"" + std::string(dtype_name(s.dtype)) +
         "\",\"shape\":" + shape_json(s.shape) + ",\"data_offsets\":[" + std::to_string(offset) +
         "," + std::to_string(offset + bytes) + "]},";
    offset += bytes;
  }
  offsets.push_back(offset);
  h += "\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : metadata) {
    h += (first ? "" : ",") + quoted(k) + ":" + quoted(v);
    first = false;
  }
  h += "}}";
  h.append((8 - h.size() % 8) % 8, ' ');
  return h;
}

struct Chunk {
  std::size_t tensor;
  std::int64_t first;
  std::int64_t count;
};

}  // namespace

void write_safetensors(const fs::path& path, const std::vector<TensorSpec>& specs,
                       const std::map<std::string, std::string>& metadata, const TensorFill& fill,
                       unsigned threads, const WriteProgress& progress) {
  std::vector<std::uint64_t> offsets;
  std::string header = make_header(specs, metadata, offsets);
  const std::uint64_t data_begin = 8 + header.size();

  // Write beside the target and rename at the end: no half-written file under the real name.
  fs::path tmp = path;
  tmp += ".partial";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(tmp.string() + ": cannot create: " + std::strerror(errno));
  auto write_at = [&](const std::byte* data, std::size_t size, std::uint64_t offset) {
    while (size > 0) {
      ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw Error(tmp.string() + ": write failed: " + std::strerror(errno));
      data += n;
      size -= static_cast<std::size_t>(n);
      offset += static_cast<std::uint64_t>(n);
    }
  };

  std::vector<Chunk> chunks;
  for (std::size_t t = 0; t < specs.size(); ++t)
    for (std::int64_t first = 0, n = specs[t].numel(); first < n; first += kChunkElements)
      chunks.push_back({t, first, std::min(kChunkElements, n - first)});

  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  std::mutex progress_mutex;
  std::uint64_t written = 0;
  const std::uint64_t total = offsets.empty() ? 0 : offsets.back();
  auto work = [&] {
    std::vector<std::byte> buffer;
    for (std::size_t i; (i = next.fetch_add(1)) < chunks.size();) {
      const Chunk& c = chunks[i];
      const std::size_t elem = dtype_size(specs[c.tensor].dtype);
      buffer.resize(static_cast<std::size_t>(c.count) * elem);
      try {
        fill(c.tensor, c.first, buffer);
        write_at(buffer.data(), buffer.size(),
                 data_begin + offsets[c.tensor] + static_cast<std::uint64_t>(c.first) * elem);
        if (progress) {
          std::lock_guard lock(progress_mutex);
          written += buffer.size();
          progress(written, total);
        }
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        next = chunks.size();
      }
    }
  };
  try {
    std::byte prefix[8];
    const std::uint64_t header_len = header.size();
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<std::byte>((header_len >> (8 * i)) & 0xFF);
    write_at(prefix, 8, 0);
    write_at(reinterpret_cast<const std::byte*>(header.data()), header.size(), 8);
  } catch (...) {
    error = std::current_exception();
  }
  if (!error) {
    unsigned n_threads = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::jthread> pool;
    for (unsigned i = 1; i < n_threads; ++i) pool.emplace_back(work);
    work();
  }  // the pool joins here
  if (::close(fd) != 0 && !error)
    error = std::make_exception_ptr(Error(tmp.string() + ": close failed: " + std::strerror(errno)));
  if (error) {
    fs::remove(tmp);
    std::rethrow_exception(error);
  }
  fs::rename(tmp, path);
}

}  // namespace minivllm
