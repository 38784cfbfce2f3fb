#pragma once
// A TCP peer speaking raw frames, for the protocol tests: a client of a live rpc_server, or
// the fake server an rpc_client connects to. Every wait is bounded, so a protocol bug fails
// the test instead of hanging it.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <gtest/gtest.h>

#include "corvid/server/rpc_server.hpp"

#include "wire_util.hpp"

namespace corvid::protocol::test {

// A blocking-style TCP peer whose every wait is bounded, so a protocol bug fails the test
// instead of hanging it.
class raw_peer {
 public:
  void connect(std::uint16_t port) { socket_.connect({asio::ip::make_address("127.0.0.1"), port}); }
  void accept(asio::ip::tcp::acceptor& acceptor) {
    bool done = false;
    acceptor.async_accept(socket_, [&](const std::error_code& ec) { done = !ec; });
    run(acceptor);
    ASSERT_TRUE(done) << "no connection";
  }
  void send(std::string_view bytes) { asio::write(socket_, asio::buffer(bytes)); }
  // n bytes, or fewer if the peer closed or went quiet for 5 s.
  std::string read(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    asio::async_read(socket_, asio::buffer(out), [&](const std::error_code& ec, std::size_t k) {
      last_error_ = ec;
      got = k;
    });
    if (!run(socket_)) last_error_ = asio::error::timed_out;
    out.resize(got);
    return out;
  }
  // One whole frame, judged by its own header.
  std::string read_frame() {
    std::string f = read(header_size);
    frame_header h;
    if (f.size() < header_size || decode_header(f.data(), h, UINT32_MAX) != header_errc::ok) {
      return f;
    }
    return f + read(h.payload_size());
  }
  // True if the peer closed the connection (not merely went quiet) with nothing more to say.
  // A reset counts too: closing with unread bytes in the kernel buffer sends RST, not FIN.
  bool closed_by_peer() {
    return read(1).empty() &&
           (last_error_ == asio::error::eof || last_error_ == asio::error::connection_reset);
  }
  asio::io_context& io() { return io_; }

 private:
  // Runs the pending operation on `object`; false if it had to be aborted after 5 s.
  bool run(auto& object) {
    io_.restart();
    io_.run_for(std::chrono::seconds(5));
    if (io_.stopped()) return true;
    object.cancel();  // let the handler run, with operation_aborted
    io_.restart();
    io_.run();
    return false;
  }
  asio::io_context io_;
  asio::ip::tcp::socket socket_{io_};
  std::error_code last_error_;
};

// A live rpc_server on one reactor at 127.0.0.1 and a raw_peer for it: a test's SetUp
// registers its handlers on server_, then calls start().
class raw_server_test : public ::testing::Test {
 protected:
  static server_config one_reactor() {
    server_config c;
    c.address = "127.0.0.1";
    c.io_threads = 1;
    return c;
  }
  void start() {
    ASSERT_FALSE(server_.async_start());
    peer_.connect(server_.port());
  }

  rpc_server server_{one_reactor()};
  raw_peer peer_;
};

}  // namespace corvid::protocol::test
