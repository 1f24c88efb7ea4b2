#include "server/openai_response.hpp"

#include <minivllm/error.hpp>

#include "tokenizer/tokenizer.hpp"

namespace minivllm::server {

using nlohmann::json;

std::string token_text(const Tokenizer& tokenizer, std::int32_t id) {
  if (id < 0 || static_cast<std::size_t>(id) >= tokenizer.vocab_size()) return "";
  try {
    const std::int32_t ids[] = {id};
    return tokenizer.decode(ids, /*skip_special_tokens=*/false);
  } catch (const Error&) {
    return "";  // an id the vocabulary skips
  }
}

namespace {

json bytes_of(const Tokenizer& tokenizer, std::int32_t id) {
  json out = json::array();
  try {
    for (unsigned char c : tokenizer.token_bytes(id)) out.push_back(static_cast<int>(c));
  } catch (const Error&) {
  }
  return out;
}

json chat_entry(const Tokenizer& tokenizer, const Logprob& lp) {
  return {{"token", token_text(tokenizer, lp.token)},
          {"logprob", lp.logprob},
          {"bytes", bytes_of(tokenizer, lp.token)}};
}

const char* object_name(Api api, bool chunk) {
  if (api == Api::completions) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

json finish_reason(const CompletionOutput* c) {
  if (c == nullptr || c->finish_reason == FinishReason::none) return nullptr;
  return finish_reason_name(c->finish_reason);
}

json stop_reason(const CompletionOutput* c) {
  if (c == nullptr) return nullptr;
  if (c->stop_str) return *c->stop_str;
  if (c->stop_token_id) return *c->stop_token_id;
  return nullptr;
}

}  // namespace

json logprobs_json(Api api, const Tokenizer& tokenizer, std::span<const PositionLogprobs> positions,
                   std::size_t& text_offset) {
  if (api == Api::chat) {
    json content = json::array();
    for (const PositionLogprobs& p : positions) {
      json entry = chat_entry(tokenizer, p.chosen);
      json top = json::array();
      for (const Logprob& t : p.top) top.push_back(chat_entry(tokenizer, t));
      entry["top_logprobs"] = std::move(top);
      content.push_back(std::move(entry));
    }
    return {{"content", std::move(content)}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
       offsets = json::array();
  for (const PositionLogprobs& p : positions) {
    const std::string text = token_text(tokenizer, p.chosen.token);
    tokens.push_back(text);
    token_logprobs.push_back(p.chosen.logprob);
    json top = json::object();
    for (const Logprob& t : p.top) top[token_text(tokenizer, t.token)] = t.logprob;
    top_logprobs.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += text.size();
  }
  return {{"tokens", std::move(tokens)},
          {"token_logprobs", std::move(token_logprobs)},
          {"top_logprobs", std::move(top_logprobs)},
          {"text_offset", std::move(offsets)}};
}

json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json chunk_json(const ResponseHead& head, json choices) {
  return {{"id", head.id},
          {"object", object_name(head.api, true)},
          {"created", head.created},
          {"model", head.model},
          {"choices", std::move(choices)}};
}

json chunk_choice(Api api, int index, const std::string& text, json logprobs,
                  const CompletionOutput* finished, bool role) {
  json choice = {{"index", index}};
  if (api == Api::completions) {
    choice["text"] = text;
  } else {
    json delta = json::object();
    if (role) delta["role"] = "assistant";
    if (role || finished == nullptr) delta["content"] = text;
    choice["delta"] = std::move(delta);
  }
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason(finished);
  if (finished != nullptr) choice["stop_reason"] = stop_reason(finished);
  return choice;
}

json whole_json(const ResponseHead& head, json choices, const Usage& usage) {
  return {{"id", head.id},
          {"object", object_name(head.api, false)},
          {"created", head.created},
          {"model", head.model},
          {"choices", std::move(choices)},
          {"usage", usage_json(usage)}};
}

json whole_choice(Api api, int index, const std::string& text, json logprobs,
                  const CompletionOutput& output) {
  json choice = {{"index", index}};
  if (api == Api::completions) choice["text"] = text;
  else choice["message"] = {{"role", "assistant"}, {"content", text}};
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = finish_reason(&output);
  choice["stop_reason"] = stop_reason(&output);
  return choice;
}

std::string sse(const json& object) {
  return "data: " + object.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace minivllm::server
