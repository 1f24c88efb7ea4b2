#pragma once
// A small HTTP/1.1 client for `bench serve` (Boost.Beast, blocking, one connection per call):
// GET a JSON document, or POST a body and read the server-sent events of the answer as they
// arrive.
#include <functional>
#include <string>
#include <string_view>

namespace minivllm::cli {

struct HttpTarget {
  std::string host;
  std::string port;
};

// "http://HOST:PORT" (a trailing "/" allowed); throws minivllm::Error for anything else.
HttpTarget parse_base_url(const std::string& url);

struct HttpAnswer {
  int status = 0;
  std::string body;  // the whole body, or (streams) what was not an event
};

// Throws minivllm::Error when the server cannot be reached or the connection breaks.
HttpAnswer http_get(const HttpTarget& target, const std::string& path, const std::string& api_key);

// `on_event` gets each event's data ("data: X\n\n" -> X) as it arrives on a 200 answer.
HttpAnswer http_post_events(const HttpTarget& target, const std::string& path,
                            const std::string& body, const std::string& api_key,
                            const std::function<void(std::string_view data)>& on_event);

}  // namespace minivllm::cli
