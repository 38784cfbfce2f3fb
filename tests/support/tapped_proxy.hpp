#pragma once
// A loopback TCP proxy that forwards each connection it accepts to a target port and keeps a
// copy of every byte it forwarded, both ways: what an eavesdropper on the wire would see.
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace corvid::test {

class tapped_proxy {
 public:
  explicit tapped_proxy(std::uint16_t target) : target_(target) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = loopback(0);
    if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listener_, 16) != 0) {
      throw std::runtime_error("tapped_proxy: cannot listen on loopback");
    }
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  tapped_proxy(const tapped_proxy&) = delete;
  tapped_proxy& operator=(const tapped_proxy&) = delete;
  ~tapped_proxy() {
    ::shutdown(listener_, SHUT_RDWR);  // wakes the blocking accept (close alone does not)
    acceptor_.join();
    {
      std::lock_guard lk(mutex_);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);  // ends the pumps' blocking reads
    }
    for (auto& t : pumps_) t.join();
    for (int fd : fds_) ::close(fd);
    ::close(listener_);
  }

  std::uint16_t port() const { return port_; }
  // Every byte forwarded so far, in either direction.
  std::string seen() const {
    std::lock_guard lk(mutex_);
    return seen_;
  }

 private:
  static sockaddr_in loopback(std::uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
  }

  void accept_loop() {
    for (;;) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a = loopback(target_);
      if (server < 0 || ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(client);
        if (server >= 0) ::close(server);
        continue;
      }
      std::lock_guard lk(mutex_);
      fds_.push_back(client);
      fds_.push_back(server);
      pumps_.emplace_back([this, client, server] { pump(client, server); });
      pumps_.emplace_back([this, client, server] { pump(server, client); });
    }
  }

  // Copies `from` to `to` until `from` ends, then passes the end on.
  void pump(int from, int to) {
    char buf[16384];
    for (;;) {
      const ssize_t n = ::recv(from, buf, sizeof buf, 0);
      if (n <= 0) break;
      {
        std::lock_guard lk(mutex_);
        seen_.append(buf, static_cast<std::size_t>(n));
      }
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = ::send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) return;
        off += w;
      }
    }
    ::shutdown(to, SHUT_WR);
  }

  std::uint16_t target_;
  std::uint16_t port_ = 0;
  int listener_ = -1;
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::string seen_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
};

}  // namespace corvid::test
