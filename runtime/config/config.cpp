#include <minivllm/config.hpp>

#include "log/log.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include <minivllm/error.hpp>

#include "config/toml_input_guard.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;

// Where a value came from: named in errors, and the folder relative paths are resolved against.
struct Origin {
  std::string where;  // "configs/a.toml:12" or "--set cache.block_size=0"
  fs::path base_dir;
};

// One key of the schema: reads a TOML node into the Config, false when the type or range is wrong.
struct Key {
  std::string section;
  std::string name;
  std::string expected;      // for errors: "an integer in [1, 256]"
  bool takes_string = false;  // --set may give a bare word for it
  std::function<bool(const toml::node&, const Origin&, Config&)> read;

  std::string full_name() const { return section + "." + name; }
};

template <class T>
using Field = T& (*)(Config&);

// The engine keeps these settings in 32-bit ints: the default upper bound is the largest one, so a
// value is never narrowed on its way there.
constexpr std::int64_t kIntMax = std::numeric_limits<std::int32_t>::max();
// Tensor-parallel ranks, or data-parallel replicas: more than any host holds GPUs, few enough
// that a mistyped size fails here rather than spawning thousands of workers.
constexpr std::int64_t kMaxParallelSize = 64;

Key integer_key(std::string section, std::string name, Field<std::int64_t> field, std::int64_t lo,
                std::int64_t hi = kIntMax, std::string expected = "") {
  if (expected.empty())
    expected = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return {std::move(section), std::move(name), std::move(expected), false,
          [=](const toml::node& v, const Origin&, Config& c) {
            auto x = v.value_exact<std::int64_t>();
            if (!x || *x < lo || *x > hi) return false;
            field(c) = *x;
            return true;
          }};
}

// A real number in (lo, hi].
Key fraction_key(std::string section, std::string name, Field<double> field, double lo, double hi) {
  std::ostringstream expected;
  expected << "a number in (" << lo << ", " << hi << "]";
  return {std::move(section), std::move(name), expected.str(), false,
          [=](const toml::node& v, const Origin&, Config& c) {
            // value<double>() is empty for an integer a double cannot hold exactly (found by
            // tests/fuzz/fuzz_toml_config.cpp: 0o3333333333333333333333).
            const std::optional<double> x = v.is_number() ? v.value<double>() : std::nullopt;
            if (!x || !(*x > lo && *x <= hi)) return false;
            field(c) = *x;
            return true;
          }};
}

Key bool_key(std::string section, std::string name, Field<bool> field) {
  return {std::move(section), std::move(name), "a boolean (true or false)", false,
          [=](const toml::node& v, const Origin&, Config& c) {
            auto x = v.value_exact<bool>();
            if (!x) return false;
            field(c) = *x;
            return true;
          }};
}

template <class E>
Key choice_key(std::string section, std::string name, Field<E> field,
               std::vector<std::pair<std::string, E>> choices) {
  std::string expected = "one of";
  for (std::size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? " \"" : ", \"") + choices[i].first + "\"";
  return {std::move(section), std::move(name), std::move(expected), true,
          [=](const toml::node& v, const Origin&, Config& c) {
            auto s = v.value_exact<std::string>();
            if (!s) return false;
            for (const auto& [text, value] : choices)
              if (*s == text) {
                field(c) = value;
                return true;
              }
            return false;
          }};
}

fs::path resolve(const std::string& p, const Origin& origin) {
  fs::path path(p);
  return (path.is_relative() ? origin.base_dir / path : path).lexically_normal();
}

Key path_key(std::string section, std::string name, Field<fs::path> field) {
  return {std::move(section), std::move(name), "a non-empty path string", true,
          [=](const toml::node& v, const Origin& origin, Config& c) {
            auto s = v.value_exact<std::string>();
            if (!s || s->empty()) return false;
            field(c) = resolve(*s, origin);
            return true;
          }};
}

Key path_list_key(std::string section, std::string name, Field<std::vector<fs::path>> field) {
  return {std::move(section), std::move(name), "an array of non-empty path strings", false,
          [=](const toml::node& v, const Origin& origin, Config& c) {
            const toml::array* a = v.as_array();
            if (a == nullptr) return false;
            std::vector<fs::path> paths;
            for (const toml::node& e : *a) {
              auto s = e.value_exact<std::string>();
              if (!s || s->empty()) return false;
              paths.push_back(resolve(*s, origin));
            }
            field(c) = std::move(paths);
            return true;
          }};
}

// "HOST:PORT", checked by parse_host_port.
Key host_port_key(std::string section, std::string name, Field<std::string> field) {
  return {std::move(section), std::move(name), "a \"HOST:PORT\" string (PORT in [0, 65535])", true,
          [=](const toml::node& v, const Origin&, Config& c) {
            auto s = v.value_exact<std::string>();
            if (!s) return false;
            try {
              parse_host_port(*s, "");
            } catch (const Error&) {
              return false;
            }
            field(c) = *s;
            return true;
          }};
}

// An array of distinct integers in [0, kIntMax], at least one.
Key index_list_key(std::string section, std::string name, Field<std::vector<std::int64_t>> field) {
  return {std::move(section), std::move(name),
          "a non-empty array of distinct integers in [0, " + std::to_string(kIntMax) + "]", false,
          [=](const toml::node& v, const Origin&, Config& c) {
            const toml::array* a = v.as_array();
            if (a == nullptr || a->empty()) return false;
            std::vector<std::int64_t> ids;
            for (const toml::node& e : *a) {
              auto x = e.value_exact<std::int64_t>();
              if (!x || *x < 0 || *x > kIntMax) return false;
              if (std::find(ids.begin(), ids.end(), *x) != ids.end()) return false;
              ids.push_back(*x);
            }
            field(c) = std::move(ids);
            return true;
          }};
}

const std::vector<Key>& schema() {
  static const std::vector<Key> keys = {
      path_key("model", "path", [](Config& c) -> fs::path& { return c.model.path; }),
      choice_key<DType>("model", "dtype", [](Config& c) -> DType& { return c.model.dtype; },
                        {{"bfloat16", DType::bf16}, {"float32", DType::f32}}),
      integer_key("model", "max_model_len",
                  [](Config& c) -> std::int64_t& { return c.model.max_model_len; }, 0),
      choice_key<bool>("model", "generation_config",
                       [](Config& c) -> bool& { return c.model.generation_config; },
                       {{"auto", true}, {"none", false}}),
      choice_key<Backend>("runtime", "backend",
                          [](Config& c) -> Backend& { return c.runtime.backend; },
                          {{"cpu", Backend::cpu}, {"cuda", Backend::cuda}}),
      path_list_key("runtime", "plugin_dirs",
                    [](Config& c) -> std::vector<fs::path>& { return c.runtime.plugin_dirs; }),
      choice_key<LogLevel>("runtime", "log_level",
                           [](Config& c) -> LogLevel& { return c.runtime.log_level; },
                           {{"error", LogLevel::error},
                            {"warn", LogLevel::warn},
                            {"info", LogLevel::info},
                            {"debug", LogLevel::debug}}),
      bool_key("runtime", "cuda_graphs", [](Config& c) -> bool& { return c.runtime.cuda_graphs; }),
      integer_key("runtime", "cuda_graph_max_prefill_tokens",
                  [](Config& c) -> std::int64_t& { return c.runtime.cuda_graph_max_prefill_tokens; },
                  0, 2048),
      integer_key("runtime", "step_timeout_s",
                  [](Config& c) -> std::int64_t& { return c.runtime.step_timeout_s; }, 1, 86400),
      integer_key("cache", "block_size",
                  [](Config& c) -> std::int64_t& { return c.cache.block_size; }, 1, 256),
      choice_key<KvCacheDtype>("cache", "kv_cache_dtype",
                               [](Config& c) -> KvCacheDtype& { return c.cache.kv_cache_dtype; },
                               {{"auto", KvCacheDtype::auto_dtype},
                                {"fp8", KvCacheDtype::fp8_e4m3},  // vLLM's name for e4m3
                                {"fp8_e4m3", KvCacheDtype::fp8_e4m3}}),
      integer_key("cache", "num_blocks",
                  [](Config& c) -> std::int64_t& { return c.cache.num_blocks; }, 0),
      fraction_key("cache", "gpu_memory_utilization",
                   [](Config& c) -> double& { return c.cache.gpu_memory_utilization; }, 0.0, 1.0),
      bool_key("cache", "enable_prefix_caching",
               [](Config& c) -> bool& { return c.cache.enable_prefix_caching; }),
      integer_key("scheduler", "max_num_seqs",
                  [](Config& c) -> std::int64_t& { return c.scheduler.max_num_seqs; }, 1),
      integer_key("scheduler", "max_num_batched_tokens",
                  [](Config& c) -> std::int64_t& { return c.scheduler.max_num_batched_tokens; }, 1),
      bool_key("scheduler", "enable_chunked_prefill",
               [](Config& c) -> bool& { return c.scheduler.enable_chunked_prefill; }),
      integer_key("parallel", "tensor_parallel_size",
                  [](Config& c) -> std::int64_t& { return c.parallel.tensor_parallel_size; }, 1,
                  kMaxParallelSize),
      integer_key("parallel", "data_parallel_size",
                  [](Config& c) -> std::int64_t& { return c.parallel.data_parallel_size; }, 1,
                  kMaxParallelSize),
      index_list_key("parallel", "devices",
                     [](Config& c) -> std::vector<std::int64_t>& { return c.parallel.devices; }),
      integer_key("parallel", "remote_workers",
                  [](Config& c) -> std::int64_t& { return c.parallel.remote_workers; }, 0,
                  kMaxParallelSize * kMaxParallelSize),
      host_port_key("parallel", "listen",
                    [](Config& c) -> std::string& { return c.parallel.listen; }),
      path_key("parallel", "join_token_file",
               [](Config& c) -> fs::path& { return c.parallel.join_token_file; }),
      integer_key("parallel", "join_timeout_s",
                  [](Config& c) -> std::int64_t& { return c.parallel.join_timeout_s; }, 1, 86400),
      integer_key("server", "max_body_bytes",
                  [](Config& c) -> std::int64_t& { return c.server.max_body_bytes; }, 1,
                  std::int64_t{1} << 40),
      integer_key("server", "max_header_bytes",
                  [](Config& c) -> std::int64_t& { return c.server.max_header_bytes; }, 256),
      integer_key("server", "max_headers",
                  [](Config& c) -> std::int64_t& { return c.server.max_headers; }, 1),
      integer_key("server", "header_timeout_s",
                  [](Config& c) -> std::int64_t& { return c.server.header_timeout_s; }, 1, 86400),
      integer_key("server", "max_waiting",
                  [](Config& c) -> std::int64_t& { return c.server.max_waiting; }, 0),
      integer_key("server", "max_n", [](Config& c) -> std::int64_t& { return c.server.max_n; }, 1,
                  1024),
      integer_key("server", "max_logprobs",
                  [](Config& c) -> std::int64_t& { return c.server.max_logprobs; }, 0, 20,
                  "an integer in [0, 20] (the engine reports at most 20)"),
      integer_key("server", "max_stop",
                  [](Config& c) -> std::int64_t& { return c.server.max_stop; }, 0, 1024),
      integer_key("server", "max_stop_bytes",
                  [](Config& c) -> std::int64_t& { return c.server.max_stop_bytes; }, 1, 65536),
  };
  return keys;
}

const Key* find_key(std::string_view section, std::string_view name) {
  for (const Key& k : schema())
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

bool is_section(std::string_view section) {
  for (const Key& k : schema())
    if (k.section == section) return true;
  return false;
}

std::string known_keys(std::string_view section) {
  std::string out;
  for (const Key& k : schema())
    if (k.section == section) out += (out.empty() ? "" : ", ") + k.name;
  return out;
}

std::string known_sections() {
  std::string out;
  for (const Key& k : schema())
    if (out.find("[" + k.section + "]") == std::string::npos)
      out += (out.empty() ? "[" : ", [") + k.section + "]";
  return out;
}

// Containers are rendered here, their scalars by toml++: its formatter (3.3) sizes an array or
// inline table holding inf or nan with a cast of log10(inf) to size_t, undefined behaviour
// (found by tests/fuzz/fuzz_toml_config.cpp).
void render(const toml::node& v, std::string& out) {
  constexpr std::size_t kEnough = 64;  // show() keeps 60 characters
  if (const toml::array* a = v.as_array()) {
    out += "[";
    for (std::size_t i = 0; i < a->size() && out.size() < kEnough; ++i) {
      if (i > 0) out += ", ";
      render((*a)[i], out);
    }
    out += "]";
  } else if (const toml::table* t = v.as_table()) {
    out += "{";
    bool first = true;
    for (auto&& [k, e] : *t) {
      if (out.size() >= kEnough) break;
      out += (first ? " " : ", ") + std::string(k.str()) + " = ";
      first = false;
      render(e, out);
    }
    out += " }";
  } else {
    std::ostringstream os;
    v.visit([&](const auto& n) { os << n; });
    out += os.str();
  }
}

std::string show(const toml::node& v) {
  std::string s;
  render(v, s);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

void apply(const Key& key, const toml::node& value, const Origin& origin, Config& config,
           std::vector<std::string>& errors) {
  if (!key.read(value, origin, config))
    errors.push_back(origin.where + ": " + key.full_name() + ": expected " + key.expected +
                     ", got " + show(value));
}

std::string at_line(const std::string& name, const toml::node& n) {
  return name + ":" + std::to_string(n.source().begin.line);
}

// `name` is what errors call the text ("configs/a.toml"); relative paths resolve against `base`.
void read_text(std::string_view text, const std::string& name, const fs::path& base, Config& config,
               std::vector<std::string>& errors) {
  if (auto problem = check_toml_input(text)) {
    errors.push_back(name + ":" + std::to_string(problem->line) + ": " + problem->what);
    return;
  }
  toml::table root;
  try {
    root = toml::parse(text, std::string_view{name});
  } catch (const toml::parse_error& e) {
    errors.push_back(name + ":" + std::to_string(e.source().begin.line) + ": " +
                     std::string(e.description()));
    return;
  }
  for (const auto& [section_key, section_node] : root) {
    std::string_view section = section_key.str();
    const toml::table* table = section_node.as_table();
    if (!is_section(section)) {
      errors.push_back(at_line(name, section_node) + ": unknown section [" + std::string(section) +
                       "] (known: " + known_sections() + ")");
      continue;
    }
    if (table == nullptr) {
      errors.push_back(at_line(name, section_node) + ": " + std::string(section) +
                       ": expected a table [" + std::string(section) + "]");
      continue;
    }
    for (const auto& [name_key, value] : *table) {
      std::string_view key_name = name_key.str();
      const Key* key = find_key(section, key_name);
      if (key == nullptr) {
        errors.push_back(at_line(name, value) + ": unknown key " + std::string(section) + "." +
                         std::string(key_name) + " (known in [" + std::string(section) +
                         "]: " + known_keys(section) + ")");
        continue;
      }
      apply(*key, value, Origin{at_line(name, value), base}, config, errors);
    }
  }
}

void read_override(const std::string& text, Config& config, std::vector<std::string>& errors) {
  std::string where = "--set " + text;
  std::size_t eq = text.find('=');
  std::size_t dot = text.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
    errors.push_back(where + ": expected section.key=value");
    return;
  }
  std::string section = text.substr(0, dot);
  std::string name = text.substr(dot + 1, eq - dot - 1);
  std::string value = text.substr(eq + 1);
  const Key* key = find_key(section, name);
  if (key == nullptr) {
    errors.push_back(where + ": unknown key " + section + "." + name +
                     (is_section(section) ? " (known in [" + section + "]: " + known_keys(section) + ")"
                                          : " (known sections: " + known_sections() + ")"));
    return;
  }
  Origin origin{where, fs::current_path()};
  // TOML strings are UTF-8, so a bare word must be too: to_toml could not print it back.
  if (const std::size_t bad = first_invalid_utf8(value); bad != value.size()) {
    errors.push_back(where + ": " + key->full_name() + ": the value is not valid UTF-8 (at byte " +
                     std::to_string(bad) + ")");
    return;
  }
  // The value as a TOML literal; what the guard or toml++ refuses may still be a bare word.
  const std::string literal = "v = " + value;
  toml::table parsed;
  std::string not_literal;
  if (auto problem = check_toml_input(literal)) {
    not_literal = problem->what;
  } else {
    try {
      parsed = toml::parse(literal, std::string_view{"--set"});
      // "1\nother = 2" would set v and silently add a key nobody reads.
      if (parsed.size() != 1) not_literal = "more than one value";
    } catch (const toml::parse_error& e) {
      not_literal = std::string(e.description());
    }
  }
  if (not_literal.empty() && !(key->takes_string && !parsed["v"].is_string())) {
    apply(*key, *parsed.get("v"), origin, config, errors);
  } else if (key->takes_string) {
    apply(*key, toml::value<std::string>(value), origin, config, errors);
  } else {
    errors.push_back(where + ": " + key->full_name() + ": expected " + key->expected + ", got '" +
                     value + "' (not a TOML value: " + not_literal + ")");
  }
}

// Applies the overrides to what the text gave, then throws every error collected, if any.
Config finish(Config config, std::vector<std::string>& errors, const std::vector<std::string>& overrides,
              const std::string& name, bool model_required = true) {
  for (const std::string& o : overrides) read_override(o, config, errors);
  if (errors.empty() && model_required && config.model.path.empty())
    errors.push_back(name + ": model.path is required (set it in [model] or with --set model.path=DIR)");
  std::vector<std::int64_t>& devices = config.parallel.devices;
  const bool cpu = config.runtime.backend == Backend::cpu;
  const ParallelOptions& parallel = config.parallel;
  const std::int64_t workers = parallel.tensor_parallel_size * parallel.data_parallel_size;
  if (errors.empty() && parallel.remote_workers > workers)
    errors.push_back(name + ": parallel.remote_workers = " + std::to_string(parallel.remote_workers) +
                     " is more than the " + std::to_string(workers) +
                     " ranks (tensor_parallel_size x data_parallel_size)");
  if (errors.empty() && parallel.remote_workers > 0 &&
      (parallel.listen.empty() || parallel.join_token_file.empty()))
    errors.push_back(name + ": parallel.remote_workers = " + std::to_string(parallel.remote_workers) +
                     " needs parallel.listen (\"HOST:PORT\" for the workers to connect to) and "
                     "parallel.join_token_file (the secret they prove)");
  if (errors.empty() && parallel.remote_workers == 0 && !parallel.listen.empty())
    errors.push_back(name + ": parallel.listen is set, but parallel.remote_workers is 0: no worker "
                     "would join");
  // This process's ranks: the others are remote.
  const std::int64_t local = workers - parallel.remote_workers;
  if (errors.empty() && devices.empty()) {  // unset: the first devices (the host on the cpu)
    devices.resize(cpu ? 1 : static_cast<std::size_t>(local));
    for (std::size_t i = 0; i < devices.size(); ++i) devices[i] = static_cast<std::int64_t>(i);
  }
  if (errors.empty() && !cpu && static_cast<std::int64_t>(devices.size()) != local)
    errors.push_back(name + ": parallel.devices lists " + std::to_string(devices.size()) +
                     " devices, but parallel.tensor_parallel_size x data_parallel_size is " +
                     std::to_string(parallel.tensor_parallel_size) + " x " +
                     std::to_string(parallel.data_parallel_size) +
                     (parallel.remote_workers > 0
                          ? ", less " + std::to_string(parallel.remote_workers) + " remote workers"
                          : std::string()) +
                     ": one device per worker of this process");
  if (errors.empty() && !cpu && config.cache.kv_cache_dtype == KvCacheDtype::fp8_e4m3 &&
      config.model.dtype != DType::bf16)
    errors.push_back(name + ": cache.kv_cache_dtype = \"fp8_e4m3\" on the CUDA backend needs "
                     "model.dtype = \"bfloat16\" (its kernels read e4m3 into bf16 attention)");
  if (errors.empty() && cpu && devices != std::vector<std::int64_t>{0})
    errors.push_back(name + ": parallel.devices names CUDA devices, and runtime.backend is \"cpu\" "
                     "(leave it unset or [0] there: every rank runs on the host)");
  if (!errors.empty()) {
    std::string message = "invalid configuration:";
    for (const std::string& e : errors) message += "\n  " + e;
    throw Error(message);
  }
  return config;
}

}  // namespace

Config parse_config(std::string_view toml_text, const std::string& name, const fs::path& base_dir,
                    const std::vector<std::string>& overrides) {
  Config config;
  std::vector<std::string> errors;
  read_text(toml_text, name, base_dir, config, errors);
  return finish(config, errors, overrides, name);
}

Config load_config(const fs::path& file, const std::vector<std::string>& overrides) {
  if (file.empty()) {
    std::vector<std::string> errors;
    return finish(Config{}, errors, overrides, "configuration");
  }
  if (!fs::is_regular_file(file))
    throw Error("config file " + file.string() + ": not found or not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("config file " + file.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), file.string(), fs::absolute(file).parent_path(), overrides);
}

Config load_overrides(const std::vector<std::string>& overrides) {
  std::vector<std::string> errors;
  return finish(Config{}, errors, overrides, "configuration", /*model_required=*/false);
}

std::int64_t resolve_max_model_len(const Config& config, const ModelConfig& model) {
  const std::int64_t limit = model.max_position_embeddings;
  if (config.model.max_model_len == 0) return limit;
  if (config.model.max_model_len > limit)
    throw Error("model.max_model_len = " + std::to_string(config.model.max_model_len) +
                " is above the model's max_position_embeddings = " + std::to_string(limit) + " (" +
                (config.model.path / "config.json").string() + "); set at most " +
                std::to_string(limit) + ", or 0 for the model's own limit");
  return config.model.max_model_len;
}

std::string_view backend_name(Backend b) { return b == Backend::cuda ? "cuda" : "cpu"; }

HostPort parse_host_port(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) {
    return Error((what.empty() ? std::string() : what + ": ") + "'" + text + "' is not HOST:PORT (" +
                 why + ")");
  };
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) throw bad("no ':PORT'");
  HostPort out;
  out.host = text.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[' && out.host.back() == ']')
    out.host = out.host.substr(1, out.host.size() - 2);
  else if (out.host.find(':') != std::string::npos)
    throw bad("an IPv6 address goes in brackets: [::1]:PORT");
  if (out.host.empty()) out.host = "127.0.0.1";
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stol(port) > 65535)
    throw bad("PORT must be an integer in [0, 65535]");
  out.port = static_cast<std::uint16_t>(std::stol(port));
  return out;
}

std::string read_join_token(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("join token file " + file.string() + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = text.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  // HMAC keys shorter than this are guessable offline from one captured proof.
  constexpr std::size_t kMinTokenBytes = 16;
  if (token.size() < kMinTokenBytes)
    throw Error("join token file " + file.string() + ": holds " + std::to_string(token.size()) +
                " bytes, fewer than " + std::to_string(kMinTokenBytes) +
                " (make one with: head -c 32 /dev/urandom | base64 > FILE)");
  return token;
}

std::string to_toml(const Config& c) {
  toml::array plugin_dirs;
  for (const fs::path& p : c.runtime.plugin_dirs) plugin_dirs.push_back(fs::absolute(p).string());
  toml::array devices;
  for (std::int64_t d : c.parallel.devices) devices.push_back(d);
  // Unset keys are left out: an empty value would not read back.
  toml::table parallel{{"tensor_parallel_size", c.parallel.tensor_parallel_size},
                       {"data_parallel_size", c.parallel.data_parallel_size},
                       {"remote_workers", c.parallel.remote_workers},
                       {"join_timeout_s", c.parallel.join_timeout_s}};
  if (!devices.empty()) parallel.insert("devices", devices);
  if (!c.parallel.listen.empty()) parallel.insert("listen", c.parallel.listen);
  if (!c.parallel.join_token_file.empty())
    parallel.insert("join_token_file", fs::absolute(c.parallel.join_token_file).string());
  toml::table root{
      {"model", toml::table{{"path", fs::absolute(c.model.path).string()},
                            {"dtype", c.model.dtype == DType::f32 ? "float32" : "bfloat16"},
                            {"generation_config", c.model.generation_config ? "auto" : "none"},
                            {"max_model_len", c.model.max_model_len}}},
      {"runtime", toml::table{{"backend", std::string(backend_name(c.runtime.backend))},
                              {"plugin_dirs", plugin_dirs},
                              {"log_level", std::string(log_level_name(c.runtime.log_level))},
                              {"cuda_graphs", c.runtime.cuda_graphs},
                              {"cuda_graph_max_prefill_tokens",
                               c.runtime.cuda_graph_max_prefill_tokens},
                              {"step_timeout_s", c.runtime.step_timeout_s}}},
      {"cache", toml::table{{"block_size", c.cache.block_size},
                            {"kv_cache_dtype", c.cache.kv_cache_dtype == KvCacheDtype::fp8_e4m3
                                                   ? "fp8_e4m3"
                                                   : "auto"},
                            {"num_blocks", c.cache.num_blocks},
                            {"gpu_memory_utilization", c.cache.gpu_memory_utilization},
                            {"enable_prefix_caching", c.cache.enable_prefix_caching}}},
      {"scheduler", toml::table{{"max_num_seqs", c.scheduler.max_num_seqs},
                                {"max_num_batched_tokens", c.scheduler.max_num_batched_tokens},
                                {"enable_chunked_prefill", c.scheduler.enable_chunked_prefill}}},
      {"parallel", parallel},
      {"server", toml::table{{"max_body_bytes", c.server.max_body_bytes},
                             {"max_header_bytes", c.server.max_header_bytes},
                             {"max_headers", c.server.max_headers},
                             {"header_timeout_s", c.server.header_timeout_s},
                             {"max_waiting", c.server.max_waiting},
                             {"max_n", c.server.max_n},
                             {"max_logprobs", c.server.max_logprobs},
                             {"max_stop", c.server.max_stop},
                             {"max_stop_bytes", c.server.max_stop_bytes}}},
  };
  // Plain "..." strings only: toml++ 3.3 prints a string holding a newline and ''' as a
  // '''...''' literal that it cannot end, which no longer loads.
  constexpr auto flags = toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings &
                         ~toml::format_flags::allow_multi_line_strings;
  std::ostringstream os;
  os << toml::toml_formatter(root, flags) << "\n";
  return os.str();
}

}  // namespace minivllm
