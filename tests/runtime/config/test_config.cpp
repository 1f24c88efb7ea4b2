#include <fstream>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include <minivllm/config.hpp>
#include "test_paths.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("mv_config_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& text) {
    fs::path p = dir_ / "test.toml";
    std::ofstream(p) << text;
    return p;
  }

  // The error message load_config throws, or "" when it does not throw.
  std::string error_of(const fs::path& file, const std::vector<std::string>& sets = {}) {
    try {
      load_config(file, sets);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(ConfigTest, ReadsEveryKey) {
  fs::path file = write(R"(
[model]
path = "models/tiny"
dtype = "float32"
max_model_len = 2048
[runtime]
backend = "cuda"
plugin_dirs = ["plugins", "/opt/mv"]
log_level = "debug"
cuda_graph_max_prefill_tokens = 128
step_timeout_s = 7
[cache]
block_size = 32
num_blocks = 100
gpu_memory_utilization = 0.5
enable_prefix_caching = false
[scheduler]
max_num_seqs = 8
max_num_batched_tokens = 4096
enable_chunked_prefill = false
[parallel]
tensor_parallel_size = 1
data_parallel_size = 3
[server]
max_body_bytes = 1024
max_header_bytes = 2048
max_headers = 10
header_timeout_s = 3
max_waiting = 5
max_n = 4
max_logprobs = 5
max_stop = 2
max_stop_bytes = 8
)");
  Config c = load_config(file, {});
  EXPECT_EQ(c.model.path, dir_ / "models/tiny");  // relative to the file's folder
  EXPECT_EQ(c.model.dtype, DType::f32);
  EXPECT_EQ(c.model.max_model_len, 2048);
  EXPECT_EQ(c.runtime.backend, Backend::cuda);
  ASSERT_EQ(c.runtime.plugin_dirs.size(), 2u);
  EXPECT_EQ(c.runtime.plugin_dirs[0], dir_ / "plugins");
  EXPECT_EQ(c.runtime.plugin_dirs[1], fs::path("/opt/mv"));
  EXPECT_EQ(c.runtime.log_level, LogLevel::debug);
  EXPECT_EQ(c.runtime.cuda_graph_max_prefill_tokens, 128);
  EXPECT_EQ(c.runtime.step_timeout_s, 7);
  EXPECT_EQ(c.cache.block_size, 32);
  EXPECT_EQ(c.cache.num_blocks, 100);
  EXPECT_DOUBLE_EQ(c.cache.gpu_memory_utilization, 0.5);
  EXPECT_FALSE(c.cache.enable_prefix_caching);
  EXPECT_EQ(c.scheduler.max_num_seqs, 8);
  EXPECT_EQ(c.scheduler.max_num_batched_tokens, 4096);
  EXPECT_FALSE(c.scheduler.enable_chunked_prefill);
  EXPECT_EQ(c.parallel.tensor_parallel_size, 1);
  EXPECT_EQ(c.parallel.data_parallel_size, 3);
  EXPECT_EQ(c.server.max_body_bytes, 1024);
  EXPECT_EQ(c.server.max_header_bytes, 2048);
  EXPECT_EQ(c.server.max_headers, 10);
  EXPECT_EQ(c.server.header_timeout_s, 3);
  EXPECT_EQ(c.server.max_waiting, 5);
  EXPECT_EQ(c.server.max_n, 4);
  EXPECT_EQ(c.server.max_logprobs, 5);
  EXPECT_EQ(c.server.max_stop, 2);
  EXPECT_EQ(c.server.max_stop_bytes, 8);
}

TEST_F(ConfigTest, DefaultsForAbsentKeys) {
  Config c = load_config(write("[model]\npath = \"m\"\n"), {});
  EXPECT_EQ(c.model.dtype, DType::bf16);
  EXPECT_EQ(c.model.max_model_len, 0);
  EXPECT_EQ(c.runtime.backend, Backend::cpu);
  EXPECT_TRUE(c.runtime.plugin_dirs.empty());
  EXPECT_EQ(c.runtime.cuda_graph_max_prefill_tokens, 512);
  EXPECT_EQ(c.runtime.step_timeout_s, 120);
  EXPECT_EQ(c.cache.block_size, 16);
  EXPECT_EQ(c.cache.num_blocks, 0);
  EXPECT_DOUBLE_EQ(c.cache.gpu_memory_utilization, 0.9);
  EXPECT_TRUE(c.cache.enable_prefix_caching);
  EXPECT_EQ(c.scheduler.max_num_seqs, 256);
  EXPECT_TRUE(c.scheduler.enable_chunked_prefill);
  EXPECT_EQ(c.parallel.tensor_parallel_size, 1);
  EXPECT_EQ(c.server.max_body_bytes, 8 << 20);
  EXPECT_EQ(c.server.max_header_bytes, 16 << 10);
  EXPECT_EQ(c.server.max_headers, 100);
  EXPECT_EQ(c.server.header_timeout_s, 10);
  EXPECT_EQ(c.server.max_waiting, 0);
  EXPECT_EQ(c.server.max_n, 16);
  EXPECT_EQ(c.server.max_logprobs, 20);
  EXPECT_EQ(c.server.max_stop, 16);
  EXPECT_EQ(c.server.max_stop_bytes, 256);
}

TEST_F(ConfigTest, ParallelDevicesNameOneCudaDevicePerRank) {
  const fs::path file = write("[model]\npath = \"m\"\n[runtime]\nbackend = \"cuda\"\n");
  EXPECT_EQ(load_config(file, {}).parallel.devices, std::vector<std::int64_t>{0});
  EXPECT_EQ(load_config(file, {"parallel.devices=[3]"}).parallel.devices,
            std::vector<std::int64_t>{3});
  std::string e = error_of(file, {"parallel.devices=[0, 1]"});
  EXPECT_NE(e.find("parallel.devices lists 2 devices, but parallel.tensor_parallel_size x "
                   "data_parallel_size is 1 x 1"),
            std::string::npos) << e;
  for (const char* bad : {"[]", "[1, 1]", "[-1]", "[\"0\"]", "0"}) {
    e = error_of(file, {std::string("parallel.devices=") + bad});
    EXPECT_NE(e.find("parallel.devices: expected a non-empty array of distinct integers"),
              std::string::npos) << bad << ": " << e;
  }
  const fs::path cpu = write("[model]\npath = \"m\"\n");
  e = error_of(cpu, {"parallel.devices=[1]"});
  EXPECT_NE(e.find("parallel.devices names CUDA devices, and runtime.backend is \"cpu\""),
            std::string::npos) << e;
}

TEST_F(ConfigTest, KvCacheDtypeIsAutoOrFp8AndFp8OnCudaNeedsBf16) {
  const fs::path file = write("[model]\npath = \"m\"\n");
  EXPECT_EQ(load_config(file, {}).cache.kv_cache_dtype, KvCacheDtype::auto_dtype);
  EXPECT_EQ(load_config(file, {"cache.kv_cache_dtype=fp8_e4m3"}).cache.kv_cache_dtype,
            KvCacheDtype::fp8_e4m3);
  EXPECT_EQ(load_config(file, {"cache.kv_cache_dtype=fp8"}).cache.kv_cache_dtype,
            KvCacheDtype::fp8_e4m3);  // vLLM's name
  // The cpu backend computes in f32 and reads the codes into it.
  EXPECT_EQ(load_config(file, {"cache.kv_cache_dtype=fp8_e4m3", "model.dtype=float32"})
                .cache.kv_cache_dtype,
            KvCacheDtype::fp8_e4m3);
  std::string e = error_of(file, {"cache.kv_cache_dtype=fp8_e5m2"});
  EXPECT_NE(e.find("cache.kv_cache_dtype: expected one of \"auto\", \"fp8\", \"fp8_e4m3\", got "),
            std::string::npos) << e;
  e = error_of(file, {"cache.kv_cache_dtype=fp8_e4m3", "model.dtype=float32",
                      "runtime.backend=cuda"});
  EXPECT_NE(e.find("cache.kv_cache_dtype = \"fp8_e4m3\" on the CUDA backend needs model.dtype = "
                   "\"bfloat16\""),
            std::string::npos) << e;
}

TEST_F(ConfigTest, RemoteWorkersTakeTheLastRanksAndNeedAListenerAndAToken) {
  const fs::path cuda = write("[model]\npath = \"m\"\n[runtime]\nbackend = \"cuda\"\n");
  const std::vector<std::string> remote = {"parallel.tensor_parallel_size=4",
                                           "parallel.remote_workers=3",
                                           "parallel.listen=\"10.0.0.1:7000\"",
                                           "parallel.join_token_file=token"};
  Config c = load_config(cuda, remote);
  EXPECT_EQ(c.parallel.devices, std::vector<std::int64_t>{0});  // the one local rank
  EXPECT_EQ(c.parallel.remote_workers, 3);
  EXPECT_EQ(c.parallel.join_timeout_s, 120);
  EXPECT_EQ(c.parallel.listen, "10.0.0.1:7000");
  // The resolved TOML reads back the same.
  const Config again = parse_config(to_toml(c), "again", fs::current_path(), {});
  EXPECT_EQ(again.parallel.listen, c.parallel.listen);
  EXPECT_EQ(again.parallel.remote_workers, 3);
  EXPECT_EQ(again.parallel.join_token_file, fs::absolute(c.parallel.join_token_file));
  std::vector<std::string> sets = remote;
  sets.push_back("parallel.devices=[0, 1]");
  std::string e = error_of(cuda, sets);
  EXPECT_NE(e.find("less 3 remote workers: one device per worker of this process"),
            std::string::npos) << e;
  e = error_of(cuda, {"parallel.remote_workers=2"});
  EXPECT_NE(e.find("parallel.remote_workers = 2 is more than the 1 ranks"), std::string::npos) << e;
  e = error_of(cuda, {"parallel.remote_workers=1"});
  EXPECT_NE(e.find("needs parallel.listen"), std::string::npos) << e;
  e = error_of(cuda, {"parallel.listen=\"127.0.0.1:7000\""});
  EXPECT_NE(e.find("parallel.listen is set, but parallel.remote_workers is 0"), std::string::npos)
      << e;
  for (const char* bad : {"\"7000\"", "\"h:70000\"", "\"h:\"", "\"::1:80\"", "7000"}) {
    e = error_of(cuda, {std::string("parallel.listen=") + bad});
    EXPECT_NE(e.find("parallel.listen: expected a \"HOST:PORT\" string"), std::string::npos)
        << bad << ": " << e;
  }
}

TEST(HostPortTest, HostIsLoopbackUnlessNamed) {
  EXPECT_EQ(parse_host_port(":80", "x").host, "127.0.0.1");
  EXPECT_EQ(parse_host_port("[::1]:80", "x").host, "::1");
  const HostPort hp = parse_host_port("node-a:65535", "x");
  EXPECT_EQ(hp.host, "node-a");
  EXPECT_EQ(hp.port, 65535);
  try {
    parse_host_port("node-a", "--connect");
    FAIL() << "no port";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--connect: 'node-a' is not HOST:PORT"), std::string::npos);
  }
}

TEST_F(ConfigTest, JoinTokensAreReadWithoutTheirNewlineAndMustBeLongEnough) {
  const fs::path file = write("0123456789abcdef0123\n");
  EXPECT_EQ(read_join_token(file), "0123456789abcdef0123");
  write("secret\n");
  try {
    read_join_token(file);
    FAIL() << "a 6-byte token";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 6 bytes, fewer than 16"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(read_join_token(file.parent_path() / "none"), Error);
}

TEST_F(ConfigTest, UnknownSectionNamesFileAndLine) {
  fs::path file = write("[model]\npath = \"m\"\n\n[cach]\nblock_size = 16\n");
  std::string e = error_of(file);
  EXPECT_NE(e.find(file.string() + ":4: unknown section [cach]"), std::string::npos) << e;
}

TEST_F(ConfigTest, UnknownKeyNamesFileLineAndKnownKeys) {
  fs::path file = write("[model]\npath = \"m\"\n[cache]\nblok_size = 16\n");
  std::string e = error_of(file);
  EXPECT_NE(e.find(file.string() + ":4: unknown key cache.blok_size"), std::string::npos) << e;
  EXPECT_NE(e.find("block_size"), std::string::npos) << e;
}

TEST_F(ConfigTest, WrongTypeNamesExpectedType) {
  fs::path file = write("[model]\npath = \"m\"\n[cache]\nblock_size = \"16\"\n");
  std::string e = error_of(file);
  EXPECT_NE(e.find(file.string() + ":4: cache.block_size: expected an integer in [1, 256]"),
            std::string::npos)
      << e;
}

TEST_F(ConfigTest, OutOfRangeValuesAreErrors) {
  struct Case {
    std::string section, line;
  };
  const std::vector<Case> bad = {
      {"cache", "block_size = 0"},          {"cache", "block_size = 512"},
      {"cache", "num_blocks = -1"},         {"cache", "gpu_memory_utilization = 0.0"},
      {"cache", "gpu_memory_utilization = 1.5"}, {"scheduler", "max_num_seqs = 0"},
      {"model", "dtype = \"float16\""},     {"runtime", "backend = \"tpu\""},
      {"runtime", "log_level = \"trace\""}, {"runtime", "plugin_dirs = \"p\""},
      {"parallel", "tensor_parallel_size = 0"}, {"cache", "enable_prefix_caching = 1"},
      {"model", "max_model_len = 1.5"},     {"runtime", "cuda_graph_max_prefill_tokens = 2049"},
  };
  for (const Case& c : bad) {
    std::string text = c.section == "model"
                           ? "[model]\npath = \"m\"\n" + c.line + "\n"
                           : "[model]\npath = \"m\"\n[" + c.section + "]\n" + c.line + "\n";
    fs::path file = write(text);
    std::string key = c.section + "." + c.line.substr(0, c.line.find(' '));
    std::string e = error_of(file);
    EXPECT_NE(e.find(file.string() + ":"), std::string::npos) << c.line << " -> " << e;
    EXPECT_NE(e.find(key + ": expected "), std::string::npos) << c.line << " -> " << e;
  }
}

// The engine keeps these keys in 32-bit ints: 2^32 + 1 once ran with max_model_len 1.
TEST_F(ConfigTest, IntegersAboveTheTypeTheyLandInAreErrors) {
  const std::vector<std::string> keys = {"model.max_model_len", "cache.num_blocks",
                                         "scheduler.max_num_seqs",
                                         "scheduler.max_num_batched_tokens"};
  for (const std::string& key : keys) {
    for (const char* value : {"4294967297", "2147483648"}) {
      const std::string e = error_of({}, {"model.path=m", key + "=" + std::string(value)});
      EXPECT_NE(e.find(key + ": expected an integer in ["), std::string::npos) << key << "=" << value << " -> " << e;
      EXPECT_NE(e.find("2147483647]"), std::string::npos) << e;
    }
    EXPECT_EQ(error_of({}, {"model.path=m", key + "=2147483647"}), "") << key;
  }
}

TEST_F(ConfigTest, TensorParallelRanksTakeTheFirstDevicesUnlessNamed) {
  const fs::path cuda = write("[model]\npath = \"m\"\n[runtime]\nbackend = \"cuda\"\n");
  Config c = load_config(cuda, {"parallel.tensor_parallel_size=4"});
  EXPECT_EQ(c.parallel.devices, (std::vector<std::int64_t>{0, 1, 2, 3}));
  c = load_config(cuda, {"parallel.tensor_parallel_size=2", "parallel.devices=[3, 1]"});
  EXPECT_EQ(c.parallel.devices, (std::vector<std::int64_t>{3, 1}));
  c = load_config(cuda, {"parallel.tensor_parallel_size=2", "parallel.data_parallel_size=3"});
  EXPECT_EQ(c.parallel.devices, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_NE(error_of(cuda, {"parallel.data_parallel_size=2", "parallel.devices=[0]"})
                .find("lists 1 devices, but parallel.tensor_parallel_size x data_parallel_size "
                      "is 1 x 2"),
            std::string::npos);
  // On the cpu every rank is a thread on the host.
  const fs::path cpu = write("[model]\npath = \"m\"\n");
  c = load_config(cpu, {"parallel.tensor_parallel_size=4"});
  EXPECT_EQ(c.parallel.tensor_parallel_size, 4);
  EXPECT_EQ(c.parallel.devices, std::vector<std::int64_t>{0});
  std::string e = error_of(cpu, {"parallel.tensor_parallel_size=65"});
  EXPECT_NE(e.find("parallel.tensor_parallel_size: expected an integer in [1, 64], got 65"),
            std::string::npos) << e;
  e = error_of(cpu, {"parallel.tensor_parallel_size=2", "parallel.devices=[0, 1]"});
  EXPECT_NE(e.find("every rank runs on the host"), std::string::npos) << e;
}

// An integer no double holds exactly has no value<double>(): an error, not an empty optional.
TEST_F(ConfigTest, AFractionGivenAsAHugeIntegerIsAnError) {
  const std::string e =
      error_of({}, {"model.path=m", "cache.gpu_memory_utilization=0o3333333333333333333333"});
  EXPECT_NE(e.find("cache.gpu_memory_utilization: expected a number in (0, 1]"), std::string::npos)
      << e;
}

// toml++'s formatter has undefined behaviour on an array holding inf: the message renders it.
TEST_F(ConfigTest, AnArrayWithInfIsShownInTheError) {
  const std::string e = error_of({}, {"model.path=m", "runtime.plugin_dirs=[inf, 1.5]"});
  EXPECT_NE(e.find("runtime.plugin_dirs: expected an array of non-empty path strings, got [inf, 1.5]"),
            std::string::npos) << e;
}

TEST_F(ConfigTest, MaxModelLenIsCheckedAgainstTheModel) {
  ModelConfig model;
  model.max_position_embeddings = 4096;
  Config config = load_config({}, {"model.path=m"});
  EXPECT_EQ(resolve_max_model_len(config, model), 4096);
  config.model.max_model_len = 4096;
  EXPECT_EQ(resolve_max_model_len(config, model), 4096);
  config.model.max_model_len = 4097;
  try {
    resolve_max_model_len(config, model);
    ADD_FAILURE() << "max_model_len 4097 over max_position_embeddings 4096 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.max_model_len = 4097 is above the model's "
                                         "max_position_embeddings = 4096"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ConfigTest, CollectsEveryError) {
  std::string e = error_of(write("[model]\npath = 1\n[cache]\nblock_size = 0\nfoo = 1\n"));
  EXPECT_NE(e.find("model.path"), std::string::npos) << e;
  EXPECT_NE(e.find("cache.block_size"), std::string::npos) << e;
  EXPECT_NE(e.find("cache.foo"), std::string::npos) << e;
}

TEST_F(ConfigTest, SyntaxErrorNamesLine) {
  fs::path file = write("[model]\npath = \"m\"\nmax_model_len = = 3\n");
  std::string e = error_of(file);
  EXPECT_NE(e.find(file.string() + ":3:"), std::string::npos) << e;
}

TEST_F(ConfigTest, ModelPathIsRequired) {
  std::string e = error_of(write("[cache]\nblock_size = 16\n"));
  EXPECT_NE(e.find("model.path is required"), std::string::npos) << e;
}

TEST_F(ConfigTest, MissingFileIsAnError) {
  std::string e = error_of(dir_ / "absent.toml");
  EXPECT_NE(e.find("absent.toml"), std::string::npos) << e;
}

TEST_F(ConfigTest, SetOverridesFileValuesByType) {
  fs::path file = write("[model]\npath = \"m\"\n[cache]\nblock_size = 16\n");
  Config c = load_config(file, {"cache.block_size=32", "cache.enable_prefix_caching=false",
                                "runtime.backend=cuda", "runtime.log_level=\"warn\"",
                                "cache.gpu_memory_utilization=0.25",
                                "runtime.plugin_dirs=[\"a\", \"/b\"]", "model.path=rel/model"});
  EXPECT_EQ(c.cache.block_size, 32);
  EXPECT_FALSE(c.cache.enable_prefix_caching);
  EXPECT_EQ(c.runtime.backend, Backend::cuda);
  EXPECT_EQ(c.runtime.log_level, LogLevel::warn);
  EXPECT_DOUBLE_EQ(c.cache.gpu_memory_utilization, 0.25);
  // Paths given with --set are relative to the working directory, not to the file.
  ASSERT_EQ(c.runtime.plugin_dirs.size(), 2u);
  EXPECT_EQ(c.runtime.plugin_dirs[0], fs::current_path() / "a");
  EXPECT_EQ(c.model.path, fs::current_path() / "rel/model");
}

TEST_F(ConfigTest, SetWithoutFile) {
  Config c = load_config({}, {"model.path=/m", "scheduler.max_num_seqs=4"});
  EXPECT_EQ(c.model.path, fs::path("/m"));
  EXPECT_EQ(c.scheduler.max_num_seqs, 4);
}

TEST_F(ConfigTest, BadSetIsNamed) {
  fs::path file = write("[model]\npath = \"m\"\n");
  EXPECT_NE(error_of(file, {"cache.block_size=big"}).find("--set cache.block_size=big: "
                                                            "cache.block_size: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of(file, {"cache.blocksize=3"}).find("--set cache.blocksize=3: unknown key"),
            std::string::npos);
  EXPECT_NE(error_of(file, {"nosection"}).find("expected section.key=value"), std::string::npos);
  EXPECT_NE(error_of(file, {"cache.block_size=0"}).find("--set cache.block_size=0"),
            std::string::npos);
  EXPECT_NE(error_of(file, {"gpu.x=1"}).find("unknown key gpu.x"), std::string::npos);
}

TEST_F(ConfigTest, ShippedConfigsLoad) {
  for (const auto& entry : fs::directory_iterator(minivllm::testing::configs_dir())) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    Config c = load_config(entry.path(), {});
    EXPECT_FALSE(c.model.path.empty());
    // The resolved config prints as TOML that loads back to the same values.
    fs::path again = write(to_toml(c));
    Config d = load_config(again, {});
    EXPECT_EQ(d.model.path, c.model.path);
    EXPECT_EQ(d.cache.block_size, c.cache.block_size);
    EXPECT_EQ(d.runtime.plugin_dirs, c.runtime.plugin_dirs);
  }
}

// The error parse_config throws for TOML text (named t.toml), or "" when it loads.
std::string text_error(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse_config(text, "t.toml", "/base", sets);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Debian's toml++ reaches undefined behaviour on these inputs (an 'unreachable' in its Unicode
// whitespace table, a failed assert or assumption in its parser): each is refused, naming the
// line, by the guard (toml_input_guard.hpp) before toml++ sees it.
TEST_F(ConfigTest, GuardRefusesNonAsciiOutsideStringsAndComments) {
  EXPECT_NE(text_error("\xCF\xBB").find("t.toml:1: a non-ASCII character (U+03FB) outside a string or comment"),
            std::string::npos)
      << text_error("\xCF\xBB");
  const std::string e = text_error("[model]\npath = \"m\"\nx = 1 \xC3\xA9\n");
  EXPECT_NE(e.find("t.toml:3: a non-ASCII character (U+00E9) outside a string or comment"),
            std::string::npos)
      << e;
}

TEST_F(ConfigTest, GuardRefusesInvalidUtf8) {
  const std::string e = text_error("[model]\npath = \"m\xC3\x28\"\n");
  EXPECT_NE(e.find("t.toml:2: not valid UTF-8 (byte 0xC3 at offset 17)"), std::string::npos) << e;
  const std::string s = error_of({}, {"model.path=m\xFF"});
  EXPECT_NE(s.find("--set model.path=m\xFF: model.path: the value is not valid UTF-8 (at byte 1)"),
            std::string::npos)
      << s;
}

TEST_F(ConfigTest, GuardRefusesATableHeaderNameThatStartsBadly) {
  for (const std::string text : {"[?", "[model]\npath = \"m\"\n[ ?x]\n", "[[ =a]]\n", "[ [a]]\n"}) {
    const std::string e = text_error(text);
    EXPECT_NE(e.find("a table header's name must start with a letter, digit, '_', '-' or a quote"),
              std::string::npos)
        << text << " -> " << e;
  }
  EXPECT_NE(text_error("[model]\npath = \"m\"\n[ ?x]\n").find("t.toml:3:"), std::string::npos);
}

TEST_F(ConfigTest, GuardRefusesACurlyBraceInsideAnArray) {
  const std::string e = text_error("[runtime]\nplugin_dirs = [\"a\",\n }\n");
  EXPECT_NE(e.find("t.toml:3: a '}' inside an array"), std::string::npos) << e;
}

TEST_F(ConfigTest, GuardRefusesNonAsciiWhereTomlReadsAheadThroughANumber) {
  for (const std::string text : {"x = 10\"\xC3\xA9\"", "x = -1'\xC3\xA9'", "x = 1979-05-27 07\"\xC3\xA9\"",
                                 "x = [1, 2\"\xC3\xA9\"]"}) {
    const std::string e = text_error(text);
    EXPECT_NE(e.find("t.toml:1: a non-ASCII character (U+00E9) in the value that starts with"),
              std::string::npos)
        << text << " -> " << e;
  }
}

TEST_F(ConfigTest, GuardRefusesNonAsciiAfterABackslashInAMultiLineString) {
  std::string e = text_error("[model]\npath = \"\"\"a\\\xC3\xA9\"\"\"\n");
  EXPECT_NE(e.find("t.toml:2: a non-ASCII character (U+00E9) right after a backslash"),
            std::string::npos)
      << e;
  e = text_error("[model]\npath = \"\"\"a\\  \n\n   \xC3\xA9\"\"\"\n");
  EXPECT_NE(e.find("t.toml:4: a non-ASCII character (U+00E9) first after a line-ending backslash"),
            std::string::npos)
      << e;
}

TEST_F(ConfigTest, GuardLetsValidTomlThrough) {
  // Non-ASCII in strings, comments and keys' quotes; a byte order mark; dates, signs, escapes.
  const std::string text =
      "\xEF\xBB\xBF# caf\xC3\xA9\n[model] # \xE2\x9C\x93\n"
      "path = \"mod\xC3\xA8le/\\u00e9\"\ndtype = '''float32'''\nmax_model_len = +1_024\n"
      "[runtime]\nplugin_dirs = [\"\xC3\xA9\", '\xF0\x9F\x98\x80', \"\"\"a\\\n  b\"\"\"]\n";
  Config c;
  ASSERT_NO_THROW(c = parse_config(text, "t.toml", "/base", {}));
  EXPECT_EQ(c.model.path, fs::path("/base/mod\xC3\xA8le/\xC3\xA9"));
  EXPECT_EQ(c.model.max_model_len, 1024);
  ASSERT_EQ(c.runtime.plugin_dirs.size(), 3u);
  EXPECT_EQ(c.runtime.plugin_dirs[2], fs::path("/base/ab"));
  EXPECT_EQ(text_error("[\"model\"]\n\"path\" = \"x\"\n"), "");
}

TEST_F(ConfigTest, SetValuesThatAreNotOneTomlValue) {
  // Refused by the guard: still a bare word for a string key, an error for the others.
  EXPECT_EQ(load_config({}, {"model.path=donn\xC3\xA9" "es"}).model.path,
            fs::current_path() / "donn\xC3\xA9" "es");
  std::string e = error_of({}, {"model.path=m", "cache.block_size=1\xC3\xA9"});
  EXPECT_NE(e.find("not a TOML value: a non-ASCII character (U+00E9)"), std::string::npos) << e;
  // A second key would be read by nobody.
  e = error_of({}, {"model.path=m", "cache.block_size=1\nother = 2"});
  EXPECT_NE(e.find("not a TOML value: more than one value"), std::string::npos) << e;
}

// toml++ prints a string holding a newline and ''' as a '''...''' literal it cannot end.
TEST_F(ConfigTest, PrintedConfigLoadsBackWhateverThePathHolds) {
  const Config c = load_config({}, {"model.path=/a'''\nb\"c\\d\te"});
  const Config d = parse_config(to_toml(c), "printed.toml", "/", {});
  EXPECT_EQ(d.model.path, c.model.path);
}

}  // namespace
}  // namespace minivllm
