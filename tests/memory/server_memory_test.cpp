// Bounded server memory whatever clients do (issue 5): a flood of big requests against a
// small limit, a client that never reads its replies, a header claiming 4 GiB, and the
// memory() snapshot. Figures (RSS, peaks) are printed for docs/benchmarks.md; the assertions
// are bounds, never speeds.
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "../integration/test_support.hpp"
#include "sanitizers.hpp"

namespace corvid_test {
namespace {

using namespace std::chrono_literals;
using corvid::test::sanitized;
constexpr std::size_t mib = 1024 * 1024;

// Holds every request 20 ms: calls pile up in flight while the flood keeps sending.
corvid::task<std::uint64_t> slow_size(std::string_view data) {
  co_await corvid::sleep_for(20ms);
  co_return data.size();
}
// Calls of hold that have ended (a test that reads it resets it).
std::atomic<int> holds_ended{0};
// Holds its request `ms` milliseconds, then answers its size.
corvid::task<std::uint64_t> hold(std::string_view data, int ms) {
  co_await corvid::sleep_for(std::chrono::milliseconds(ms));
  ++holds_ended;
  co_return data.size();
}
std::string_view reply_echo(std::string_view s) { return s; }
int ping(int x) { return x; }

class memory_server {
 public:
  explicit memory_server(corvid::server_config cfg) : server_(std::move(cfg)) {
    server_.register_handler<slow_size, hold, reply_echo, ping>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  static corvid::server_config config(std::size_t limit) {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = 2;
    c.max_memory = corvid::memory_limit::bytes(limit);
    return c;
  }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::uint16_t port() const { return server_.port(); }
  corvid::rpc_server& server() { return server_; }

 private:
  corvid::rpc_server server_;
};

// A call from a plain thread: sync_wait takes tasks, not reply awaitables.
template <auto F, class... Args>
auto call_now(corvid::rpc_client& c, std::chrono::milliseconds timeout, Args... args) {
  using result = decltype(c.template call_for<F>(timeout, args...).await_resume());
  return corvid::sync_wait([&]() -> corvid::task<result> {
    co_return co_await c.template call_for<F>(timeout, args...);
  }());
}

std::string request_with_payload(std::uint64_t id, std::uint32_t function, std::size_t size) {
  return request_frame(id, function, std::string(size, 'x'));
}

// Samples the server's tracked memory and the process RSS until stopped.
class sampler {
 public:
  explicit sampler(corvid::rpc_server& s)
      : thread_([this, &s] {
          while (!stop_.load()) {
            max_tracked_ = std::max(max_tracked_.load(), s.memory().current);
            max_rss_ = std::max(max_rss_.load(), vm_rss());
            std::this_thread::sleep_for(5ms);  // the sampling period
          }
        }) {}
  ~sampler() { finish(); }
  void finish() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::size_t max_tracked() const { return max_tracked_; }
  std::size_t max_rss() const { return max_rss_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<std::size_t> max_tracked_{0};
  std::atomic<std::size_t> max_rss_{0};
  std::thread thread_;
};

// `count` raw connections that each write `frame` back to back as fast as the server takes
// it (each copy with a request id of its own: ids of running calls must be unique), and read
// (and drop) whatever comes back, on one thread.
class flood {
 public:
  flood(std::uint16_t port, int count, const std::string& frame) : frame_(frame) {
    for (int i = 0; i < count; ++i) {
      auto s = std::make_unique<asio::ip::tcp::socket>(io_);
      s->connect({asio::ip::make_address("127.0.0.1"), port});
      sockets_.push_back(std::move(s));
    }
    answered_.assign(sockets_.size(), false);
    headers_.assign(sockets_.size(), frame.substr(0, corvid::protocol::header_size));
    ids_.assign(sockets_.size(), 0);
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
      write_next(*sockets_[i], i);
      read_next(*sockets_[i], i, std::make_shared<std::vector<char>>(64 * 1024));
    }
    thread_ = std::thread([this] { io_.run(); });
  }
  ~flood() { finish(); }
  void finish() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t bytes_read() const { return read_; }
  std::uint64_t frames_written() const { return written_; }
  // Connections that got at least one reply byte.
  std::size_t connections_answered() const { return connections_answered_; }

 private:
  void write_next(asio::ip::tcp::socket& s, std::size_t index) {
    const std::uint64_t id = ++ids_[index];  // only the io thread touches ids_ and headers_
    std::memcpy(headers_[index].data() + 8, &id, sizeof id);  // offset 8, little-endian
    const std::array<asio::const_buffer, 2> frame{
        asio::buffer(headers_[index]), asio::buffer(frame_.data() + corvid::protocol::header_size,
                                                    frame_.size() - corvid::protocol::header_size)};
    asio::async_write(s, frame, [this, &s, index](std::error_code ec, std::size_t) {
      if (ec) return;
      ++written_;
      write_next(s, index);
    });
  }
  void read_next(asio::ip::tcp::socket& s, std::size_t index,
                 std::shared_ptr<std::vector<char>> buf) {
    s.async_read_some(asio::buffer(*buf),
                      [this, &s, index, buf](std::error_code ec, std::size_t n) {
                        if (ec) return;
                        read_ += n;
                        if (!answered_[index]) {  // only the io thread touches answered_
                          answered_[index] = true;
                          ++connections_answered_;
                        }
                        read_next(s, index, buf);
                      });
  }

  const std::string& frame_;
  asio::io_context io_;
  std::vector<std::unique_ptr<asio::ip::tcp::socket>> sockets_;
  std::atomic<std::uint64_t> read_{0};
  std::atomic<std::uint64_t> written_{0};
  std::vector<bool> answered_;
  std::vector<std::string> headers_;
  std::vector<std::uint64_t> ids_;
  std::atomic<std::size_t> connections_answered_{0};
  std::thread thread_;
};

TEST(server_memory, flood_of_big_requests_stays_under_the_limit) {
  constexpr std::size_t limit = 64 * mib;
  // RSS slack: allocator arenas and fragmentation, the test's own 4 MiB frame, thread
  // stacks. Sanitizer shadow memory and ASan's quarantine make RSS meaningless there.
  constexpr std::size_t rss_slack = 48 * mib;
  // Fewer connections under sanitizers: each costs a socket pair with megabytes of kernel
  // buffer, and 200 of them at sanitizer speed would take far longer than the test budget.
  const int connections = sanitized() ? 40 : 200;
  const std::size_t rss_before = vm_rss();
  memory_server srv(memory_server::config(limit));
  const std::string frame =
      request_with_payload(1, corvid::protocol::function_id<slow_size>(), 4 * mib);
  sampler sample(srv.server());
  flood f(srv.port(), connections, frame);

  // A well-behaved client on its own connection is still answered during the flood.
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  int answered = 0;
  const auto start = std::chrono::steady_clock::now();
  // Three seconds of flood at least, then on until both the flood and this client made
  // progress: a sanitizer build sharing two loaded cores with other tests needs longer.
  // At most limit / 4 MiB requests fit in memory at once; more connections than that answered
  // means connections paused at the limit were resumed when memory freed.
  const std::size_t fit_at_once = limit / (4 * mib);
  const auto progressed = [&] {
    return f.connections_answered() > fit_at_once && answered >= 10;
  };
  for (auto t = 0s; t < 3s || (!progressed() && t < 60s);
       t = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                            start)) {
    auto r = call_now<ping>(client, 30s, answered);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    ++answered;
    std::this_thread::sleep_for(50ms);  // about time: a call now and then during the flood
  }
  f.finish();
  sample.finish();
  const corvid::memory_usage u = srv.server().memory();
  std::printf(
      "flood: %d connections (%zu answered), %llu frames written, %llu reply bytes, tracked "
      "peak %zu MiB (sampled %zu MiB), RSS before %zu MiB, max %zu MiB, limit %zu MiB\n",
      connections, f.connections_answered(), static_cast<unsigned long long>(f.frames_written()),
      static_cast<unsigned long long>(f.bytes_read()), u.peak / mib, sample.max_tracked() / mib,
      rss_before / mib, sample.max_rss() / mib, limit / mib);
  EXPECT_LE(u.peak, limit);
  EXPECT_LE(sample.max_tracked(), limit);
  EXPECT_GT(f.connections_answered(), fit_at_once)
      << "no more connections answered than fit at once: paused connections never resumed";
  EXPECT_GE(answered, 10);
  if (!sanitized()) {
    EXPECT_LE(sample.max_rss(), rss_before + limit + rss_slack)
        << "RSS before " << rss_before / mib << " MiB, max " << sample.max_rss() / mib << " MiB";
  }
}

TEST(server_memory, client_that_never_reads_is_capped_and_others_are_served) {
  auto cfg = memory_server::config(256 * mib);
  cfg.max_queued_reply_bytes = 1 * mib;
  memory_server srv(cfg);
  // 16 KiB echoes: every request produces a reply of the same size that nobody reads.
  const std::string one =
      request_frame(1, corvid::protocol::function_id<reply_echo>(), std::string(16 * 1024, 'r'));
  std::string batch;
  for (int i = 0; i < 16; ++i) batch += one;
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), srv.port()});
  timeval tv{0, 300'000};  // a write that blocks this long: the server stopped reading
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::size_t sent = 0;
  bool blocked = false;
  for (int i = 0; i < 20000 && !blocked; ++i) {
    const ssize_t n = ::send(s.native_handle(), batch.data(), batch.size(), MSG_NOSIGNAL);
    if (n < 0) {
      blocked = errno == EAGAIN || errno == EWOULDBLOCK;
      break;
    }
    sent += static_cast<std::size_t>(n);
  }
  EXPECT_TRUE(blocked) << "the server kept reading: " << sent / mib << " MiB accepted";
  const corvid::memory_usage u = srv.server().memory();
  const auto* replies = u.find("queued_replies");
  ASSERT_NE(replies, nullptr);
  std::printf(
      "never-reading client: %zu MiB sent before the server stopped reading; queued "
      "replies %zu KiB (peak %zu KiB), server %zu KiB (peak %zu KiB)\n",
      sent / mib, replies->current / 1024, replies->peak / 1024, u.current / 1024, u.peak / 1024);
  // The cap plus what one read batch (at most 256 KiB of requests) can add past it.
  EXPECT_LE(replies->peak, 1 * mib + 512 * 1024);
  EXPECT_LE(u.peak, 8 * mib);

  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  for (int i = 0; i < 20; ++i) {
    auto r = call_now<ping>(client, 5s, i);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(*r, i);
  }
}

TEST(server_memory, header_claiming_4_gib_is_refused_without_allocating) {
  memory_server srv(memory_server::config(64 * mib));
  raw_connection raw(srv.port());
  const std::size_t rss_before = vm_rss();
  corvid::protocol::frame_header h;
  h.type = corvid::protocol::msg_type::request;
  h.request_id = 7;
  h.function_id = corvid::protocol::function_id<ping>();
  std::string bytes(corvid::protocol::header_size, '\0');
  corvid::protocol::encode_header(h, bytes.data());
  // body_length 0xFFFFFFFF, patched in after encoding (encode_header takes what it is given).
  h.body_length = 0xFFFFFFFFu;
  corvid::protocol::encode_header(h, bytes.data());
  raw.send(bytes);
  auto reply = raw.read_frame();
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.status, corvid::rpc_errc::message_too_large);
  EXPECT_TRUE(raw.closed_by_peer());
  const std::size_t rss_after = vm_rss();
  std::printf("4 GiB header: RSS %zu KiB -> %zu KiB, server peak %zu bytes\n", rss_before / 1024,
              rss_after / 1024, srv.server().memory().peak);
  EXPECT_LT(rss_after, rss_before + 4 * mib);
  EXPECT_LT(srv.server().memory().peak, 1 * mib);
}

TEST(server_memory, snapshot_shows_categories_and_connections) {
  memory_server srv(memory_server::config(32 * mib));
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  auto r = call_now<reply_echo>(client, 10s, std::string(100 * 1024, 'e'));
  ASSERT_TRUE(r.has_value());
  const corvid::memory_usage u = srv.server().memory();
  EXPECT_EQ(u.name, "server");
  EXPECT_EQ(u.limit, 32 * mib);
  const auto* reads = u.find("read_buffers");
  ASSERT_NE(reads, nullptr);
  EXPECT_EQ(reads->limit, 16 * mib);  // read_buffer_share 0.5 of the server limit
  ASSERT_EQ(reads->children.size(), 1u);
  EXPECT_GT(reads->children[0].current, 0u);  // the connection's read buffer
  EXPECT_GE(reads->children[0].peak, 100u * 1024);
  EXPECT_NE(u.find("in_flight"), nullptr);
  EXPECT_NE(u.find("queued_replies"), nullptr);
  // The reply is charged right after its write starts, which may be after the client has it.
  EXPECT_TRUE(eventually([&] {
    return srv.server().memory().find("queued_replies")->peak >= 100u * 1024;
  })) << srv.server().memory().to_string();
  // The server hangs under the process root. The two counters are read one after the other
  // while the connection may still release (its reply credit after the write), so they are
  // compared once a pair of readings agrees.
  const bool under_root = eventually([&] {
    const std::size_t server_now = srv.server().memory().current;
    return corvid::memory_tracker::process().current() >= server_now;
  });
  EXPECT_TRUE(under_root) << "the server's memory is not part of the process root's";
}

TEST(server_memory, a_request_that_could_never_fit_is_refused_instead_of_waiting) {
  // 8 MiB: read buffers get half (4 MiB), running calls 8 - 4 - 1/16 = 3.5 MiB.
  memory_server srv(memory_server::config(8 * mib));
  corvid::rpc_client a;
  ASSERT_FALSE(corvid::sync_wait(connect(a, srv.endpoint())));
  // 5 MiB passes max_frame_size but no read buffer may ever be that large.
  auto r = call_now<reply_echo>(a, 10s, std::string(5 * mib, 'n'));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::message_too_large) << r.error().message();
  // 3.75 MiB can be read, but never admitted as a running call: refused, connection kept.
  corvid::rpc_client b;
  ASSERT_FALSE(corvid::sync_wait(connect(b, srv.endpoint())));
  auto r2 = call_now<reply_echo>(b, 5s, std::string(3 * mib + 768 * 1024, 'n'));
  ASSERT_FALSE(r2.has_value());
  EXPECT_EQ(r2.error().code(), corvid::rpc_errc::message_too_large) << r2.error().message();
  auto p = call_now<ping>(b, 10s, 5);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(*p, 5);
}

TEST(server_memory, an_idle_connection_gives_back_its_grown_read_buffer_when_others_wait) {
  memory_server srv(memory_server::config(8 * mib));  // read buffers: 4 MiB
  corvid::rpc_client a, b;
  ASSERT_FALSE(corvid::sync_wait(connect(a, srv.endpoint())));
  ASSERT_FALSE(corvid::sync_wait(connect(b, srv.endpoint())));
  const std::string three(3 * mib, 'g');
  // a's buffer grows to hold 3 MiB and keeps that size (big frames may keep coming) ...
  auto ra = call_now<reply_echo>(a, 10s, three);
  ASSERT_TRUE(ra.has_value()) << ra.error().message();
  const auto reads = [&] {
    return srv.server().memory().find("read_buffers")->current;
  };
  EXPECT_GE(reads(), 3 * mib);
  // ... until b needs the memory while a sits idle: a's read in flight is cancelled, its
  // buffer shrinks, and b's frame is read.
  // (Within 5 s: a's heartbeat, every 10 s, would also wake it and hide a missing reclaim.)
  auto rb = call_now<reply_echo>(b, 5s, three);
  ASSERT_TRUE(rb.has_value()) << rb.error().message();
  EXPECT_EQ(rb->size(), three.size());
  // a still works, reading into a buffer regrown by use.
  auto again = call_now<ping>(a, 10s, 3);
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_LE(srv.server().memory().peak, 8 * mib);
}

TEST(server_memory, a_connection_paused_by_the_limit_outlives_the_frame_read_timeout) {
  auto cfg = memory_server::config(8 * mib);
  cfg.frame_read_timeout = 300ms;
  memory_server srv(cfg);
  corvid::rpc_client a, b;
  ASSERT_FALSE(corvid::sync_wait(connect(a, srv.endpoint())));
  ASSERT_FALSE(corvid::sync_wait(connect(b, srv.endpoint())));
  const std::string three(3 * mib, 't');
  holds_ended = 0;
  auto first = corvid::sync_wait([&]() -> corvid::task<corvid::async_reply_t<hold>> {
    co_return co_await a.send_request<hold>(three, 1500);
  }());
  ASSERT_TRUE(
      eventually([&] { return srv.server().memory().find("in_flight")->current >= 3 * mib; }));
  // b's request cannot run until a's ends: b's connection pauses 1.5 s, five times its frame
  // read timeout, and must not be taken for a peer dribbling a frame.
  auto r = call_now<hold>(b, 20s, three, 0);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(*r, three.size());
  EXPECT_EQ(holds_ended, 2) << "b did not wait for a's call to end: the test is void";
  auto ra =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::uint64_t, corvid::rpc_error>> {
        co_return co_await std::move(first);
      }());
  EXPECT_TRUE(ra.has_value());
}

TEST(server_memory, busy_mode_answers_server_busy_instead_of_waiting) {
  auto cfg = memory_server::config(4 * mib);
  cfg.busy_at_memory_limit = true;
  memory_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  // Each slow call holds its 1 MiB request in flight for 20 ms: a burst of eight needs twice
  // what the server may use, so some are refused at once.
  auto results = corvid::sync_wait([&]() -> corvid::task<std::vector<corvid::rpc_errc>> {
    std::vector<corvid::async_reply_t<slow_size>> pending;
    const std::string payload(1 * mib, 'b');
    for (int i = 0; i < 8; ++i) pending.push_back(co_await client.send_request<slow_size>(payload));
    std::vector<corvid::rpc_errc> codes;
    for (auto& p : pending) {
      auto r = co_await std::move(p);
      codes.push_back(r ? corvid::rpc_errc::ok : r.error().code());
    }
    co_return codes;
  }());
  int ok = 0, busy = 0;
  for (auto c : results) {
    ok += c == corvid::rpc_errc::ok;
    busy += c == corvid::rpc_errc::server_busy;
  }
  EXPECT_GT(ok, 0);
  EXPECT_GT(busy, 0);
  EXPECT_EQ(ok + busy, 8);
  EXPECT_LE(srv.server().memory().peak, 4 * mib);
}

}  // namespace
}  // namespace corvid_test
