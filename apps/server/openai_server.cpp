#include "server/openai_server.hpp"

#include <chrono>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include <minivllm/error.hpp>

#include "actors/json_reader.hpp"
#include "log/log.hpp"
#include "server/chat_page.hpp"
#include "server/openai_response.hpp"
#include "server/prometheus.hpp"
#include "tokenizer/tokenizer.hpp"

namespace minivllm::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct OpenAiServer::Shared {
  Shared(ServerSettings settings, EngineClient engine, std::shared_ptr<const Tokenizer> tokenizer,
         std::function<std::map<int, std::uint64_t>()> http_statuses)
      : settings(std::move(settings)),
        engine(std::move(engine)),
        tokenizer(std::move(tokenizer)),
        http_statuses(std::move(http_statuses)) {}

  ServerSettings settings;
  EngineClient engine;
  std::shared_ptr<const Tokenizer> tokenizer;
  std::function<std::map<int, std::uint64_t>()> http_statuses;
  std::atomic<std::size_t> in_flight{0};
  std::mutex id_mutex;
  std::mt19937_64 ids{std::random_device{}()};

  std::string new_id(const char* prefix) {
    std::lock_guard lock(id_mutex);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%s%016llx", prefix, static_cast<unsigned long long>(ids()));
    return buf;
  }
};

namespace {

void send_json(Exchange& ex, int status, const json& body) {
  ex.respond({status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace), {}});
}

void send_error(Exchange& ex, const ApiError& e) {
  ex.respond({e.status, "application/json", error_body(e), {}});
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// One generate request over HTTP: its prompts' engine requests, and the answer as their
// outputs come (streamed as events, or whole at the end).
class Generation : public std::enable_shared_from_this<Generation> {
 public:
  Generation(std::shared_ptr<OpenAiServer::Shared> shared, ApiRequest request,
             std::shared_ptr<Exchange> exchange)
      : shared_(std::move(shared)), req_(std::move(request)), exchange_(std::move(exchange)) {
    head_.api = req_.api;
    head_.id = shared_->new_id(req_.api == Api::chat ? "chatcmpl-" : "cmpl-");
    head_.created = unix_now();
    head_.model = shared_->settings.model_name;
    n_ = req_.prompts.front().params.n;
    prompts_.resize(req_.prompts.size());
    choices_.resize(req_.prompts.size() * static_cast<std::size_t>(n_));
  }

  void start() {
    remaining_ = prompts_.size();
    for (std::size_t i = 0; i < req_.prompts.size(); ++i) {
      GenerateRequest& g = req_.prompts[i];
      g.request_id = head_.id + (req_.prompts.size() > 1 ? "-" + std::to_string(i) : "");
      prompts_[i].request_id = g.request_id;
      if (req_.echo) prompts_[i].echo = g.prompt_token_ids.empty() ? g.prompt : decode(g.prompt_token_ids);
    }
    auto self = shared_from_this();
    exchange_->on_disconnect([self] { self->abort_all("the client disconnected"); });
    for (std::size_t i = 0; i < req_.prompts.size(); ++i) {
      RequestCallbacks cb;
      cb.delta = [self, i](RequestDelta& d) { self->on_delta(i, d); };
      cb.done = [self, i](RequestOutput& out) { self->on_done(i, out); };
      cb.failed = [self, i](const EngineFailure& f) { self->on_failed(i, f); };
      shared_->engine.submit(std::move(req_.prompts[i]), std::move(cb));
    }
  }

 private:
  struct PromptState {
    std::string request_id;
    std::string echo;
    bool done = false;
    RequestOutput output;
  };
  struct ChoiceState {
    bool started = false;  // its first chunk went out (chat: the role)
    std::size_t text_offset = 0;
  };

  std::string decode(const std::vector<std::int32_t>& ids) const {
    try {
      return shared_->tokenizer->decode(ids, false);
    } catch (const Error&) {
      return "";
    }
  }

  void abort_all(const char* why) {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    client_gone_ = true;
    log_line(LogLevel::info, head_.id + ": aborted, " + why);
    for (const PromptState& p : prompts_)
      if (!p.done) shared_->engine.abort(p.request_id);
  }

  void begin_stream() {
    if (streaming_) return;
    streaming_ = true;
    exchange_->start_stream(200, "text/event-stream");
  }

  void on_delta(std::size_t prompt, RequestDelta& d) {
    std::lock_guard lock(mutex_);
    if (failed_) return;
    if (!first_token_) first_token_ = seconds_since(arrival_);
    if (!req_.stream) return;
    begin_stream();
    const int index = static_cast<int>(prompt) * n_ + d.index;
    ChoiceState& choice = choices_[static_cast<std::size_t>(index)];
    std::string text = std::move(d.text);
    std::string events;
    if (!choice.started) {
      choice.started = true;
      if (req_.api == Api::chat) {
        events += sse(chunk_json(head_, json::array({chunk_choice(Api::chat, index, "", nullptr, nullptr, true)})));
      } else if (req_.echo) {
        text = prompts_[prompt].echo + text;
      }
    }
    json logprobs = nullptr;
    if (req_.logprobs)
      logprobs = logprobs_json(req_.api, *shared_->tokenizer, d.logprobs, choice.text_offset);
    // A chunk per step that brought tokens, even one whose text is not settled yet (the start
    // of a UTF-8 character): clients count chunks as tokens arriving.
    if (!text.empty() || !d.token_ids.empty() || !logprobs.is_null())
      events += sse(chunk_json(head_, json::array({chunk_choice(req_.api, index, text, std::move(logprobs), nullptr)})));
    if (!events.empty()) exchange_->write(std::move(events));
  }

  void on_done(std::size_t prompt, RequestOutput& out) {
    std::lock_guard lock(mutex_);
    PromptState& p = prompts_[prompt];
    p.done = true;
    p.output = std::move(out);
    if (!failed_ && req_.stream) {
      begin_stream();
      std::string events;
      for (const CompletionOutput& c : p.output.outputs) {
        const int index = static_cast<int>(prompt) * n_ + c.index;
        std::string text;
        if (!choices_[static_cast<std::size_t>(index)].started && req_.api == Api::completions && req_.echo)
          text = p.echo;
        events += sse(chunk_json(head_, json::array({chunk_choice(req_.api, index, text, nullptr, &c)})));
      }
      exchange_->write(std::move(events));
    }
    end_one();
  }

  void on_failed(std::size_t prompt, const EngineFailure& f) {
    std::lock_guard lock(mutex_);
    prompts_[prompt].done = true;
    if (!failed_) {
      failed_ = true;
      const ApiError e(f.status(), f.message);
      log_line(LogLevel::info, head_.id + ": " + (f.refused ? "refused: " : "failed: ") + f.message);
      for (const PromptState& other : prompts_)
        if (!other.done) shared_->engine.abort(other.request_id);
      if (streaming_) {
        exchange_->write("data: " + error_body(e) + "\n\n");
      } else {
        send_error(*exchange_, e);
      }
    }
    end_one();
  }

  // After each prompt's end: the answer's end once all are in.
  void end_one() {
    if (--remaining_ != 0) return;
    ended_ = true;
    shared_->in_flight -= prompts_.size();
    Usage usage;
    for (const PromptState& p : prompts_) {
      usage.prompt_tokens += p.output.prompt_token_ids.size();
      usage.cached_tokens += static_cast<std::size_t>(p.output.num_cached_tokens);
      for (const CompletionOutput& c : p.output.outputs) usage.completion_tokens += c.token_ids.size();
    }
    log_finished(usage);
    if (streaming_) {
      if (req_.include_usage && !failed_) {
        json chunk = chunk_json(head_, json::array());
        chunk["usage"] = usage_json(usage);
        exchange_->write(sse(chunk));
      }
      exchange_->write("data: [DONE]\n\n");
      exchange_->finish();
      return;
    }
    if (failed_) return;
    json choices = json::array();
    for (std::size_t i = 0; i < prompts_.size(); ++i)
      for (const CompletionOutput& c : prompts_[i].output.outputs) {
        const int index = static_cast<int>(i) * n_ + c.index;
        std::size_t offset = 0;
        json logprobs = req_.logprobs ? logprobs_json(req_.api, *shared_->tokenizer, c.logprobs, offset)
                                      : json(nullptr);
        choices.push_back(whole_choice(req_.api, index, prompts_[i].echo + c.text, std::move(logprobs), c));
      }
    send_json(*exchange_, 200, whole_json(head_, std::move(choices), usage));
  }

  void log_finished(const Usage& usage) {
    std::string reasons;
    for (const PromptState& p : prompts_)
      for (const CompletionOutput& c : p.output.outputs) {
        const char* r = finish_reason_name(c.finish_reason);
        reasons += std::string(reasons.empty() ? "" : ",") + (*r ? r : "none");
      }
    log_line(LogLevel::info,
             log_format("%s: finished (%s), %zu prompt tokens (%zu cached), %zu completion tokens, "
                        "TTFT %.1f ms, e2e %.1f ms%s",
                        head_.id.c_str(), failed_ ? "error" : reasons.c_str(), usage.prompt_tokens,
                        usage.cached_tokens, usage.completion_tokens,
                        first_token_.value_or(0.0) * 1e3, seconds_since(arrival_) * 1e3,
                        client_gone_ ? ", client gone" : ""));
  }

  std::shared_ptr<OpenAiServer::Shared> shared_;
  ApiRequest req_;
  std::shared_ptr<Exchange> exchange_;
  ResponseHead head_;
  int n_ = 1;
  Clock::time_point arrival_ = Clock::now();
  std::mutex mutex_;
  std::vector<PromptState> prompts_;
  std::vector<ChoiceState> choices_;
  std::size_t remaining_ = 0;
  std::optional<double> first_token_;
  bool streaming_ = false;
  bool failed_ = false;
  bool ended_ = false;
  bool client_gone_ = false;
};

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

void check_model(const ServerSettings& s, const std::string& model) {
  if (!model.empty() && model != s.model_name)
    throw ApiError(404, "The model `" + model + "` does not exist.", "model");
}

// POST /tokenize's body as the request whose prompt the engine would make.
GenerateRequest tokenize_request(const ServerSettings& s, const json& object) {
  const JsonReader r("request");
  GenerateRequest g;
  bool has_prompt = false;
  for (const auto& [key, value] : object.items()) {
    if (key == "model") check_model(s, r.string(key, value));
    else if (key == "prompt") {
      g.prompt = r.string(key, value);
      has_prompt = true;
    } else if (key == "messages") {
      g.messages = r.messages(key, value);
      has_prompt = true;
    } else if (key == "add_special_tokens") g.add_special_tokens = r.boolean(key, value);
    else if (key == "add_generation_prompt") g.chat_options.add_generation_prompt = r.boolean(key, value);
    else r.fail(key, "unknown (known: model, prompt, messages, add_special_tokens, add_generation_prompt)");
  }
  if (!has_prompt || (g.prompt.empty() && g.messages.empty()))
    throw ApiError(400, "a \"prompt\" or \"messages\" is required", "prompt");
  return g;
}

}  // namespace

OpenAiServer::OpenAiServer(ServerSettings settings, EngineClient engine,
                           std::shared_ptr<const Tokenizer> tokenizer,
                           std::function<std::map<int, std::uint64_t>()> http_statuses)
    : shared_(std::make_shared<Shared>(std::move(settings), std::move(engine), std::move(tokenizer),
                                       std::move(http_statuses))) {}

OpenAiServer::~OpenAiServer() = default;

void OpenAiServer::handle(HttpRequest request, std::shared_ptr<Exchange> exchange) {
  const ServerSettings& s = shared_->settings;
  const std::string path = request.path();
  const bool get = request.method == "GET", post = request.method == "POST";
  try {
    if (path == "/health" && get) return exchange->respond({200, "text/plain", "", {}});
    if (!s.api_key.empty() && !constant_time_equal(request.header("Authorization"), "Bearer " + s.api_key))
      throw ApiError(401, "a valid API key is required: Authorization: Bearer KEY");
    if (post && !request.body.empty()) {
      const std::string type = request.header("Content-Type");
      if (!type.empty() && type.rfind("application/json", 0) != 0)
        throw ApiError(400, "Content-Type must be application/json, got " + type);
    }
    if ((path == "/v1/completions" || path == "/v1/chat/completions") && post) {
      ApiRequest req = path == "/v1/completions" ? parse_completion_request(request.body, s.limits)
                                                 : parse_chat_request(request.body, s.limits);
      check_model(s, req.model);
      const std::size_t count = req.prompts.size();
      if (shared_->in_flight.fetch_add(count) + count > s.max_in_flight) {
        shared_->in_flight -= count;
        throw ApiError(503, "the server is busy: " + std::to_string(s.max_in_flight) +
                                " prompts are running or waiting (server.max_waiting)");
      }
      std::make_shared<Generation>(shared_, std::move(req), std::move(exchange))->start();
      return;
    }
    if (path == "/v1/models" && get) {
      json model = {{"id", s.model_name},
                    {"object", "model"},
                    {"created", unix_now()},
                    {"owned_by", "minivllm"},
                    {"max_model_len", s.limits.max_model_len}};
      return send_json(*exchange, 200, {{"object", "list"}, {"data", json::array({model})}});
    }
    if (path == "/version" && get) return send_json(*exchange, 200, {{"version", "0.1.0"}, {"device", s.device}});
    if (path == "/metrics" && get) {
      auto shared = shared_;
      shared_->engine.stats(
          [shared, exchange](EngineStats& stats) {
            exchange->respond({200, "text/plain; version=0.0.4; charset=utf-8",
                               prometheus_text(stats, shared->settings.model_name, shared->http_statuses()),
                               {}});
          },
          [exchange](const EngineFailure& f) { send_error(*exchange, ApiError(500, f.message)); });
      return;
    }
    if (path == "/tokenize" && post) {
      GenerateRequest g = tokenize_request(s, parse_json_object(request.body));
      const int max_model_len = s.limits.max_model_len;
      shared_->engine.tokenize(
          std::move(g),
          [exchange, max_model_len](std::vector<std::int32_t>& ids) {
            send_json(*exchange, 200, {{"count", ids.size()}, {"max_model_len", max_model_len},
                                       {"tokens", ids}, {"token_strs", nullptr}});
          },
          [exchange](const EngineFailure& f) {
            send_error(*exchange, ApiError(f.status(), f.message));
          });
      return;
    }
    if (path == "/detokenize" && post) {
      const json object = parse_json_object(request.body);
      const JsonReader r("request");
      std::vector<std::int32_t> ids;
      bool has_tokens = false;
      for (const auto& [key, value] : object.items()) {
        if (key == "model") check_model(s, r.string(key, value));
        else if (key == "tokens") {
          ids = r.token_ids(key, value);
          has_tokens = true;
        } else r.fail(key, "unknown (known: model, tokens)");
      }
      if (!has_tokens) throw ApiError(400, "\"tokens\" is required", "tokens");
      std::string text;
      try {
        text = shared_->tokenizer->decode(ids, false);
      } catch (const Error& e) {
        throw ApiError(400, e.what(), "tokens");
      }
      return send_json(*exchange, 200, {{"prompt", text}});
    }
    if (path == "/" && get) return exchange->respond({200, "text/html; charset=utf-8", chat_page_html(), {}});
    const bool known = path == "/health" || path == "/v1/completions" || path == "/v1/chat/completions" ||
                       path == "/v1/models" || path == "/version" || path == "/metrics" ||
                       path == "/tokenize" || path == "/detokenize" || path == "/";
    if (known) throw ApiError(405, "method " + request.method + " is not allowed on " + path);
    throw ApiError(404, "no such path: " + path);
  } catch (const FieldError& e) {
    send_error(*exchange, ApiError(400, e.what(), e.field));
  } catch (const ApiError& e) {
    send_error(*exchange, e);
  }
}

}  // namespace minivllm::server
