#pragma once
// safetensors files: a read-only memory-mapped reader that validates the header before any
// tensor is touched, and a writer that lays out a file and lets the caller fill each tensor.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <minivllm/dtype.hpp>
#include <minivllm/shape.hpp>

namespace minivllm {

// One tensor inside a mapped file. `bytes` stays valid while its file is open.
struct TensorView {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::span<const std::byte> bytes;
  std::filesystem::path file;

  std::int64_t numel() const { return shape_numel(shape); }
};

class SafetensorsFile {
 public:
  // Maps and validates the file; throws minivllm::Error naming the file and the problem
  // (truncated, header length past the end, bad JSON, unknown dtype, shape/size mismatch,
  // out-of-range or overlapping offsets, duplicate names).
  static SafetensorsFile open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const std::filesystem::path& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }  // in file order
  const TensorView* find(std::string_view name) const;                 // nullptr if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  std::filesystem::path path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A model folder's weights: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json` (every listed tensor must be in the shard the index names).
class Checkpoint {
 public:
  static Checkpoint open(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const TensorView* find(std::string_view name) const;  // nullptr if absent
  // Throws minivllm::Error "<dir>: no tensor '<name>'" when absent.
  const TensorView& get(std::string_view name) const;
  std::vector<const TensorView*> tensors() const;  // every tensor, shard by shard in file order
  std::size_t total_bytes() const;

 private:
  std::filesystem::path dir_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, const TensorView*, std::less<>> by_name_;
};

struct TensorSpec {
  std::string name;
  DType dtype = DType::bf16;
  Shape shape;

  std::int64_t numel() const { return shape_numel(shape); }
};

// Writes a safetensors file: compact JSON header with keys in `specs` order and
// `__metadata__` last, padded with spaces to a multiple of 8; data back to back in the same order.
// `fill(i, dest)` writes tensor i's bytes into `dest`; it may be called from several threads at
// once for different tensors or for disjoint parts of one (`first_element` says which part).
using TensorFill = std::function<void(std::size_t tensor_index, std::int64_t first_element,
                                      std::span<std::byte> dest)>;
// Called after each part is written with the data bytes written so far and in all, from the
// writing threads (one call at a time).
using WriteProgress = std::function<void(std::uint64_t done, std::uint64_t total)>;
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorSpec>& specs,
                       const std::map<std::string, std::string>& metadata, const TensorFill& fill,
                       unsigned threads = 0,  // 0: all hardware threads
                       const WriteProgress& progress = {});

}  // namespace minivllm
