#include <cstring>
#include <fstream>

#include <gtest/gtest.h>

#include <minivllm/error.hpp>

#include "checkpoint/safetensors.hpp"
#include "temp_dir.hpp"

namespace minivllm {
namespace {

namespace fs = std::filesystem;
using minivllm::testing::TempDir;

// Writes a raw safetensors file: 8-byte length, header text, then `data_size` bytes.
void write_raw(const fs::path& p, const std::string& header, std::size_t data_size,
               std::uint64_t declared_len = UINT64_MAX) {
  std::uint64_t len = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::ofstream out(p, std::ios::binary);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
  out << header << std::string(data_size, '\x01');
}

std::string open_error(const fs::path& p) {
  try {
    SafetensorsFile::open(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, WriteThenReadRoundTrip) {
  TempDir dir("st");
  std::vector<TensorSpec> specs = {{"b.weight", DType::bf16, {3, 2}},
                                   {"a.bias", DType::f32, {4}},
                                   {"c.half", DType::f16, {2, 1, 2}},
                                   {"scalar", DType::f32, {}}};
  fs::path file = dir / "m.safetensors";
  write_safetensors(file, specs, {{"format", "pt"}},
                    [&](std::size_t t, std::int64_t first, std::span<std::byte> dest) {
                      for (std::size_t i = 0; i < dest.size(); ++i)
                        dest[i] = static_cast<std::byte>(t * 16 + first + i);
                    });
  SafetensorsFile f = SafetensorsFile::open(file);
  ASSERT_EQ(f.tensors().size(), 4u);
  for (std::size_t t = 0; t < specs.size(); ++t) {
    const TensorView& v = f.tensors()[t];  // file order is spec order
    EXPECT_EQ(v.name, specs[t].name);
    EXPECT_EQ(v.dtype, specs[t].dtype);
    EXPECT_EQ(v.shape, specs[t].shape);
    ASSERT_EQ(v.bytes.size(), specs[t].numel() * dtype_size(specs[t].dtype));
    for (std::size_t i = 0; i < v.bytes.size(); ++i)
      ASSERT_EQ(v.bytes[i], static_cast<std::byte>(t * 16 + i)) << v.name << " byte " << i;
  }
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.find("a.bias"), &f.tensors()[1]);
  EXPECT_EQ(f.find("nope"), nullptr);
  // Header: compact, padded with spaces to a multiple of 8.
  std::ifstream in(file, std::ios::binary);
  std::uint64_t len = 0;
  in.read(reinterpret_cast<char*>(&len), 8);
  EXPECT_EQ(len % 8, 0u);
  std::string header(len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(len));
  EXPECT_EQ(header.rfind("{\"b.weight\":{\"dtype\":\"BF16\",\"shape\":[3,2],\"data_offsets\":[0,12]}", 0),
            0u)
      << header;
}

TEST(Safetensors, FillErrorLeavesNoFile) {
  TempDir dir("st");
  fs::path file = dir / "m.safetensors";
  EXPECT_THROW(write_safetensors(file, {{"x", DType::f32, {4}}}, {},
                                 [](std::size_t, std::int64_t, std::span<std::byte>) {
                                   throw Error("fill failed");
                                 }),
               Error);
  EXPECT_FALSE(fs::exists(file));
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

struct MalformedCase {
  const char* label;
  std::string header;
  std::size_t data_size;
  std::uint64_t declared_len;
  const char* expected;  // a phrase of the error message
};

TEST(Safetensors, MalformedFilesAreClearErrors) {
  const std::string good_entry = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::vector<MalformedCase> cases = {
      {"header length past end", "{" + good_entry + "}", 8, 1 << 20, "runs past the end of the file"},
      {"not json", "{\"t\": [", 0, UINT64_MAX, "not valid JSON"},
      {"not an object", "[1,2]", 0, UINT64_MAX, "not a JSON object"},
      {"unknown dtype", R"({"t":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", 2, UINT64_MAX,
       "unsupported dtype 'I8'"},
      {"missing dtype", R"({"t":{"shape":[2],"data_offsets":[0,8]}})", 8, UINT64_MAX, "dtype"},
      {"shape/size mismatch", R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
       UINT64_MAX, "needs 12 bytes"},
      {"negative dim", R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, UINT64_MAX,
       "non-negative"},
      {"offsets past data", "{" + good_entry + "}", 4, UINT64_MAX, "past the end of the data"},
      {"offsets reversed", R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8,
       UINT64_MAX, "end before they begin"},
      {"offsets arity", R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8, UINT64_MAX,
       "data_offsets must be [begin, end]"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, UINT64_MAX, "overlap"},
      {"duplicate name", "{" + good_entry + "," + good_entry + "}", 8, UINT64_MAX,
       "names tensor 't' twice"},
      {"metadata not strings", R"({"__metadata__":{"format":1}})", 0, UINT64_MAX,
       "__metadata__ value 'format'"},
      {"huge shape", R"({"t":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
       8, UINT64_MAX, "too large"},
      // 2^62 F32 elements are 2^64 bytes: wrapped to 0, this once matched data_offsets [0,0].
      {"bytes wrap to zero", R"({"t":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})",
       0, UINT64_MAX, "too large"},
      // A dimension above INT64_MAX after a zero one once became -1 in the shape.
      {"dim past int64", R"({"t":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})",
       0, UINT64_MAX, "too large"},
  };
  TempDir dir("st_bad");
  for (const MalformedCase& c : cases) {
    fs::path file = dir / "bad.safetensors";
    write_raw(file, c.header, c.data_size, c.declared_len);
    std::string e = open_error(file);
    EXPECT_NE(e.find(file.string()), std::string::npos) << c.label << ": " << e;
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.label << ": " << e;
  }
}

TEST(Safetensors, TruncatedFiles) {
  TempDir dir("st_trunc");
  fs::path file = dir / "short.safetensors";
  std::ofstream(file, std::ios::binary) << "abc";
  EXPECT_NE(open_error(file).find("truncated"), std::string::npos);
  // A valid file cut short at every length: always an error, never a crash.
  fs::path whole = dir / "whole.safetensors";
  write_safetensors(whole, {{"x", DType::bf16, {5, 3}}, {"y", DType::f32, {2}}}, {},
                    [](std::size_t, std::int64_t, std::span<std::byte> d) {
                      std::memset(d.data(), 7, d.size());
                    });
  std::ifstream in(whole, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), n);
    EXPECT_NE(open_error(file), "") << "cut at " << n;
  }
  EXPECT_NE(open_error(dir / "absent.safetensors").find("cannot open"), std::string::npos);
}

class CheckpointTest : public ::testing::Test {
 protected:
  void write_file(const std::string& name, const std::vector<TensorSpec>& specs) {
    write_safetensors(dir_ / name, specs, {}, [](std::size_t t, std::int64_t, std::span<std::byte> d) {
      std::memset(d.data(), static_cast<int>(t + 1), d.size());
    });
  }
  std::string open_error() {
    try {
      Checkpoint::open(dir_.path());
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  TempDir dir_{"ckpt"};
};

TEST_F(CheckpointTest, SingleFile) {
  write_file("model.safetensors", {{"w", DType::bf16, {2, 2}}, {"n", DType::f32, {2}}});
  Checkpoint c = Checkpoint::open(dir_.path());
  EXPECT_EQ(c.tensors().size(), 2u);
  EXPECT_EQ(c.get("n").shape, std::vector<std::int64_t>{2});
  EXPECT_EQ(c.total_bytes(), 16u);
  try {
    c.get("missing.weight");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor 'missing.weight'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(dir_.path().string()), std::string::npos);
  }
}

TEST_F(CheckpointTest, ShardedThroughIndex) {
  write_file("model-00001-of-00002.safetensors", {{"a", DType::bf16, {4}}, {"b", DType::bf16, {2}}});
  write_file("model-00002-of-00002.safetensors", {{"c", DType::f32, {3}}});
  std::ofstream(dir_ / "model.safetensors.index.json")
      << R"({"metadata":{"total_size":24},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
      << R"("b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})";
  Checkpoint c = Checkpoint::open(dir_.path());
  EXPECT_EQ(c.tensors().size(), 3u);
  EXPECT_EQ(c.get("c").dtype, DType::f32);
  EXPECT_EQ(c.get("c").file, dir_ / "model-00002-of-00002.safetensors");
  EXPECT_EQ(static_cast<int>(c.get("a").bytes[0]), 1);
}

TEST_F(CheckpointTest, IndexErrors) {
  write_file("s1.safetensors", {{"a", DType::bf16, {4}}});
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map":{"a":"s1.safetensors","z":"s1.safetensors"}})";
  EXPECT_NE(open_error().find("tensor 'z' is listed in s1.safetensors"), std::string::npos) << open_error();

  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map":{"a":"../s1.safetensors"}})";
  EXPECT_NE(open_error().find("not a plain file name"), std::string::npos) << open_error();

  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map":{"a":"s9.safetensors"}})";
  EXPECT_NE(open_error().find("s9.safetensors: cannot open"), std::string::npos) << open_error();

  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weights":{}})";
  EXPECT_NE(open_error().find("missing object 'weight_map'"), std::string::npos) << open_error();
}

TEST_F(CheckpointTest, EmptyFolder) {
  EXPECT_NE(open_error().find("no model.safetensors or model.safetensors.index.json"),
            std::string::npos);
}

}  // namespace
}  // namespace minivllm
