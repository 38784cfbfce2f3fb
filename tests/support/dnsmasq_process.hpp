#pragma once
// A real DNS server (Debian's dnsmasq) for one test, on 127.0.0.1 and an ephemeral UDP port,
// answering only from a hosts file the test writes; reload() makes it read the file again.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "child_process.hpp"
#include "free_port.hpp"
#include "slowdown.hpp"
#include <arpa/inet.h>

namespace corvid::test {

class dnsmasq_process {
 public:
  // `hosts`: lines of "address name".
  explicit dnsmasq_process(const std::string& hosts) {
    char dir[] = "/tmp/corvid-dns-XXXXXX";
    if (::mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = dir;
    write_hosts(hosts);
    // The port may be taken between choosing and binding it: choose again.
    for (int attempt = 0;; ++attempt) {
      if (start()) break;
      if (attempt == 4) throw std::runtime_error("dnsmasq did not start: " + process_->log());
    }
  }
  ~dnsmasq_process() {
    process_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  // What lb_config::dns_server takes.
  std::string server() const { return "127.0.0.1:" + std::to_string(port_); }
  // New hosts, read again on SIGHUP (dnsmasq re-reads --addn-hosts files then).
  void reload(const std::string& hosts) {
    write_hosts(hosts);
    process_->signal(SIGHUP);
  }
  std::string log() const { return process_->log(); }

 private:
  bool start() {
    port_ = free_udp_and_tcp_port();
    std::filesystem::remove(dir_ + "/pid");
    process_ = std::make_unique<child_process>(
        "/usr/sbin/dnsmasq",
        std::vector<std::string>{"--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv",
                                 "--no-hosts", "--addn-hosts=" + dir_ + "/hosts",
                                 "--listen-address=127.0.0.1", "--bind-interfaces",
                                 "--port=" + std::to_string(port_), "--user=root",
                                 "--pid-file=" + dir_ + "/pid", "--log-facility=-"},
        dir_ + "/dnsmasq.log");
    // Ready once the pid file is written (after the sockets are bound).
    const auto until = std::chrono::steady_clock::now() + patience(std::chrono::seconds(10));
    while (!std::filesystem::exists(dir_ + "/pid")) {
      if (!process_->running()) return false;
      if (std::chrono::steady_clock::now() > until) {
        throw std::runtime_error("dnsmasq did not start: " + process_->log());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
  }
  void write_hosts(const std::string& hosts) {
    std::ofstream(dir_ + "/hosts.tmp") << hosts;
    std::filesystem::rename(dir_ + "/hosts.tmp", dir_ + "/hosts");
  }
  std::string dir_;
  std::uint16_t port_ = 0;
  std::unique_ptr<child_process> process_;
};

}  // namespace corvid::test
