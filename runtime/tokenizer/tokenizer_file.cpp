#include "tokenizer/tokenizer_file.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "tokenizer/bpe_model.hpp"
#include "tokenizer/byte_level.hpp"

namespace minivllm {
namespace {

using nlohmann::json;

// The pattern HF's ByteLevel pre-tokenizer applies when use_regex is true (GPT-2's).
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Ids index dense tables; real vocabularies stay far below this.
constexpr TokenId kMaxTokenId = 1 << 24;

class Reader {
 public:
  explicit Reader(std::string_view where) : where_(where) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("tokenizer (" + where_ + "): " + what);
  }
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }
  // An integer id in the dense tables' range. Checked before converting: nlohmann converts a
  // float such as 1e40 to an integer with a cast that is undefined behaviour out of range.
  TokenId token_id(const json& id, const std::string& context) const {
    const std::string range = "0.." + std::to_string(kMaxTokenId - 1);
    require(id.is_number_integer(), context + " has id " + id.dump() + ", not an integer in " + range);
    require(id.is_number_unsigned() && id.get<std::uint64_t>() < static_cast<std::uint64_t>(kMaxTokenId),
            context + " has id " + id.dump() + ", outside " + range);
    return static_cast<TokenId>(id.get<std::uint64_t>());
  }
  // A field that must be absent, null or equal to `expected` (features minivllm lacks).
  void require_value(const json& object, const char* key, const json& expected,
                     const std::string& context) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null() || *it == expected) return;
    fail(context + "." + key + " = " + it->dump() + " is not supported (only " + expected.dump() +
         ")");
  }

  Normalization normalizer(const json& j) const {
    if (j.is_null()) return Normalization::none;
    const std::string type = j.value("type", "");
    if (type == "NFC") return Normalization::nfc;
    if (type == "Sequence") {
      Normalization result = Normalization::none;
      for (const json& step : j.at("normalizers")) {
        const Normalization n = normalizer(step);
        if (n != Normalization::none) {
          require(result == Normalization::none,
                  "normalizer: more than one normalization step is not supported");
          result = n;
        }
      }
      return result;
    }
    fail("normalizer type '" + type + "' is not supported (only NFC or none)");
  }

  // Appends the patterns the pre-tokenizer splits with; returns whether it has a ByteLevel step.
  bool pre_tokenizer(const json& j, std::vector<std::string>& patterns) const {
    require(j.is_object(), "pre_tokenizer is missing: only byte-level BPE is supported");
    const std::string type = j.value("type", "");
    if (type == "Sequence") {
      bool byte_level = false;
      for (const json& step : j.at("pretokenizers")) byte_level |= pre_tokenizer(step, patterns);
      return byte_level;
    }
    if (type == "Split") {
      const std::string behavior = j.value("behavior", "");
      require(behavior == "Isolated",
              "pre_tokenizer Split behavior '" + behavior + "' is not supported (only Isolated)");
      require_value(j, "invert", false, "pre_tokenizer Split");
      const json& pattern = j.at("pattern");
      require(pattern.contains("Regex"),
              "pre_tokenizer Split pattern " + pattern.dump() + " is not supported (only Regex)");
      patterns.push_back(pattern.at("Regex").get<std::string>());
      return false;
    }
    if (type == "ByteLevel") {
      require_value(j, "add_prefix_space", false, "pre_tokenizer ByteLevel");
      if (j.value("use_regex", true)) patterns.emplace_back(kGpt2Pattern);
      return true;
    }
    fail("pre_tokenizer type '" + type + "' is not supported (Sequence, Split, ByteLevel)");
  }

  // Fills the ids a single sequence gets around it when add_special_tokens is on.
  void post_processor(const json& j, TokenizerSpec& spec) const {
    if (j.is_null()) return;
    const std::string type = j.value("type", "");
    if (type == "ByteLevel") return;  // only adjusts offsets, which minivllm does not report
    if (type == "Sequence") {
      for (const json& step : j.at("processors")) post_processor(step, spec);
      return;
    }
    if (type == "TemplateProcessing") {
      bool after_sequence = false;
      for (const json& item : j.at("single")) {
        if (item.contains("Sequence")) {
          after_sequence = true;
          continue;
        }
        const std::string name = item.at("SpecialToken").at("id").get<std::string>();
        const json& ids = j.at("special_tokens").at(name).at("ids");
        auto& target = after_sequence ? spec.suffix_ids : spec.prefix_ids;
        for (const json& id : ids) target.push_back(token_id(id, "post_processor token " + name));
      }
      return;
    }
    fail("post_processor type '" + type +
         "' is not supported (ByteLevel, TemplateProcessing, Sequence)");
  }

  std::shared_ptr<BpeModel> model(const json& j) const {
    require(j.value("type", "") == "BPE",
            "model type '" + j.value("type", "") + "' is not supported (only BPE)");
    require_value(j, "dropout", nullptr, "model");
    require_value(j, "byte_fallback", false, "model");
    require_value(j, "continuing_subword_prefix", "", "model");
    require_value(j, "end_of_word_suffix", "", "model");
    BpeModel::Vocab vocab;
    const json& entries = j.at("vocab");
    vocab.reserve(entries.size());
    for (const auto& [token, id] : entries.items()) {
      std::optional<std::string> bytes = byte_level::bytes_of_token(token);
      require(bytes.has_value(),
              "model.vocab entry '" + token + "' is not in the byte-level alphabet");
      vocab.emplace(std::move(*bytes), token_id(id, "model.vocab entry '" + token + "'"));
    }
    const json& merges = j.at("merges");
    auto bpe = std::make_shared<BpeModel>(std::move(vocab), j.value("ignore_merges", false),
                                          merges.size());
    // Merges are ["a", "b"] pairs (newer files, Qwen3) or "a b" strings (older, Llama 3).
    for (const json& merge : merges) {
      std::string left, right;
      if (merge.is_array()) {
        require(merge.size() == 2, "model.merges entry " + merge.dump() + " is not a pair");
        left = merge[0].get<std::string>();
        right = merge[1].get<std::string>();
      } else {
        const std::string s = merge.get<std::string>();
        const std::size_t space = s.find(' ');
        require(space != std::string::npos && s.find(' ', space + 1) == std::string::npos,
                "model.merges entry '" + s + "' is not two tokens separated by one space");
        left = s.substr(0, space);
        right = s.substr(space + 1);
      }
      const auto left_bytes = byte_level::bytes_of_token(left),
                 right_bytes = byte_level::bytes_of_token(right);
      require(left_bytes && right_bytes,
              "model.merges entry " + merge.dump() + " is not in the byte-level alphabet");
      bpe->add_merge(*left_bytes, *right_bytes);
    }
    return bpe;
  }

  std::vector<AddedToken> added_tokens(const json& j, Normalization normalization) const {
    std::vector<AddedToken> out;
    for (const json& t : j) {
      const std::string content = t.at("content").get<std::string>();
      const std::string context = "added token '" + content + "'";
      require_value(t, "single_word", false, context);
      require_value(t, "lstrip", false, context);
      require_value(t, "rstrip", false, context);
      // Tokens are matched in the raw text; for normalized ones that is only right when
      // there is no normalizer.
      if (normalization != Normalization::none) require_value(t, "normalized", false, context);
      out.push_back({content, token_id(t.at("id"), context), t.value("special", false)});
    }
    return out;
  }

 private:
  std::string where_;
};

// tokenizer_config.json names tokens as a string or as {"content": ...}.
std::optional<std::string> token_name(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_object()) return it->at("content").get<std::string>();
  return it->get<std::string>();
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("tokenizer: cannot open " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TokenizerSpec parse_tokenizer_spec(std::string_view tokenizer_json,
                                   std::string_view tokenizer_config_json, std::string_view where) {
  const Reader r(where);
  TokenizerSpec spec;
  const char* reading = "tokenizer.json";  // which file a JSON error is in, for its message
  try {
    const json file = json::parse(tokenizer_json);
    spec.normalization = r.normalizer(file.value("normalizer", json()));
    r.require(r.pre_tokenizer(file.value("pre_tokenizer", json()), spec.split_patterns),
              "pre_tokenizer has no ByteLevel step: only byte-level BPE is supported");
    const json decoder = file.value("decoder", json());
    r.require(decoder.is_object() && decoder.value("type", "") == "ByteLevel",
              "decoder " + decoder.dump() + " is not supported (only ByteLevel)");
    r.post_processor(file.value("post_processor", json()), spec);
    spec.model = r.model(file.at("model"));
    spec.added_tokens =
        r.added_tokens(file.value("added_tokens", json::array()), spec.normalization);

    reading = "tokenizer_config.json";
    const json config = json::parse(tokenizer_config_json);
    spec.bos_token = token_name(config, "bos_token");
    spec.eos_token = token_name(config, "eos_token");
    if (const auto t = config.find("chat_template"); t != config.end() && t->is_string()) {
      spec.chat_template = t->get<std::string>();
    } else if (t != config.end() && t->is_array()) {  // named templates: use "default"
      for (const json& named : *t)
        if (named.value("name", "") == "default")
          spec.chat_template = named.at("template").get<std::string>();
    }
  } catch (const json::exception& e) {
    r.fail(std::string("malformed ") + reading + ": " + e.what());
  }
  return spec;
}

TokenizerSpec read_tokenizer_spec(const std::filesystem::path& dir) {
  const std::filesystem::path config = dir / "tokenizer_config.json";
  return parse_tokenizer_spec(
      read_file(dir / "tokenizer.json"),
      std::filesystem::exists(config) ? read_file(config) : std::string("{}"), dir.string());
}

Tokenizer Tokenizer::from_directory(const std::filesystem::path& dir) {
  return Tokenizer(read_tokenizer_spec(dir));
}

}  // namespace minivllm
