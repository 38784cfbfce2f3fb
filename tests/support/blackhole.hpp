#pragma once
// A listening socket whose accept queue is full: the kernel drops further SYNs, so a connect
// to it hangs as one to a host that went away does (until the connector's own timeout).
#include <cstdint>
#include <string>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

namespace corvid::test {

class blackhole {
 public:
  // port 0: any free one.
  explicit blackhole(std::uint16_t port = 0) : acceptor_(io_), filler_(io_) {
    acceptor_.open(asio::ip::tcp::v4());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind({asio::ip::make_address("127.0.0.1"), port});
    acceptor_.listen(0);
    filler_.connect(acceptor_.local_endpoint());  // the one place in its queue
  }
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket filler_;
};

}  // namespace corvid::test
