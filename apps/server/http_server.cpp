#include "server/http_server.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <minivllm/error.hpp>

namespace minivllm::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string error_json(std::string_view message, int status) {
  // Plain text with no quotes or backslashes: the limits' own messages only.
  return std::string(R"({"error": {"message": ")") + std::string(message) +
         R"(", "type": "invalid_request_error", "param": null, "code": )" + std::to_string(status) +
         "}}";
}

}  // namespace

std::string HttpRequest::path() const { return target.substr(0, target.find('?')); }

std::string HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (iequals(k, name)) return v;
  return "";
}

// Connections and handlers point to it plainly: it outlives them, as its io_context destroys
// every pending handler (and the connections they hold) when it goes.
struct HttpServer::Impl {
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::signal_set signals{ioc};
  HttpLimits limits;
  HttpHandler handler;
  mutable std::mutex mutex;
  std::map<int, std::uint64_t> statuses;
  std::atomic<std::size_t> open{0};

  void count(int status) {
    std::lock_guard lock(mutex);
    ++statuses[status];
  }
  void accept();
};

namespace {

// One connection: reads requests one after another, hands each to the handler, writes its
// answer. Everything runs on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl* server)
      : stream_(std::move(socket)), server_(server), deadline_(stream_.get_executor()) {}

  void start() { read_request(); }

  // The exchange's calls, posted onto the strand.
  void respond(std::uint64_t serial, HttpResponse r) {
    post(serial, [self = shared_from_this(), r = std::move(r)]() mutable { self->send_whole(std::move(r)); });
  }
  void start_stream(std::uint64_t serial, int status, std::string content_type) {
    post(serial, [self = shared_from_this(), status, ct = std::move(content_type)]() mutable {
      self->send_stream_header(status, std::move(ct));
    });
  }
  void write(std::uint64_t serial, std::string data) {
    post(serial, [self = shared_from_this(), d = std::move(data)]() mutable {
      if (self->state_ != State::streaming || d.empty()) return;
      self->chunks_.push_back(std::move(d));
      self->pump();
    });
  }
  void finish(std::uint64_t serial) {
    post(serial, [self = shared_from_this()] {
      if (self->state_ != State::streaming) return;
      self->last_chunk_ = true;
      self->pump();
    });
  }
  void on_disconnect(std::uint64_t serial, std::function<void()> cb) {
    post_any(serial, [self = shared_from_this(), cb = std::move(cb)]() mutable {
      if (self->state_ == State::gone) {
        cb();
        return;
      }
      if (!self->answered_) self->on_disconnect_ = std::move(cb);
    });
  }

 private:
  enum class State { reading, handling, streaming, writing, gone };

  // Runs f on the strand if the exchange `serial` is still the current one and not answered.
  template <class F>
  void post(std::uint64_t serial, F f) {
    net::post(stream_.get_executor(), [self = shared_from_this(), serial, f = std::move(f)]() mutable {
      if (serial != self->serial_ || self->answered_) return;
      f();
    });
  }
  // The same, answered or not.
  template <class F>
  void post_any(std::uint64_t serial, F f) {
    net::post(stream_.get_executor(), [self = shared_from_this(), serial, f = std::move(f)]() mutable {
      if (serial == self->serial_) f();
    });
  }

  void read_request() {
    state_ = State::reading;
    parser_.emplace();
    parser_->header_limit(server_->limits.max_header_bytes);
    parser_->body_limit(server_->limits.max_body_bytes);
    // The whole request within the timeout. A timer of our own, not the stream's expiry
    // (which closes the socket before the 408 could be sent).
    timed_out_ = false;
    deadline_.expires_after(std::chrono::seconds(server_->limits.header_timeout_s));
    deadline_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->state_ != State::reading) return;
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    deadline_.cancel();
    if (timed_out_) return refuse(408, "the request took longer than server.header_timeout_s to arrive");
    if (ec == http::error::end_of_stream || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted) {
      return close();
    }
    if (ec == http::error::body_limit)
      return refuse(413, "the request body is over the limit of " +
                             std::to_string(server_->limits.max_body_bytes) + " bytes");
    if (ec == http::error::header_limit)
      return refuse(431, "the request headers are over the limit of " +
                             std::to_string(server_->limits.max_header_bytes) + " bytes");
    if (ec) return refuse(400, "malformed HTTP request: " + ec.message());
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    HttpRequest r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    for (const auto& field : req) {
      if (r.headers.size() == server_->limits.max_headers)
        return refuse(431, "the request has more than " +
                               std::to_string(server_->limits.max_headers) + " header fields");
      r.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    r.body = std::move(req.body());
    state_ = State::handling;
    answered_ = false;
    ++serial_;
    ++server_->open;
    watch();
    server_->handler(std::move(r), make_exchange());
  }

  // While the answer is pending: a read that ends when the client goes away. Bytes the client
  // sends meanwhile stay in the buffer for the next request (up to the limits).
  void watch() {
    if (watching_) return;
    const std::size_t room = server_->limits.max_header_bytes + server_->limits.max_body_bytes;
    if (buffer_.size() >= room) return;
    watching_ = true;
    stream_.async_read_some(buffer_.prepare(std::min<std::size_t>(4096, room - buffer_.size())),
                            [self = shared_from_this()](beast::error_code ec, std::size_t n) {
                              self->watching_ = false;
                              self->buffer_.commit(n);
                              if (self->state_ == State::gone) return;
                              if (ec == net::error::operation_aborted && self->answered_) {
                                // Cancelled because the answer ended: on to the next request.
                                return self->next();
                              }
                              if (ec) return self->lost();
                              if (!self->answered_) self->watch();
                              else self->next();
                            });
  }

  void lost() {
    if (!answered_) end_exchange();
    state_ = State::gone;
    if (on_disconnect_) std::exchange(on_disconnect_, nullptr)();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  std::shared_ptr<Exchange> make_exchange();

  void end_exchange() {
    if (answered_) return;
    answered_ = true;
    --server_->open;
  }

  void send_whole(HttpResponse r) {
    if (state_ != State::handling) return;
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(r.status), version_);
    res->set(http::field::server, "minivllm");
    res->set(http::field::content_type, r.content_type);
    for (auto& [k, v] : r.headers) res->set(k, v);
    res->keep_alive(keep_alive_);
    res->body() = std::move(r.body);
    res->prepare_payload();
    server_->count(r.status);
    state_ = State::writing;
    on_disconnect_ = nullptr;
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, std::size_t) {
                        self->done_writing(ec);
                      });
  }

  void send_stream_header(int status, std::string content_type) {
    if (state_ != State::handling) return;
    stream_response_.emplace(static_cast<http::status>(status), version_);
    stream_response_->set(http::field::server, "minivllm");
    stream_response_->set(http::field::content_type, content_type);
    stream_response_->set(http::field::cache_control, "no-cache");
    stream_response_->keep_alive(keep_alive_);
    stream_response_->chunked(true);
    serializer_.emplace(*stream_response_);
    server_->count(status);
    state_ = State::streaming;
    writing_chunk_ = true;
    http::async_write_header(stream_, *serializer_,
                             [self = shared_from_this()](beast::error_code ec, std::size_t) {
                               self->chunk_written(ec, false);
                             });
  }

  // Writes the next queued chunk (or the last one) when no write is in flight.
  void pump() {
    if (writing_chunk_ || state_ != State::streaming) return;
    if (!chunks_.empty()) {
      writing_chunk_ = true;
      current_ = std::move(chunks_.front());
      chunks_.pop_front();
      net::async_write(stream_, http::make_chunk(net::buffer(current_)),
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         self->chunk_written(ec, false);
                       });
    } else if (last_chunk_) {
      writing_chunk_ = true;
      net::async_write(stream_, http::make_chunk_last(),
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         self->chunk_written(ec, true);
                       });
    }
  }

  void chunk_written(beast::error_code ec, bool last) {
    writing_chunk_ = false;
    if (state_ == State::gone) return;
    if (ec) return lost();
    if (!last) return pump();
    chunks_.clear();
    last_chunk_ = false;
    serializer_.reset();
    stream_response_.reset();
    on_disconnect_ = nullptr;
    state_ = State::writing;
    done_writing(ec);
  }

  void done_writing(beast::error_code ec) {
    if (state_ == State::gone) return;
    end_exchange();
    if (ec || !keep_alive_) return close();
    if (watching_) {
      stream_.socket().cancel();  // the watch's handler goes on to the next request
      return;
    }
    next();
  }

  void next() {
    if (state_ == State::gone || state_ == State::reading) return;
    read_request();
  }

  // Answers a request the limits refuse, then closes: what is left of it is not read.
  void refuse(int status, const std::string& message) {
    auto res = std::make_shared<http::response<http::string_body>>(static_cast<http::status>(status), 11);
    res->set(http::field::server, "minivllm");
    res->set(http::field::content_type, "application/json");
    res->keep_alive(false);
    res->body() = error_json(message, status);
    res->prepare_payload();
    server_->count(status);
    state_ = State::writing;
    stream_.expires_after(std::chrono::seconds(server_->limits.header_timeout_s));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code, std::size_t) {
      self->close();
    });
  }

  void close() {
    if (state_ != State::gone && !answered_ && state_ != State::reading) end_exchange();
    state_ = State::gone;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  HttpServer::Impl* server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  net::steady_timer deadline_;
  bool timed_out_ = false;
  State state_ = State::reading;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  std::uint64_t serial_ = 0;
  bool answered_ = true;
  bool watching_ = false;
  std::function<void()> on_disconnect_;
  std::optional<http::response<http::empty_body>> stream_response_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  std::deque<std::string> chunks_;
  std::string current_;
  bool writing_chunk_ = false;
  bool last_chunk_ = false;
};

class SessionExchange final : public Exchange {
 public:
  SessionExchange(std::shared_ptr<Session> session, std::uint64_t serial)
      : session_(std::move(session)), serial_(serial) {}
  void respond(HttpResponse response) override { session_->respond(serial_, std::move(response)); }
  void start_stream(int status, std::string content_type) override {
    session_->start_stream(serial_, status, std::move(content_type));
  }
  void write(std::string data) override { session_->write(serial_, std::move(data)); }
  void finish() override { session_->finish(serial_); }
  void on_disconnect(std::function<void()> callback) override {
    session_->on_disconnect(serial_, std::move(callback));
  }

 private:
  std::shared_ptr<Session> session_;
  std::uint64_t serial_;
};

std::shared_ptr<Exchange> Session::make_exchange() {
  return std::make_shared<SessionExchange>(shared_from_this(), serial_);
}

}  // namespace

void HttpServer::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), this)->start();
    accept();
  });
}

HttpServer::HttpServer(const std::string& host, std::uint16_t port, HttpLimits limits,
                       HttpHandler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
  const std::string where = host + ":" + std::to_string(port);
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(host, ec);
  if (ec) throw Error("--host " + host + ": not an IPv4 or IPv6 address");
  const tcp::endpoint endpoint(address, port);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("cannot listen on " + where + ": " + ec.message());
  impl_->accept();
}

HttpServer::~HttpServer() { stop(); }

std::uint16_t HttpServer::port() const {
  beast::error_code ec;
  const tcp::endpoint e = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : e.port();
}

void HttpServer::run(int threads) {
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (std::thread& t : pool) t.join();
}

void HttpServer::on_signal(std::function<void(int)> handler) {
  impl_->signals.add(SIGINT);
  impl_->signals.add(SIGTERM);
  impl_->signals.async_wait([handler = std::move(handler)](beast::error_code ec, int signal) {
    if (!ec) handler(signal);
  });
}

void HttpServer::stop_accepting() {
  net::post(impl_->ioc, [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
  });
}

void HttpServer::stop() { impl_->ioc.stop(); }

std::map<int, std::uint64_t> HttpServer::status_counts() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->statuses;
}

std::size_t HttpServer::open_exchanges() const { return impl_->open.load(); }

}  // namespace minivllm::server
