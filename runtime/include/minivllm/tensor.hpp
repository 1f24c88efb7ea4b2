#pragma once
// A tensor: a typed, shaped, contiguous (row-major) block of memory on one device. Copies share
// the memory, which a backend's Ops allocates and frees with the last copy.
#include <cstddef>
#include <cstdint>
#include <memory>

#include <minivllm/dtype.hpp>
#include <minivllm/shape.hpp>

namespace minivllm {

enum class Device : std::uint8_t { cpu, cuda };

class Tensor {
 public:
  Tensor() = default;
  // `owner` keeps `data` alive (null for a borrowed pointer the caller keeps alive).
  Tensor(std::shared_ptr<void> owner, void* data, DType dtype, Shape shape, Device device)
      : owner_(std::move(owner)), data_(data), dtype_(dtype), shape_(std::move(shape)),
        device_(device) {}

  bool defined() const { return data_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  // The same memory as `dtype` of `shape`, sharing ownership; the view must fit in nbytes().
  Tensor view(DType dtype, Shape shape) const {
    Tensor t(owner_, data_, dtype, std::move(shape), device_);
    if (t.nbytes() > nbytes()) return {};  // undefined: does not fit
    return t;
  }

  void* data() const { return data_; }
  template <class T>
  T* data_as() const { return static_cast<T*>(data_); }

 private:
  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Shape shape_;
  Device device_ = Device::cpu;
};

}  // namespace minivllm
