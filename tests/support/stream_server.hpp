#pragma once
// A server with every stream test handler (stream_handlers.hpp) over TCP, a Unix socket or
// TLS, and clients connected to it over the same transport.
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unistd.h>
#include <utility>

#include <corvid/corvid.hpp>

#include "connect.hpp"
#include "stream_handlers.hpp"
#include "test_certs.hpp"

namespace corvid::test {

enum class transport { tcp, unix_socket, tls };

inline const corvid::test::test_certs& stream_certs() {
  static const corvid::test::test_certs c;
  return c;
}

class stream_server {
 public:
  explicit stream_server(transport t = transport::tcp, corvid::server_config cfg = config())
      : transport_(t) {
    if (t == transport::unix_socket) {
      path_ = (std::filesystem::temp_directory_path() /
               ("corvid-stream-" + std::to_string(::getpid()) + ".sock"))
                  .string();
      std::filesystem::remove(path_);
      cfg.address = "unix:" + path_;
    }
    server_ = std::make_unique<corvid::rpc_server>(std::move(cfg));
    corvid_test::streams::register_all(*server_);
    if (t == transport::tls) {
      auto e = server_->init_tls({.certificate_chain_file = stream_certs().server_cert,
                                  .private_key_file = stream_certs().server_key});
      if (e) throw std::runtime_error(e.message());
    }
    if (auto e = server_->async_start()) throw std::runtime_error(e.message());
  }
  static corvid::server_config config() {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = 2;
    return c;
  }
  std::string endpoint() const {
    if (transport_ == transport::unix_socket) return "unix:" + path_;
    return (transport_ == transport::tls ? "localhost:" : "127.0.0.1:") +
           std::to_string(server_->port());
  }
  // A client connected over this server's transport.
  std::unique_ptr<corvid::rpc_client> connect(corvid::client_config cfg = {}) const {
    auto c = std::make_unique<corvid::rpc_client>(cfg);
    if (transport_ == transport::tls) {
      if (auto e = c->init_tls({.ca_file = stream_certs().ca}))
        throw std::runtime_error(e.message());
    }
    if (auto e = corvid::sync_wait(corvid::test::connect(*c, endpoint())))
      throw std::runtime_error(e.message());
    return c;
  }
  corvid::rpc_server& server() { return *server_; }

 private:
  transport transport_;
  std::string path_;
  std::unique_ptr<corvid::rpc_server> server_;
};

// The stream client.stream<f>() or open_stream<f>() opened (they do not wait for the server).
template <class Open>
auto opened(Open open) {
  using result = std::remove_cvref_t<decltype(std::declval<Open&>().await_resume())>;
  auto r = corvid::sync_wait([](Open o) -> corvid::task<result> {
    co_return co_await std::move(o);
  }(std::move(open)));
  if (!r) throw std::runtime_error(r.error().message());
  return std::move(*r);
}

}  // namespace corvid::test
