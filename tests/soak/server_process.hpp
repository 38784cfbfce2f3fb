#pragma once
// A fault_node server run as a child process, so the soak can SIGKILL or SIGTERM it, start it
// again on the same port, and read its resident set size from /proc.
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>

#include "process_memory.hpp"
#include <sys/wait.h>

extern char** environ;

namespace corvid_soak {

class server_process {
 public:
  // `node`: the fault_node binary. Port 0 picks one on the first start; restarts reuse it.
  server_process(std::string node, std::string log_path)
      : node_(std::move(node)), log_(std::move(log_path)) {}
  ~server_process() { stop(SIGKILL); }
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  void start() {
    std::remove(log_.c_str());
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    // The soak blocks signals for its own sigwait; the server must start with none blocked
    // except what it blocks itself.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
    const std::string port = std::to_string(port_);
    char* argv[] = {node_.data(), const_cast<char*>("server"), const_cast<char*>("127.0.0.1"),
                    const_cast<char*>(port.c_str()), nullptr};
    const int rc = posix_spawn(&pid_, node_.c_str(), &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("cannot start " + node_);
    // Wait for "listening on <port>" (the bind can race a dying predecessor's socket).
    for (int i = 0; i < 1000; ++i) {
      std::ifstream in(log_);
      std::string word, on;
      unsigned p = 0;
      if (in >> word >> on >> p && word == "listening") {
        port_ = static_cast<std::uint16_t>(p);
        return;
      }
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        std::ifstream again(log_);
        std::stringstream ss;
        ss << again.rdbuf();
        throw std::runtime_error("fault_node server exited: " + ss.str());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("fault_node server did not start");
  }
  // Sends `sig` and reaps the process. Returns its wait status (-1 if none was running).
  int stop(int sig) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }
  std::size_t rss_bytes() const { return pid_ > 0 ? corvid::test::vm_rss(pid_) : 0; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  std::string node_, log_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace corvid_soak
