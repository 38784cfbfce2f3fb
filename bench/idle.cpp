// corvid-bench idle: user-space memory per idle connection (issue 38's target: <= 4 KiB).
// A child process opens N TCP connections to an in-process server and sends nothing, or
// (--calls-first K) makes K small echo calls on each and then goes idle; the server's RSS
// delta over N is what each idle connection costs it (sockets' kernel buffers are not in
// RSS). The child holds the client ends, so its memory and descriptors do not count, and
// each process stays within RLIMIT_NOFILE.
#include "idle.hpp"

#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <corvid/corvid.hpp>

#include "raw_connection.hpp"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

namespace corvid::bench {
namespace {

// The process's resident bytes, read through /proc/self/statm opened before the connections:
// with every descriptor taken by them, opening /proc then would fail. 0 if it cannot be read.
std::size_t resident_bytes(int statm) {
  char buf[128];
  const ssize_t r = ::pread(statm, buf, sizeof buf - 1, 0);
  if (r <= 0) return 0;
  buf[r] = '\0';
  unsigned long size = 0, resident = 0;
  if (std::sscanf(buf, "%lu %lu", &size, &resident) != 2) return 0;
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

std::string idle_echo(std::string s) { return s; }

bool read_all(int fd, char* p, std::size_t n) {
  while (n != 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

// One call on `fd`: the request out, its whole reply in.
bool call_once(int fd, const std::string& request) {
  if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size()))
    return false;
  char head[protocol::header_size];
  if (!read_all(fd, head, sizeof head)) return false;
  protocol::frame_header h;
  if (protocol::decode_header(head, h, protocol::default_max_frame_size) !=
      protocol::header_errc::ok)
    return false;
  std::vector<char> rest(h.payload_size());
  return read_all(fd, rest.data(), rest.size());
}

void raise_fd_limit(std::size_t want) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return;
  if (r.rlim_cur < want) {
    r.rlim_cur = std::min<rlim_t>(r.rlim_max, want);
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Child: connect n sockets, report how many through `ready`, then wait for `done` to close.
// Each first makes `calls` calls of `request`.
[[noreturn]] void connect_many(std::uint16_t port, int n, int calls, const std::string& request,
                               int ready, int done) {
  raise_fd_limit(static_cast<std::size_t>(n) + 64);
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      break;
    }
    bool ok = true;
    for (int c = 0; c < calls && ok; ++c) ok = call_once(fd, request);
    if (!ok) {
      ::close(fd);
      break;
    }
    fds.push_back(fd);
  }
  const int opened = static_cast<int>(fds.size());
  (void)!::write(ready, &opened, sizeof opened);
  char c;
  (void)!::read(done, &c, 1);
  for (int fd : fds) ::close(fd);
  ::_exit(0);
}

}  // namespace

int run_idle_experiment(const options& o) {
  const int n = o.connections > 1 ? o.connections : 10000;
  raise_fd_limit(static_cast<std::size_t>(n) + 256);
  server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = static_cast<std::size_t>(o.threads);
  rpc_server server(cfg);
  server.register_handler<idle_echo>();
  // One echo request of 64 bytes, built before the fork (the child only writes and reads).
  const std::string request = corvid::test::request_frame<idle_echo>(1, 0, std::string(64, 'x'));
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "idle: %s\n", ec.message().c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const int statm = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  const std::size_t rss_before = resident_bytes(statm);
  const std::size_t tracked_before = server.memory().current;
  int ready[2], done[2];
  if (::pipe(ready) != 0 || ::pipe(done) != 0) return 1;
  const pid_t child = ::fork();
  if (child == 0) connect_many(server.port(), n, o.calls_first, request, ready[1], done[0]);
  int opened = 0;
  (void)!::read(ready[0], &opened, sizeof opened);
  // Wait until the server has accepted and started every connection.
  for (int i = 0; i < 600 && server.connection_count() < static_cast<std::size_t>(opened); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Connections that made calls give their read buffers back after a second of quiet
  // (connection_liveness::buffer_idle): measured once that has passed.
  std::this_thread::sleep_for(std::chrono::milliseconds(o.calls_first > 0 ? 2500 : 500));
  const std::size_t accepted = server.connection_count();
  const std::size_t rss_after = resident_bytes(statm);
  if (statm >= 0) ::close(statm);
  if (rss_before == 0 || rss_after == 0) {
    std::fprintf(stderr, "corvid-bench idle: cannot read /proc/self/statm\n");
  }
  const memory_usage usage = server.memory();
  const double per_conn_rss =
      accepted != 0 && rss_before != 0 && rss_after != 0
          ? (static_cast<double>(rss_after) - static_cast<double>(rss_before)) /
                static_cast<double>(accepted)
          : 0;
  const double per_conn_tracked =
      accepted ? static_cast<double>(usage.current - tracked_before) / static_cast<double>(accepted)
               : 0;
  std::printf(
      "corvid-bench idle: %d io thread(s), %d connections opened, %zu accepted, %d echo "
      "call(s) each before going idle\n\n",
      o.threads, opened, accepted, o.calls_first);
  std::printf(
      "| connections | RSS before (MiB) | RSS after (MiB) | RSS per connection (B) | "
      "tracked per connection (B) |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
  std::printf("| %zu | %.1f | %.1f | %.0f | %.0f |\n", accepted,
              static_cast<double>(rss_before) / (1 << 20),
              static_cast<double>(rss_after) / (1 << 20), per_conn_rss, per_conn_tracked);
  (void)!::write(done[1], "x", 1);
  ::waitpid(child, nullptr, 0);
  server.stop();
  if (accepted != static_cast<std::size_t>(n)) {
    rlimit l{};
    ::getrlimit(RLIMIT_NOFILE, &l);
    std::fprintf(stderr,
                 "corvid-bench idle: %zu of %d connections accepted (each process may hold %llu "
                 "descriptors: RLIMIT_NOFILE's hard limit)\n",
                 accepted, n, static_cast<unsigned long long>(l.rlim_max));
    return 1;
  }
  return 0;
}

}  // namespace corvid::bench
