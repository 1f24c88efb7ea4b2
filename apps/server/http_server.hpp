#pragma once
// The HTTP/1.1 layer under `minivllm serve`: Boost.Beast on asio (Debian's Boost 1.74). Chosen
// over cpp-httplib 0.11 because Beast bounds what this server must bound: the header's total
// bytes (parser header_limit), the body (body_limit), and the whole time a client may take to
// send its request (tcp_stream expiry), where cpp-httplib bounds only each header line, not
// their count, and times each read, not the request; and because asio serves every connection
// from two threads, so slow clients hold no thread. Beast stays inside http_server.cpp.
//
// Each request goes to the handler with an Exchange, through which the answer is sent whole or
// streamed (chunked transfer encoding), from any thread.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace minivllm::server {

struct HttpLimits {
  std::uint64_t max_body_bytes = 8 << 20;
  std::uint32_t max_header_bytes = 16 << 10;  // request line and header fields together
  std::size_t max_headers = 100;
  int header_timeout_s = 10;  // to send the whole request
};

struct HttpRequest {
  std::string method;  // "GET"
  std::string target;  // "/v1/models?x=1"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  std::string path() const;  // the target without its query
  // The first header of that name (case-insensitive), "" when absent.
  std::string header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// One request's answer. Thread-safe; calls after the answer ended (or the client left) do
// nothing.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void respond(HttpResponse response) = 0;
  // A streamed answer: the status line and headers, then each write as one chunk, then finish.
  virtual void start_stream(int status, std::string content_type) = 0;
  virtual void write(std::string data) = 0;
  virtual void finish() = 0;
  // Called once, on a server thread, if the client goes away before the answer ends.
  virtual void on_disconnect(std::function<void()> callback) = 0;
};

using HttpHandler = std::function<void(HttpRequest request, std::shared_ptr<Exchange> exchange)>;

class HttpServer {
 public:
  // Binds and listens on host:port (port 0: a free one); throws minivllm::Error naming the
  // address when it cannot. Serves nothing until run().
  HttpServer(const std::string& host, std::uint16_t port, HttpLimits limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::uint16_t port() const;
  // Serves on `threads` threads until stop(); returns when they are done.
  void run(int threads);
  // Calls `handler` (once, on a server thread) on SIGINT or SIGTERM.
  void on_signal(std::function<void(int)> handler);
  void stop_accepting();
  void stop();
  // Answers sent, by status code (the limits' refusals too).
  std::map<int, std::uint64_t> status_counts() const;
  // Exchanges whose answer has not ended yet.
  std::size_t open_exchanges() const;

  struct Impl;  // public for the connections in http_server.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace minivllm::server
