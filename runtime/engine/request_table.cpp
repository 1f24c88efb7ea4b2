#include "engine/request_table.hpp"

#include <minivllm/error.hpp>

#include "tokenizer/tokenizer.hpp"

namespace minivllm {
namespace {

double seconds_between(std::chrono::steady_clock::time_point from,
                       std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

RequestTable::RequestTable(std::shared_ptr<const Tokenizer> tokenizer, ChatRenderer chat,
                           TextStreams text_streams, std::int32_t vocab_size,
                           SamplingDefaults defaults)
    : tokenizer_(std::move(tokenizer)),
      chat_(std::move(chat)),
      defaults_(defaults),
      text_streams_(std::move(text_streams)),
      vocab_size_(vocab_size) {}

RequestTable::~RequestTable() = default;

std::vector<std::int32_t> RequestTable::prompt_of(const GenerateRequest& req) const {
  if (!req.messages.empty()) {
    if (!tokenizer_ || !chat_)
      throw Error("chat messages need a tokenizer and a chat format, and this engine has none");
    // The template writes every special token itself (as apply_chat_template does).
    return tokenizer_->encode(chat_(req.messages, req.chat_options), false);
  }
  if (!req.prompt_token_ids.empty()) return req.prompt_token_ids;
  if (!tokenizer_) throw Error("a text prompt needs a tokenizer, and this engine has none");
  return tokenizer_->encode(req.prompt, req.add_special_tokens);
}

SeqRequest RequestTable::open(GenerateRequest& req, bool streams) {
  const std::string id =
      req.request_id.empty() ? "req-" + std::to_string(next_id_++) : req.request_id;
  std::vector<std::int32_t> prompt;
  try {
    if (requests_.count(id) != 0) throw Error("a request with this id is already running");
    prompt = prompt_of(req);
    req.params = req.params.with_defaults(defaults_);
    req.params.validate();
    if (!req.params.stop.empty() && !text_streams_)
      throw Error("stop strings need a tokenizer, and this engine has none");
    for (std::int32_t t : prompt)
      if (t < 0 || t >= vocab_size_)
        throw Error("prompt token id " + std::to_string(t) + " is outside [0, " +
                    std::to_string(vocab_size_) + ")");
  } catch (const std::exception& e) {
    throw Error("request " + id + ": " + e.what());
  }
  const int n = req.params.n;
  Open r;
  r.arrival = Clock::now();
  r.last_token.resize(static_cast<std::size_t>(n));
  r.output.request_id = id;
  r.output.prompt_token_ids = prompt;
  r.num_unfinished = n;
  r.streams = streams;
  r.first_seq_id = next_seq_id_;
  next_seq_id_ += static_cast<std::uint64_t>(n);
  for (int i = 0; i < n; ++i) {
    r.output.outputs.emplace_back().index = i;
    if (text_streams_ && req.params.stop.empty()) r.text.push_back(text_streams_(req.params.skip_special_tokens));
  }
  Open& opened = requests_.emplace(id, std::move(r)).first->second;
  for (int i = 0; i < n; ++i) by_seq_.emplace(opened.first_seq_id + i, &opened);
  return SeqRequest{id, opened.first_seq_id, std::move(prompt), req.params};
}

void RequestTable::close(Open& r, FinishReason reason, bool error) {
  counters_.count_finished(reason, error);
  counters_.e2e_request_latency.observe(seconds_between(r.arrival, Clock::now()));
  for (std::size_t i = 0; i < r.output.outputs.size(); ++i) by_seq_.erase(r.first_seq_id + i);
}

void RequestTable::refuse(const std::string& request_id, const std::string& error,
                          RequestEvents& events) {
  const auto it = requests_.find(request_id);
  if (it == requests_.end()) return;
  close(it->second, FinishReason::abort, true);
  requests_.erase(it);
  events.failed(request_id, error, /*refused=*/true);
}

// Completion `index` of `r` got `token` (-1: none) in a step; `u`, when set, says what else.
void RequestTable::apply(Open& r, std::size_t index, std::int32_t token, SeqUpdate* u,
                         RequestEvents& events) {
  CompletionOutput& c = r.output.outputs.at(index);
  RequestDelta delta;
  if (token >= 0) {
    c.token_ids.push_back(token);
    ++counters_.generation_tokens;
    if (c.token_ids.size() > 1) {
      counters_.inter_token_latency.observe(seconds_between(r.last_token[index], now_));
    } else if (index == 0) {  // the request's first token
      counters_.time_to_first_token.observe(seconds_between(r.arrival, now_));
      counters_.prompt_tokens += r.output.prompt_token_ids.size();
    }
    r.last_token[index] = now_;
    if (r.streams) delta.token_ids.push_back(token);
  }
  const FinishReason finish = u ? u->finish_reason : FinishReason::none;
  const bool finished = finish != FinishReason::none;
  if (!r.text.empty()) {
    if (token >= 0) delta.text = r.text[index]->push(token);
    if (finished) delta.text += r.text[index]->finish();
    c.text += delta.text;
  } else if (finished) {
    c.text = std::move(u->text);  // the core's, decided by the stop strings
    delta.text = c.text;
  }
  if (u) {
    c.logprobs.insert(c.logprobs.end(), u->logprobs.begin(), u->logprobs.end());
    delta.logprobs = std::move(u->logprobs);
    if (finished) {
      c.finish_reason = finish;
      if (u->stop_str_set) c.stop_str = u->stop_str;
      if (u->stop_token_id >= 0) c.stop_token_id = u->stop_token_id;
    }
  }
  if (r.streams) {
    delta.request_id = r.output.request_id;
    delta.index = static_cast<std::int32_t>(index);
    delta.finished = finished;
    events.delta(std::move(delta));
  }
  if (!finished || --r.num_unfinished > 0) return;
  close(r, finish, false);
  auto done = requests_.extract(r.output.request_id);
  RequestOutput& out = done.mapped().output;
  out.finished = true;
  events.answered(std::move(out));
}

void RequestTable::apply(StepOutputs& out, RequestEvents& events) {
  now_ = Clock::now();
  for (const SeqAdmitted& a : out.admitted) {
    const auto it = by_seq_.find(a.seq_id);
    if (it == by_seq_.end() || a.seq_id != it->second->first_seq_id) continue;
    // The request's first completion speaks for it: they share the prompt.
    Open& r = *it->second;
    r.output.num_cached_tokens = a.num_cached_tokens;
    counters_.request_queue_time.observe(seconds_between(r.arrival, now_));
  }
  for (SeqPromptLogprobs& l : out.prompt_logprobs) {
    const auto it = by_seq_.find(l.seq_id);
    if (it == by_seq_.end() || l.seq_id != it->second->first_seq_id) continue;
    auto& prompt = it->second->output.prompt_logprobs;
    prompt.assign(1, std::nullopt);  // the first prompt token has none
    for (PositionLogprobs& p : l.logprobs) prompt.emplace_back(std::move(p));
  }
  // A sequence that is not known any more belongs to a request already answered (aborted or
  // failed).
  for (const SeqToken& t : out.tokens) {
    const auto it = by_seq_.find(t.seq_id);
    if (it == by_seq_.end()) continue;
    Open& r = *it->second;
    apply(r, t.seq_id - r.first_seq_id, t.token, nullptr, events);
  }
  for (SeqUpdate& u : out.updates) {
    const auto it = by_seq_.find(u.seq_id);
    if (it == by_seq_.end()) continue;
    Open& r = *it->second;
    if (u.error.empty()) {
      apply(r, u.seq_id - r.first_seq_id, u.token, &u, events);
      continue;
    }
    const std::string id = r.output.request_id;
    close(r, FinishReason::abort, true);
    requests_.erase(id);
    events.failed(id, u.error, /*refused=*/false);
  }
}

void RequestTable::abort_all(RequestEvents& events) {
  for (auto& [id, r] : requests_) {
    for (std::size_t i = 0; i < r.output.outputs.size(); ++i) {
      CompletionOutput& c = r.output.outputs[i];
      if (c.finish_reason != FinishReason::none) continue;
      c.finish_reason = FinishReason::abort;
      RequestDelta last;  // a stream ends with a finished delta, as every completion's does
      if (!r.text.empty()) last.text = r.text[i]->finish();
      c.text += last.text;
      if (!r.streams) continue;
      last.request_id = id;
      last.index = static_cast<std::int32_t>(i);
      last.finished = true;
      events.delta(std::move(last));
    }
    r.output.finished = true;
    close(r, FinishReason::abort, false);
    events.answered(std::move(r.output));
  }
  requests_.clear();
  by_seq_.clear();
}

bool RequestTable::is_open(const std::string& request_id) const {
  return requests_.count(request_id) != 0;
}

const RequestOutput* RequestTable::output(const std::string& request_id) const {
  const auto it = requests_.find(request_id);
  return it == requests_.end() ? nullptr : &it->second.output;
}

std::vector<std::string> RequestTable::open_ids() const {
  std::vector<std::string> ids;
  ids.reserve(requests_.size());
  for (const auto& [id, r] : requests_) ids.push_back(id);
  return ids;
}

}  // namespace minivllm
