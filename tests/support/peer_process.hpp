#pragma once
// A test's peer in a separate process, to be killed with SIGKILL mid-conversation: what no
// close() or stop() inside one process can show (the kernel ends the process's sockets).
// The peer prints one line on stdout when it is ready ("port N" for a server); it runs until
// killed.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <spawn.h>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include <sys/wait.h>

extern char** environ;

namespace corvid::test {

class peer_process {
 public:
  // Starts `path` with `args` and waits for its first line.
  explicit peer_process(const std::string& path, std::vector<std::string> args = {}) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    args.insert(args.begin(), path);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, path.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    if (rc != 0) {
      ::close(out[0]);
      throw std::runtime_error("cannot spawn " + path);
    }
    FILE* f = ::fdopen(out[0], "r");
    char line[256] = {};
    const bool got = std::fgets(line, sizeof line, f) != nullptr;
    std::fclose(f);  // the peer's later output goes nowhere; it never blocks on a full pipe
    if (!got) {
      kill();
      throw std::runtime_error(path + " exited before it was ready");
    }
    first_line_ = line;
    while (!first_line_.empty() && first_line_.back() == '\n') first_line_.pop_back();
  }
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;
  ~peer_process() { kill(); }

  const std::string& first_line() const noexcept { return first_line_; }
  // "port N" as the first line: N.
  std::uint16_t port() const {
    unsigned p = 0;
    if (std::sscanf(first_line_.c_str(), "port %u", &p) != 1 || p == 0 || p > 65535)
      throw std::runtime_error("peer said '" + first_line_ + "', not 'port N'");
    return static_cast<std::uint16_t>(p);
  }
  // SIGKILL, and reaped: no cleanup of any kind runs in the peer.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  std::string first_line_;
};

}  // namespace corvid::test
