#include "tokenizer/added_vocabulary.hpp"

#include <algorithm>

namespace minivllm {

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  for (std::size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i].content.empty()) continue;  // an empty token can never be matched
    by_first_byte_[static_cast<unsigned char>(tokens_[i].content[0])].push_back(i);
  }
  for (auto& list : by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
}

AddedVocabulary::Match AddedVocabulary::find(std::string_view text, std::size_t from) const {
  for (std::size_t i = from; i < text.size(); ++i) {
    for (const std::size_t t : by_first_byte_[static_cast<unsigned char>(text[i])]) {
      const std::string& content = tokens_[t].content;
      if (text.compare(i, content.size(), content) == 0)
        return {i, i + content.size(), tokens_[t].id};
    }
  }
  return {text.size(), text.size(), 0};
}

}  // namespace minivllm
