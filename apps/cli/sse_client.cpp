#include "cli/sse_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <minivllm/error.hpp>

namespace minivllm::cli {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

HttpTarget parse_base_url(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) throw Error("--base-url " + url + ": expected http://HOST:PORT");
  std::string rest = url.substr(scheme.size());
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size() ||
      rest.find('/') != std::string::npos)
    throw Error("--base-url " + url + ": expected http://HOST:PORT");
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

namespace {

struct Connection {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};

  explicit Connection(const HttpTarget& t) {
    beast::error_code ec;
    tcp::resolver resolver(ioc);
    const auto endpoints = resolver.resolve(t.host, t.port, ec);
    if (!ec) stream.connect(endpoints, ec);
    if (ec) throw Error("cannot connect to " + t.host + ":" + t.port + ": " + ec.message());
  }
  ~Connection() {
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
};

http::request<http::string_body> make_request(http::verb verb, const HttpTarget& t,
                                              const std::string& path, const std::string& api_key) {
  http::request<http::string_body> req{verb, path, 11};
  req.set(http::field::host, t.host + ":" + t.port);
  req.set(http::field::user_agent, "minivllm-bench");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  return req;
}

[[noreturn]] void broken(const std::string& path, const beast::error_code& ec) {
  throw Error(path + ": " + ec.message());
}

}  // namespace

HttpAnswer http_get(const HttpTarget& target, const std::string& path, const std::string& api_key) {
  Connection c(target);
  auto req = make_request(http::verb::get, target, path, api_key);
  beast::error_code ec;
  http::write(c.stream, req, ec);
  if (ec) broken(path, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(c.stream, buffer, res, ec);
  if (ec) broken(path, ec);
  return {static_cast<int>(res.result_int()), std::move(res.body())};
}

HttpAnswer http_post_events(const HttpTarget& target, const std::string& path,
                            const std::string& body, const std::string& api_key,
                            const std::function<void(std::string_view)>& on_event) {
  Connection c(target);
  auto req = make_request(http::verb::post, target, path, api_key);
  req.set(http::field::content_type, "application/json");
  req.body() = body;
  req.prepare_payload();
  beast::error_code ec;
  http::write(c.stream, req, ec);
  if (ec) broken(path, ec);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  http::read_header(c.stream, buffer, parser, ec);
  if (ec) broken(path, ec);
  HttpAnswer answer;
  answer.status = static_cast<int>(parser.get().result_int());
  std::string pending;
  char data[16384];
  while (!parser.is_done()) {
    parser.get().body().data = data;
    parser.get().body().size = sizeof data;
    http::read_some(c.stream, buffer, parser, ec);  // returns with what came, not a full buffer
    if (ec == http::error::need_buffer) ec = {};
    if (ec) broken(path, ec);
    pending.append(data, sizeof data - parser.get().body().size);
    if (answer.status != 200) continue;
    std::size_t cut;
    while ((cut = pending.find("\n\n")) != std::string::npos) {
      const std::string_view event(pending.data(), cut);
      if (event.rfind("data: ", 0) == 0) on_event(event.substr(6));
      else answer.body.append(event);
      pending.erase(0, cut + 2);
    }
  }
  answer.body += pending;
  return answer;
}

}  // namespace minivllm::cli
