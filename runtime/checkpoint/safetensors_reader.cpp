// Reading safetensors: every header field is checked against the file before a tensor is exposed,
// so a malformed file is an error naming the file and the field, never an out-of-bounds read.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "checkpoint/safetensors.hpp"

namespace minivllm {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw Error(path.string() + ": " + what);
}

std::uint64_t read_u64_le(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Parses the header, refusing duplicate top-level names (nlohmann would keep only the last).
json parse_header(const std::filesystem::path& path, const char* begin, const char* end) {
  std::set<std::string> names;
  std::string duplicate;
  auto reject_duplicates = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key) {
      const auto& name = parsed.get_ref<const std::string&>();
      if (!names.insert(name).second && duplicate.empty()) duplicate = name;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(begin, end, reject_duplicates);
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) fail(path, "header names tensor '" + duplicate + "' twice");
  if (!header.is_object()) fail(path, "header is not a JSON object");
  return header;
}

std::uint64_t non_negative(const std::filesystem::path& path, const std::string& name,
                           const char* field, const json& v) {
  if (!v.is_number_unsigned())  // nlohmann parses non-negative integers as unsigned
    fail(path, "tensor '" + name + "': " + field + " must hold non-negative integers, got " + v.dump());
  return v.get<std::uint64_t>();
}

TensorView read_entry(const std::filesystem::path& path, const std::string& name, const json& entry,
                      const std::byte* data, std::uint64_t data_size) {
  if (!entry.is_object()) fail(path, "tensor '" + name + "': entry is not an object");
  TensorView t;
  t.name = name;
  t.file = path;

  auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string())
    fail(path, "tensor '" + name + "': missing or non-string dtype");
  auto parsed = dtype_from_name(dtype->get_ref<const std::string&>());
  if (!parsed)
    fail(path, "tensor '" + name + "': unsupported dtype '" + dtype->get<std::string>() +
                   "' (supported: BF16, F16, F32)");
  t.dtype = *parsed;

  auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array())
    fail(path, "tensor '" + name + "': missing or non-array shape");
  // Checked arithmetic, so that no product of dimensions wraps here or downstream (Shape holds
  // int64s): the bytes of the non-zero dimensions must fit an int64, whatever order they come in
  // and wherever a zero dimension sits. The byte count is then held against data_offsets.
  std::int64_t nonzero_bytes = static_cast<std::int64_t>(dtype_size(t.dtype));
  bool has_zero = false, too_large = false;
  for (const json& d : *shape) {
    const std::uint64_t dim = non_negative(path, name, "shape", d);
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) too_large = true;
    const auto signed_dim = static_cast<std::int64_t>(dim);
    if (dim == 0) has_zero = true;
    else too_large |= __builtin_mul_overflow(nonzero_bytes, signed_dim, &nonzero_bytes);
    t.shape.push_back(signed_dim);
  }
  if (too_large) fail(path, "tensor '" + name + "': shape " + shape->dump() + " is too large");
  const std::uint64_t expected = has_zero ? 0 : static_cast<std::uint64_t>(nonzero_bytes);

  auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2)
    fail(path, "tensor '" + name + "': data_offsets must be [begin, end]");
  std::uint64_t begin = non_negative(path, name, "data_offsets", (*offsets)[0]);
  std::uint64_t end = non_negative(path, name, "data_offsets", (*offsets)[1]);
  if (begin > end)
    fail(path, "tensor '" + name + "': data_offsets " + offsets->dump() + " end before they begin");
  if (end > data_size)
    fail(path, "tensor '" + name + "': data_offsets " + offsets->dump() +
                   " run past the end of the data (" + std::to_string(data_size) +
                   " bytes; the file is truncated or the offsets are wrong)");
  if (end - begin != expected)
    fail(path, "tensor '" + name + "': shape " + shape->dump() + " of " +
                   std::string(dtype_name(t.dtype)) + " needs " + std::to_string(expected) +
                   " bytes but data_offsets " + offsets->dump() + " hold " +
                   std::to_string(end - begin));
  t.bytes = {data + begin, static_cast<std::size_t>(end - begin)};
  return t;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile f;
  f.path_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  f.map_size_ = static_cast<std::size_t>(st.st_size);
  if (f.map_size_ < 8) {
    ::close(fd);
    fail(path, "truncated: " + std::to_string(f.map_size_) +
                   " bytes, too short for the 8-byte header length");
  }
  void* map = ::mmap(nullptr, f.map_size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) fail(path, std::string("cannot mmap: ") + std::strerror(errno));
  f.map_ = map;  // owned from here: the destructor unmaps on every error below

  const auto* bytes = static_cast<const unsigned char*>(map);
  std::uint64_t header_len = read_u64_le(bytes);
  if (header_len > f.map_size_ - 8)
    fail(path, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                   std::to_string(f.map_size_) + " bytes)");
  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  json header = parse_header(path, header_begin, header_begin + header_len);

  const std::byte* data = reinterpret_cast<const std::byte*>(bytes + 8 + header_len);
  std::uint64_t data_size = f.map_size_ - 8 - header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail(path, "__metadata__ value '" + k + "' is not a string");
        f.metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    f.tensors_.push_back(read_entry(path, name, entry, data, data_size));
  }

  // File order is data order; two tensors may not share bytes.
  std::sort(f.tensors_.begin(), f.tensors_.end(), [&](const TensorView& a, const TensorView& b) {
    return a.bytes.data() != b.bytes.data() ? a.bytes.data() < b.bytes.data() : a.name < b.name;
  });
  for (std::size_t i = 1; i < f.tensors_.size(); ++i) {
    const TensorView& prev = f.tensors_[i - 1];
    const TensorView& cur = f.tensors_[i];
    if (cur.bytes.data() < prev.bytes.data() + prev.bytes.size())
      fail(path, "tensors '" + prev.name + "' and '" + cur.name + "' overlap in the data section");
  }
  return f;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& o) noexcept
    : path_(std::move(o.path_)),
      map_(std::exchange(o.map_, nullptr)),
      map_size_(std::exchange(o.map_size_, 0)),
      tensors_(std::move(o.tensors_)),
      metadata_(std::move(o.metadata_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& o) noexcept {
  if (this != &o) {
    if (map_ != nullptr) ::munmap(map_, map_size_);
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    map_size_ = std::exchange(o.map_size_, 0);
    tensors_ = std::move(o.tensors_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  for (const TensorView& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace minivllm
