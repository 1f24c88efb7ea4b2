// A model folder's weights: one model.safetensors, or shards listed by model.safetensors.index.json.
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "checkpoint/safetensors.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Shard file name -> the tensor names the index assigns to it.
std::map<std::string, std::vector<std::string>> read_index(const fs::path& index_path) {
  std::ifstream in(index_path);
  if (!in) throw Error(index_path.string() + ": cannot open");
  json index;
  try {
    index = json::parse(in);
  } catch (const json::exception& e) {
    throw Error(index_path.string() + ": not valid JSON: " + e.what());
  }
  auto map = index.find("weight_map");
  if (!index.is_object() || map == index.end() || !map->is_object())
    throw Error(index_path.string() + ": missing object 'weight_map'");
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [name, shard] : map->items()) {
    if (!shard.is_string())
      throw Error(index_path.string() + ": weight_map['" + name + "'] is not a file name");
    const auto& file = shard.get_ref<const std::string&>();
    if (file.empty() || fs::path(file).filename() != file)
      throw Error(index_path.string() + ": weight_map['" + name + "'] = '" + file +
                  "' is not a plain file name in the model folder");
    shards[file].push_back(name);
  }
  return shards;
}

}  // namespace

Checkpoint Checkpoint::open(const fs::path& dir) {
  Checkpoint c;
  c.dir_ = dir;
  fs::path index_path = dir / "model.safetensors.index.json";
  fs::path single_path = dir / "model.safetensors";
  if (fs::exists(index_path)) {
    for (const auto& [file, names] : read_index(index_path)) {
      SafetensorsFile& shard = c.files_.emplace_back(SafetensorsFile::open(dir / file));
      for (const std::string& name : names) {
        const TensorView* t = shard.find(name);
        if (t == nullptr)
          throw Error(index_path.string() + ": tensor '" + name + "' is listed in " + file +
                      " but that file does not hold it");
        c.by_name_[name] = t;
      }
    }
  } else if (fs::exists(single_path)) {
    SafetensorsFile& file = c.files_.emplace_back(SafetensorsFile::open(single_path));
    for (const TensorView& t : file.tensors()) c.by_name_[t.name] = &t;
  } else {
    throw Error(dir.string() + ": no model.safetensors or model.safetensors.index.json");
  }
  return c;
}

const TensorView* Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

const TensorView& Checkpoint::get(std::string_view name) const {
  const TensorView* t = find(name);
  if (t == nullptr) throw Error(dir_.string() + ": no tensor '" + std::string(name) + "'");
  return *t;
}

std::vector<const TensorView*> Checkpoint::tensors() const {
  std::vector<const TensorView*> out;
  for (const SafetensorsFile& f : files_)
    for (const TensorView& t : f.tensors())
      if (find(t.name) == &t) out.push_back(&t);
  return out;
}

std::size_t Checkpoint::total_bytes() const {
  std::size_t n = 0;
  for (const TensorView* t : tensors()) n += t->bytes.size();
  return n;
}

}  // namespace minivllm
