// Tokenizer speed: load time of tokenizer.json and encode throughput on ~1 MB of mixed-language
// text (English, German/French, Russian, Chinese, Japanese, code, numbers, emoji), generated
// from a fixed seed so runs compare. Prints a table and one JSON line. Not run by the tests.
//   tokenizer_bench [DATA_DIR] [TEXT_FILE]   (DATA_DIR holds tokenizers/<family>/; default
//   $MINIVLLM_DATA or ./data; TEXT_FILE replaces the generated text)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"
#include "tokenizer/utf8.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Words from per-language alphabets with realistic lengths and punctuation, so the word
// cache sees many distinct words rather than one paragraph repeated.
std::string mixed_text(std::size_t bytes) {
  std::mt19937 rng(1234);
  const auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const std::vector<std::string> latin = {"th", "e",  "an",  "re", "on", "at", "en", "nd",
                                          "st", "es", "ing", "ou", "ä",  "é",  "ö",  "ü",
                                          "ß",  "è",  "ç",   "io", "ar", "al", "er", "ch"};
  const std::vector<std::string> code = {"def ",
                                         "return ",
                                         "if (x < 0) {\n",
                                         "    ",
                                         "}\n",
                                         "self.",
                                         "std::vector<int>",
                                         " == ",
                                         "for i in range(",
                                         "):\n",
                                         "#include <map>\n",
                                         "x += 1;\n"};
  std::string text;
  while (text.size() < bytes) {
    const int kind = pick(10);
    const int words = 5 + pick(20);
    for (int w = 0; w < words; ++w) {
      if (kind <= 3) {  // English/German/French-like
        const int syllables = 1 + pick(4);
        if (w > 0) text += ' ';
        for (int s = 0; s < syllables; ++s)
          text += latin[static_cast<std::size_t>(pick(static_cast<int>(latin.size())))];
        if (pick(8) == 0) text += ",.;:!?"[pick(6)];
      } else if (kind == 4) {  // Russian
        if (w > 0) text += ' ';
        for (int c = 1 + pick(8); c > 0; --c)
          minivllm::utf8::append_code_point(text, 0x430 + static_cast<char32_t>(pick(32)));
      } else if (kind == 5) {  // Chinese: common CJK ideographs, full-width punctuation
        for (int c = 1 + pick(4); c > 0; --c)
          minivllm::utf8::append_code_point(text, 0x4E00 + static_cast<char32_t>(pick(3000)));
        if (pick(6) == 0) text += "，";
      } else if (kind == 6) {  // Japanese kana
        for (int c = 1 + pick(5); c > 0; --c)
          minivllm::utf8::append_code_point(text, 0x3041 + static_cast<char32_t>(pick(86)));
      } else if (kind == 7) {
        text += code[static_cast<std::size_t>(pick(static_cast<int>(code.size())))];
      } else if (kind == 8) {  // numbers
        text += ' ' + std::to_string(std::uniform_int_distribution<long>(0, 10'000'000)(rng));
        if (pick(3) == 0) text += "." + std::to_string(pick(1000));
      } else {  // emoji and symbols
        minivllm::utf8::append_code_point(text, 0x1F600 + static_cast<char32_t>(pick(80)));
        text += ' ';
      }
    }
    text += pick(3) == 0 ? "\n\n" : "\n";
  }
  return text;
}

struct Result {
  std::string family;
  double load_s = 0, cold_s = 0, warm_s = 0;
  std::size_t tokens = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("MINIVLLM_DATA");
  const std::string data_dir = argc > 1 ? argv[1] : (env != nullptr ? env : "data");
  std::string text;
  if (argc > 2) {
    std::ifstream in(argv[2], std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
  } else {
    text = mixed_text(1 << 20);
  }
  const double mb = static_cast<double>(text.size()) / 1e6;

  std::vector<Result> results;
  try {
    for (const char* family : {"qwen3", "llama3"}) {
      Result r{family};
      auto start = Clock::now();
      const minivllm::Tokenizer tok =
          minivllm::Tokenizer::from_directory(data_dir + "/tokenizers/" + family);
      r.load_s = seconds_since(start);
      start = Clock::now();
      r.tokens = tok.encode(text).size();  // the word cache starts empty
      r.cold_s = seconds_since(start);
      start = Clock::now();
      tok.encode(text);  // now most words are cached
      r.warm_s = seconds_since(start);
      results.push_back(r);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }

  std::printf("text: %.2f MB mixed-language, one thread\n", mb);
  std::printf("%-8s %10s %10s %12s %14s %12s %14s\n", "family", "load_s", "tokens", "cold_MB/s",
              "cold_tok/s", "warm_MB/s", "warm_tok/s");
  for (const Result& r : results)
    std::printf("%-8s %10.3f %10zu %12.2f %14.0f %12.2f %14.0f\n", r.family.c_str(), r.load_s,
                r.tokens, mb / r.cold_s, static_cast<double>(r.tokens) / r.cold_s, mb / r.warm_s,
                static_cast<double>(r.tokens) / r.warm_s);
  std::printf("{\"bench\": \"tokenizer\", \"text_mb\": %.3f", mb);
  for (const Result& r : results)
    std::printf(
        ", \"%s\": {\"load_s\": %.3f, \"tokens\": %zu, \"cold_mb_s\": %.2f, \"cold_tokens_s\": "
        "%.0f, "
        "\"warm_mb_s\": %.2f, \"warm_tokens_s\": %.0f}",
        r.family.c_str(), r.load_s, r.tokens, mb / r.cold_s,
        static_cast<double>(r.tokens) / r.cold_s, mb / r.warm_s,
        static_cast<double>(r.tokens) / r.warm_s);
  std::printf("}\n");
  return 0;
}
