// Hostile peers (issue 11): one test per class of attack that could crash the server, grow its
// memory past its limit, or stall other clients. Each runs real sockets against an in-process
// rpc_server with a small memory limit and asserts, besides what the class is about:
//   - the server's tracked memory peak stays within its limit (rpc_server::memory()),
//   - the process's RSS peak (VmHWM, restarted per attack) grows by at most the limit plus
//     rss_slack (skipped in sanitizer builds, whose allocators and shadow memory make RSS
//     meaningless),
//   - a well-behaved client on another connection keeps succeeding (each call within 2 s,
//     scaled: a call slower than that means the server stalled), during and after the
//     attack; its latency is printed, and measured by attack_bench, never asserted,
//   - when the attacker leaves, its connection and the memory it held are released.
// Attack sizes are bounded by construction, so that even a server without the defences stays
// far below 3 GiB (about 400 MiB at most on main at 7080399).
#include <pthread.h>
#include <time.h>

#include "attacks.hpp"
#include "good_client.hpp"
#include "hostile_handlers.hpp"
#include "sanitizers.hpp"
#include "slowdown.hpp"
#include "test_support.hpp"

namespace corvid_test {
namespace {

using corvid_attack::raw_socket;
using namespace corvid_hostile;
using corvid::protocol::function_id;
using corvid::protocol::msg_type;

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;
constexpr std::uint32_t echo_id = function_id<echo>();

// Liveness bounds, never speed targets: scaled by CORVID_TEST_SLOWDOWN (slowdown.hpp).
using corvid::test::patience;
using millis = std::chrono::duration<double, std::milli>;
// What RSS may grow beyond the server's memory limit: what the limit does not cover (thread
// stacks, the allocator's caches and fragmentation, the test's own buffers and clients: a few
// MiB when measured). Without their defences the attacks below add 90 to 400 MiB over the
// limit, so 48 MiB is far from both.
constexpr std::size_t rss_slack = 48 * MiB;
using corvid::test::sanitized;
constexpr bool rss_is_meaningful = !sanitized();  // quarantine and shadow memory dominate RSS

// A server with the handlers of hostile_handlers.hpp and `max_memory` as its whole limit.
class hostile_server {
 public:
  static corvid::server_config config(std::size_t max_memory, std::size_t io_threads = 2) {
    corvid::server_config c;
    c.address = "127.0.0.1";
    c.io_threads = io_threads;
    c.max_memory = corvid::memory_limit::bytes(max_memory);
    c.stop_timeout = 500ms;  // a test ending with slow calls running must not wait for them
    return c;
  }
  explicit hostile_server(corvid::server_config cfg) : server_(std::move(cfg)) {
    server_.register_handler<echo, big, count_pages, count_strings, count_nested, count_map,
                             count_variants, count_touchy, count_touchy_co, slow>();
    if (auto ec = server_.async_start()) throw std::runtime_error(ec.message());
  }
  corvid::rpc_server& server() { return server_; }
  std::uint16_t port() const { return server_.port(); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  std::size_t tracked(std::string_view node) const {
    const auto m = server_.memory();
    const auto* n = m.find(node);
    return n ? n->current : 0;
  }

 private:
  corvid::rpc_server server_;
};

class good : public corvid_attack::good_client<echo> {
 public:
  explicit good(std::string endpoint)
      : good_client(std::move(endpoint), 64, 1ms, patience(2000ms)) {}
};

// The observer every test shares: the well-behaved client, the memory baselines, and the
// checks listed at the top of this file.
class attack_watch {
 public:
  explicit attack_watch(hostile_server& s) : srv_(s), good_(s.endpoint()) {
    EXPECT_TRUE(good_.wait_for_calls(5, patience(10s))) << good_.first_error();
    limit_ = srv_.server().memory().limit;
    restart();
  }
  ~attack_watch() { good_.stop(); }

  // Starts a new measurement: memory peaks and the good client's latencies from here.
  void restart() {
    baseline_memory_ = srv_.server().memory().current;
    baseline_rss_ = corvid_attack::vm_rss();
    hwm_reset_ = corvid_attack::reset_vm_hwm();
    srv_.server().reset_memory_peak();
    good_.take_latencies();
    failed_mark_ = good_.failed();
  }

  // The good client's calls since the last check: `min_calls` more succeed (within 5 s,
  // scaled) and none failed. Their P50 and P99 are printed, for the record.
  void expect_good_client_served(std::string_view phase, std::uint64_t min_calls = 10) {
    EXPECT_TRUE(good_.wait_for_calls(min_calls, patience(5s)))
        << phase << ": the good client got no replies (" << good_.ok() << " ok, " << good_.failed()
        << " failed: " << good_.first_error() << ")";
    auto lat = good_.take_latencies();
    const auto failed = good_.failed() - failed_mark_;
    failed_mark_ = good_.failed();
    const double p50 = corvid_attack::percentile(lat, 50), p99 = corvid_attack::percentile(lat, 99);
    std::printf("[%.*s] good client: %zu calls, P50 %.0f us, P99 %.0f us, %llu failed\n",
                static_cast<int>(phase.size()), phase.data(), lat.size(), p50, p99,
                static_cast<unsigned long long>(failed));
    EXPECT_EQ(failed, 0u) << phase << ": " << good_.first_error();
  }

  // Since restart(): the tracked peak is within the limit, RSS grew by at most limit +
  // rss_slack.
  void expect_memory_bounded(std::string_view phase) {
    const auto m = srv_.server().memory();
    const std::size_t hwm = corvid_attack::vm_hwm();
    const std::size_t rss_growth = hwm > baseline_rss_ ? hwm - baseline_rss_ : 0;
    std::printf("[%.*s] tracked peak %.1f MiB (limit %.1f MiB), RSS peak +%.1f MiB\n",
                static_cast<int>(phase.size()), phase.data(), double(m.peak) / MiB,
                double(limit_) / MiB, double(rss_growth) / MiB);
    EXPECT_LE(m.peak, limit_) << phase << ": the server's tracked peak passed its limit\n"
                              << m.to_string();
    if (rss_is_meaningful && hwm_reset_) {
      EXPECT_LE(rss_growth, limit_ + rss_slack)
          << phase << ": RSS grew by " << rss_growth / MiB << " MiB, over the limit ("
          << limit_ / MiB << " MiB) + " << rss_slack / MiB << " MiB of slack";
    }
  }

  // After the attacker left: only the good client's connection is open and the tracked
  // memory is back to what it was before the attack (within 64 KiB of buffer rounding).
  void expect_released(std::string_view phase, std::size_t connections = 1) {
    EXPECT_TRUE(
        eventually([&] { return srv_.server().connection_count() <= connections; }, patience(5s)))
        << phase << ": " << srv_.server().connection_count() << " connections left";
    EXPECT_TRUE(
        eventually([&] { return srv_.server().memory().current <= baseline_memory_ + 64 * KiB; },
                   patience(5s)))
        << phase << ": tracked memory " << srv_.server().memory().current << " B, "
        << baseline_memory_ << " B before the attack\n"
        << srv_.server().memory().to_string();
  }

  std::size_t limit() const { return limit_; }
  good& client() { return good_; }

 private:
  hostile_server& srv_;
  good good_;
  std::size_t limit_ = 0, baseline_memory_ = 0, baseline_rss_ = 0;
  bool hwm_reset_ = false;
  std::uint64_t failed_mark_ = 0;
};

// Sends `bytes` without blocking past `limit` (a server that stops reading must not hang the
// test); the number of bytes sent.
std::size_t send_within(raw_socket& s, std::string_view bytes, std::chrono::milliseconds limit) {
  std::atomic<bool> stop{false};
  std::thread timer([&] {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!stop.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(5ms);
    }
    stop = true;
  });
  std::size_t sent = 0;
  // In slices, so the count of what got through is known when the server stops reading.
  while (sent < bytes.size() && !stop.load()) {
    const auto slice = bytes.substr(sent, 64 * KiB);
    if (!s.send_until(slice, stop)) break;
    sent += slice.size();
  }
  stop = true;
  timer.join();
  return sent;
}

// 1. Reply amplification: 48 calls of big(8 MiB) in one 1.7 KB write (384 MiB of replies)
// from a client that never reads, against a 64 MiB server.
TEST(hostile_peers, reply_amplification_from_a_client_that_never_reads) {
  hostile_server srv(hostile_server::config(64 * MiB));
  attack_watch w(srv);
  std::string batch;
  for (std::uint64_t id = 1; id <= 48; ++id) {
    batch += corvid_attack::encoded_request(id, function_id<big>(), std::uint32_t{8 * MiB});
  }
  raw_socket attacker(srv.port(), 0, 16 * KiB);
  ASSERT_TRUE(attacker.ok());
  const auto before = srv.server().stats();
  ASSERT_TRUE(attacker.send(batch));
  // The server works through the batch until its defence stops it (it pauses the attacker's
  // connection) or it is done.
  EXPECT_TRUE(eventually(
      [&] {
        const auto now = srv.server().stats();
        return now.admission_pauses > before.admission_pauses ||
               now.frames_received >= before.frames_received + 48;
      },
      patience(10s)));
  w.expect_good_client_served("amplification: during");
  w.expect_memory_bounded("amplification: 48 x 8 MiB replies");
  attacker.close();
  w.expect_released("amplification: after the attacker closed");
  w.expect_good_client_served("amplification: after");
}

// 2. Allocation proportional to a claimed count: bodies whose elements take one byte on the
// wire and far more once decoded. Each call must be refused with an error (bad_request,
// server_busy or message_too_large) without the memory being allocated, and the connection
// must answer the next call.
TEST(hostile_peers, claimed_counts_are_refused_without_allocating_them) {
  hostile_server srv(hostile_server::config(32 * MiB));
  attack_watch w(srv);
  struct claim {
    const char* what;
    std::uint32_t function;
    std::string body;
  };
  std::vector<claim> claims;
  using corvid_attack::claimed_count_body;
  // 64 Ki empty optionals of 4097 bytes: 64 KiB on the wire, 256 MiB decoded.
  claims.push_back({"vector<optional<array<uint8_t,4096>>> x 65536", function_id<count_pages>(),
                    claimed_count_body(64 * 1024)});
  // 32 Ki variants holding their empty alternative (index 0): 128 MiB decoded.
  claims.push_back({"vector<variant<monostate,array<uint8_t,4096>>> x 32768",
                    function_id<count_variants>(), claimed_count_body(32 * 1024)});
  // 6 Mi empty strings of 32 bytes: 6 MiB on the wire, 192 MiB decoded.
  claims.push_back(
      {"vector<string> x 6 Mi", function_id<count_strings>(), claimed_count_body(6 * 1024 * 1024)});
  // 6 Mi empty vectors of 24 bytes: 144 MiB decoded.
  claims.push_back({"vector<vector<int32>> x 6 Mi", function_id<count_nested>(),
                    claimed_count_body(6 * 1024 * 1024)});
  // 1.25 Mi map entries of 5 bytes (a key, an empty string), ~80 bytes each as tree nodes:
  // 6.25 MiB on the wire, ~100 MiB decoded.
  claims.push_back({"map<uint32,string> x 1.25 Mi", function_id<count_map>(),
                    corvid_attack::u32_string_map_body(1280 * 1024)});
  raw_socket c(srv.port());
  ASSERT_TRUE(c.ok());
  std::uint64_t id = 1;
  for (const auto& cl : claims) {
    SCOPED_TRACE(cl.what);
    w.restart();
    const std::uint64_t call = id++;
    ASSERT_TRUE(c.send(corvid_attack::raw_request(call, cl.function, cl.body)));
    auto reply = c.read_frame(patience(5s));
    ASSERT_TRUE(reply.has_value()) << "no reply to the claimed-count call";
    EXPECT_EQ(reply->header.request_id, call);
    EXPECT_NE(reply->header.status, corvid::rpc_errc::ok)
        << "the server decoded the claimed count and ran the handler";
    std::printf("[%s] reply status %d (%s)\n", cl.what, static_cast<int>(reply->header.status),
                reply->header.status == corvid::rpc_errc::ok ? "ok" : reply->message().c_str());
    const std::uint64_t next = id++;
    ASSERT_TRUE(c.send(corvid_attack::encoded_request(next, echo_id, std::string_view("next"))));
    auto echo_reply = c.read_frame(patience(5s));
    ASSERT_TRUE(echo_reply.has_value()) << "the connection stopped answering";
    EXPECT_EQ(echo_reply->header.request_id, next);
    EXPECT_EQ(echo_reply->header.status, corvid::rpc_errc::ok);
    w.expect_memory_bounded(cl.what);
  }
  w.expect_good_client_served("claimed counts: during");
  c.close();
  w.expect_released("claimed counts: after the client closed");
}

// 3. An exception thrown while decoding arguments (a set key whose comparison throws), for a
// sync and a coroutine handler: the caller gets an error reply, the connection answers its
// next call, and when the client leaves nothing stays charged to running calls.
TEST(hostile_peers, exception_while_decoding_arguments_is_an_error_reply) {
  hostile_server srv(hostile_server::config(32 * MiB));
  attack_watch w(srv);
  std::string body;  // set<touchy_key>{1, poison}: inserting the second key compares
  corvid_attack::append_varint(body, 2);
  for (std::int32_t k : {1, touchy_key::poison}) {
    char bytes[4];
    std::memcpy(bytes, &k, 4);
    body.append(bytes, 4);
  }
  for (const auto& [what, fid] : {std::pair{"sync handler", function_id<count_touchy>()},
                                  std::pair{"coroutine handler", function_id<count_touchy_co>()}}) {
    SCOPED_TRACE(what);
    raw_socket c(srv.port());
    ASSERT_TRUE(c.ok());
    // Many times: each one that leaks its in-flight charge brings the server closer to its
    // limit (14 exhausted it in the issue).
    for (std::uint64_t id = 1; id <= 20; id += 2) {
      ASSERT_TRUE(c.send(corvid_attack::raw_request(id, fid, body)));
      // Not ASSERT: a connection that stopped answering must still be released below.
      auto reply = c.read_frame(patience(2s));
      EXPECT_TRUE(reply.has_value()) << "no reply to call " << id << " (decoding threw)";
      if (reply) {
        EXPECT_EQ(reply->header.request_id, id);
        EXPECT_NE(reply->header.status, corvid::rpc_errc::ok);
      }
      ASSERT_TRUE(c.send(corvid_attack::encoded_request(id + 1, echo_id, std::string_view("ok"))));
      auto next = c.read_frame(patience(2s));
      EXPECT_TRUE(next.has_value()) << "the connection stopped answering after call " << id;
      if (!next) break;
      EXPECT_EQ(next->header.request_id, id + 1);
      EXPECT_EQ(next->header.status, corvid::rpc_errc::ok);
    }
    c.close();
    EXPECT_TRUE(eventually([&] { return srv.tracked("in_flight") == 0; }, patience(2s)))
        << "in_flight still holds " << srv.tracked("in_flight") << " B after the client left";
    w.expect_released(what);
  }
  w.expect_memory_bounded("decode exceptions");
  w.expect_good_client_served("decode exceptions: after");
}

// 4. Calls in flight: 100,000 calls to a coroutine handler that sleeps 30 s, pipelined on one
// connection (3.6 MB). Memory stays bounded, the good client is served, and when the attacker
// closes (FIN, or RST) the calls are cancelled and their memory returned at once, not after
// their 30 s.
void calls_in_flight_flood(bool reset) {
  auto cfg = hostile_server::config(16 * MiB);  // defaults otherwise: the per-connection cap too
  hostile_server srv(cfg);
  attack_watch w(srv);
  slow_running = 0;
  constexpr std::uint64_t calls = 100'000;
  std::string batch;
  batch.reserve(calls * 40);
  for (std::uint64_t id = 1; id <= calls; ++id) {
    batch += corvid_attack::encoded_request(id, function_id<slow>(), std::int32_t{30'000});
  }
  raw_socket attacker(srv.port());
  ASSERT_TRUE(attacker.ok());
  const auto pauses_before = srv.server().stats().admission_pauses;
  const std::size_t sent = send_within(attacker, batch, patience(2s));
  // The server dispatches what it read until a limit pauses the attacker's connection.
  EXPECT_TRUE(eventually([&] { return srv.server().stats().admission_pauses > pauses_before; },
                         patience(10s)));
  std::printf("calls in flight: %zu of %zu bytes sent, %lld calls running\n", sent, batch.size(),
              static_cast<long long>(slow_running.load()));
  w.expect_good_client_served("calls in flight: during");
  w.expect_memory_bounded("calls in flight: 100,000 x slow(30 s)");
  const auto closed_at = std::chrono::steady_clock::now();
  if (reset) {
    attacker.reset();
  } else {
    attacker.close();
  }
  EXPECT_TRUE(eventually([] { return slow_running.load() == 0; }, patience(2s)))
      << slow_running.load() << " calls still running after the attacker closed";
  std::printf(
      "calls in flight: %lld running %.0f ms after the close\n",
      static_cast<long long>(slow_running.load()),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - closed_at)
          .count());
  w.expect_released("calls in flight: after the attacker closed");
  w.expect_good_client_served("calls in flight: after");
}
TEST(hostile_peers, calls_in_flight_flood_then_fin) { calls_in_flight_flood(false); }
TEST(hostile_peers, calls_in_flight_flood_then_rst) { calls_in_flight_flood(true); }

// 5a. Cancel storm: 65,536 cancel frames (for ids that are not running) against 20,000
// running calls on one connection. Cost per cancel must not grow with the running calls:
// the storm is answered (a ping after each 4,096 cancels) within 1 s in all, and the good
// client, on the same reactor (one io thread), keeps its P99.
TEST(hostile_peers, cancel_storm_against_many_running_calls) {
  auto cfg = hostile_server::config(64 * MiB, 1);
  // 20,000 calls must run at once on one connection for the storm to mean anything.
  cfg.max_calls_per_connection = 32768;  // all 20,000 calls run: the storm meets them
  hostile_server srv(cfg);
  attack_watch w(srv);
  slow_running = 0;
  constexpr std::uint64_t calls = 20'000;
  std::string batch;
  for (std::uint64_t id = 1; id <= calls; ++id) {
    batch += corvid_attack::encoded_request(id, function_id<slow>(), std::int32_t{30'000});
  }
  batch += corvid_attack::ping_frame(1);
  raw_socket attacker(srv.port());
  ASSERT_TRUE(attacker.ok());
  ASSERT_EQ(send_within(attacker, batch, patience(5s)), batch.size());
  auto pong = attacker.read_frame(patience(5s));
  ASSERT_TRUE(pong.has_value()) << "the server did not take the 20,000 calls";
  EXPECT_EQ(slow_running.load(), static_cast<std::int64_t>(calls));
  w.restart();
  // 16 rounds of 4,096 cancels, each followed by a ping: the pong says the round is done.
  // Stops early once the storm's budget is spent, so a server without the defence is not
  // kept busy for long.
  const auto budget = patience(1000ms);
  const auto begin = std::chrono::steady_clock::now();
  int rounds = 0;
  std::uint64_t next_id = 1'000'000;
  for (; rounds < 16; ++rounds) {
    std::string storm;
    for (int i = 0; i < 4096; ++i) storm += corvid_attack::cancel_frame(next_id++);
    storm += corvid_attack::ping_frame(2 + static_cast<std::uint64_t>(rounds));
    ASSERT_TRUE(attacker.send(storm));
    const auto left = budget - std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now() - begin);
    if (left.count() <= 0 || !attacker.read_frame(left).has_value()) break;
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
  std::printf("cancel storm: %d of 16 rounds of 4,096 cancels answered in %.0f ms\n", rounds, ms);
  EXPECT_EQ(rounds, 16) << "the storm was not answered within " << budget.count() << " ms";
  w.expect_good_client_served("cancel storm: during");
  EXPECT_EQ(slow_running.load(), static_cast<std::int64_t>(calls))
      << "a cancel for an id not running ended a call";
  attacker.reset();
  EXPECT_TRUE(eventually([] { return slow_running.load() == 0; }, patience(5s)))
      << slow_running.load() << " calls still running after the attacker reset";
  w.expect_released("cancel storm: after the attacker reset");
  w.expect_good_client_served("cancel storm: after");
}

// 5b. Thousands of connections waiting for memory while memory is released: 2,000
// connections each start a 256 KiB frame (16 KiB sent) while the read-buffer budget is full
// (15 frames of 1 MiB, 1 byte short, plus every connection's initial buffer), so they wait for
// read memory. Then 1,000 slow calls on another connection end about 1 ms apart; each end
// releases a little call memory, which no reader can use. Waking every waiter on every
// release costs the reactor (one io thread here, shared with the good client) 2,000 retries
// a time; waking them only when the memory they need is there costs nothing. Each retry that
// finds too little memory pauses its connection again (transport_stats::admission_pauses):
// waking them all would add 2,000 per release, 2,000,000 over the 1,000 releases; there must
// be fewer than a tenth of that (27 were counted; each waiting connection's probe every 5 s
// may add one more).
// The reactor's CPU time over the releases is printed.
std::atomic<clockid_t> reactor_clock{CLOCK_MONOTONIC};
std::chrono::nanoseconds reactor_cpu() {
  timespec ts{};
  ::clock_gettime(reactor_clock.load(), &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}
TEST(hostile_peers, memory_release_with_thousands_of_waiters_is_cheap) {
  auto cfg = hostile_server::config(64 * MiB, 1);
  cfg.on_thread_start = [](std::size_t) {
    clockid_t c{};
    if (::pthread_getcpuclockid(::pthread_self(), &c) == 0) reactor_clock = c;
  };
  hostile_server srv(cfg);
  attack_watch w(srv);
  ASSERT_NE(reactor_clock.load(), CLOCK_MONOTONIC);
  std::vector<raw_socket> holders, waiters;
  // The holders' frames keep arriving, a byte every 25 ms: a frame that stops arriving
  // while others wait for memory is closed within a second, and its memory freed. (At one
  // every 100 ms, a loaded machine stalling the trickle for a second got holders closed:
  // their memory then went to waiters, whose frames stop arriving, and those were closed.)
  constexpr std::size_t held_back = 8192;
  for (int i = 0; i < 15; ++i) {
    holders.emplace_back(srv.port());
    const std::string almost =
        corvid_attack::request_header(1, echo_id, MiB) + std::string(MiB - held_back, 'h');
    ASSERT_EQ(send_within(holders.back(), almost, patience(2s)), almost.size());
  }
  std::atomic<bool> trickling{true};
  std::thread trickle([&] {
    for (std::size_t sent = 0; sent + 1 < held_back && trickling; ++sent) {
      for (auto& h : holders) h.send("h");
      std::this_thread::sleep_for(25ms);  // about time: the trickle's pace
    }
  });
  struct stop_trickle {
    std::atomic<bool>& on;
    std::thread& t;
    ~stop_trickle() {
      on = false;
      if (t.joinable()) t.join();
    }
  } stop{trickling, trickle};
  const std::string started =
      corvid_attack::request_header(1, echo_id, 256 * KiB) + std::string(16 * KiB, 'w');
  const auto pauses_before = srv.server().stats().admission_pauses;
  // In batches of 64, each accepted before the next connects: a kernel whose accept queue
  // is short (net.core.somaxconn = 128 is common) drops what overflows it, and TCP then
  // resends the waiters' bytes seconds apart, so the server rightly closes them as frames
  // that stopped arriving while memory is short.
  for (int i = 0; i < 2000; ++i) {
    waiters.emplace_back(srv.port());
    if (!waiters.back().ok()) break;
    waiters.back().send(started);
    if (waiters.size() % 64 == 0 || waiters.size() == 2000) {
      ASSERT_TRUE(eventually([&] { return srv.server().connection_count() >= 16 + waiters.size(); },
                             patience(10s)))
          << srv.server().connection_count() << " connections for " << 16 + waiters.size();
    }
  }
  ASSERT_EQ(waiters.size(), 2000u);
  // The waiters' reads are in: most wait for read memory, their connections paused (some
  // get it by the first read buffer's rule: ~1,930 of 2,000 wait).
  ASSERT_TRUE(eventually(
      [&] { return srv.server().stats().admission_pauses >= pauses_before + 1000; }, patience(10s)))
      << srv.server().stats().admission_pauses - pauses_before << " pauses for 2,000 waiters";
  w.restart();
  raw_socket releaser(srv.port());
  ASSERT_TRUE(releaser.ok());
  std::string batch;
  for (std::int32_t i = 1; i <= 1000; ++i) {  // ending 1 ms apart
    batch += corvid_attack::encoded_request(static_cast<std::uint64_t>(i), function_id<slow>(),
                                            std::int32_t{50 + i});
  }
  const auto cpu_before = reactor_cpu();
  const auto pauses_at_releases = srv.server().stats().admission_pauses;
  const auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(releaser.send(batch));
  int replies = 0;
  while (replies < 1000 && releaser.read_frame(patience(5s))) ++replies;
  const auto cpu = reactor_cpu() - cpu_before;
  const auto repauses = srv.server().stats().admission_pauses - pauses_at_releases;
  std::printf(
      "waiters: 1,000 releases with 2,000 waiters took %.0f ms, reactor CPU %.0f ms, %llu "
      "pauses\n",
      millis(std::chrono::steady_clock::now() - begin).count(), millis(cpu).count(),
      static_cast<unsigned long long>(repauses));
  EXPECT_EQ(replies, 1000);
  EXPECT_LT(repauses, 2000u * 1000u / 10u)
      << "the releases woke waiters whose memory was not there";
  w.expect_good_client_served("waiters: during the releases");
  w.expect_memory_bounded("waiters: 2,000 waiting for read memory");
  trickling = false;
  trickle.join();
  holders.clear();
  waiters.clear();
  releaser.close();
  w.expect_released("waiters: after they all closed");
  w.expect_good_client_served("waiters: after");
}

// 6. Clients that never read: 8 connections each ask for 24 replies of 1 MiB, one request at
// a time, and never read. The server (64 MiB) keeps serving the good client, holds no more
// than its limit, and closes each peer whose replies it still holds (in its queue, or 64 KiB
// and more in the kernel's) after write_timeout (1 s here) even though the peer never
// closes: its memory is freed while the attacker still holds the socket. A peer whose
// replies were all refused (server_busy: the server was full) holds a few small error frames
// the kernel took: that is an idle connection, left to idle_timeout (how many there are
// depends on the build's speed: 0 in dev, up to 3 under TSan).
TEST(hostile_peers, clients_that_never_read_are_closed_by_the_write_timeout) {
  auto cfg = hostile_server::config(64 * MiB);
  cfg.write_timeout = 1000ms;
  hostile_server srv(cfg);
  attack_watch w(srv);
  std::vector<raw_socket> stuck;
  for (int i = 0; i < 8; ++i) {
    stuck.emplace_back(srv.port(), 0, 16 * KiB);
    ASSERT_TRUE(stuck.back().ok());
  }
  const std::string one = corvid_attack::encoded_request(1, function_id<big>(), std::uint32_t{MiB});
  // Under a sanitizer, a third of the rounds: still past the limit (8 x 8 MiB), without the
  // seconds of instrumented copying of 192 MiB of replies that the good client would wait
  // behind on a reactor.
  const int rounds = sanitized() ? 8 : 24;
  for (int round = 0; round < rounds; ++round) {
    for (auto& s : stuck) s.send(one);  // a server that closed it: the send fails, fine
    // About time: one request per read, so that the per-read checks apply.
    std::this_thread::sleep_for(2ms);
  }
  w.expect_good_client_served("never-readers: during");
  w.expect_memory_bounded("never-readers: 8 x 24 (8 sanitized) x 1 MiB");
  // The peers stay connected and never read: only a write timeout can end them.
  const auto replies_held = [&] {
    return srv.tracked("queued_replies");
  };
  EXPECT_TRUE(eventually([&] { return replies_held() <= 64 * KiB; }, 1000ms + patience(5s)))
      << replies_held() << " reply bytes still held for peers that do not read";
  const std::size_t open = srv.server().connection_count() - 1;
  std::printf("never-readers: %zu of 8 still open (holding no replies)\n", open);
  EXPECT_LT(open, 8u) << "no non-reading peer was closed by the write timeout";
  w.expect_released("never-readers: after the write timeout", 1 + open);
  w.expect_good_client_served("never-readers: after");
}

// The defences against peers that stop sending or reading must not hit a client the server
// paused itself. Here the server is under memory pressure (a call waits for in-flight
// memory behind a running 20 MiB one) while a well-behaved pipelining client is paused at
// max_calls_per_connection with requests left in its grown buffer: it sends nothing more and
// is not read, for longer than stall_grace. It must be served in full, not closed as a peer
// whose frame stopped arriving.
TEST(hostile_peers, a_client_paused_at_its_call_cap_under_memory_pressure_is_served) {
  auto cfg = hostile_server::config(64 * MiB, 1);
  cfg.max_calls_per_connection = 2;
  hostile_server srv(cfg);
  // 20 MiB attachments on slow(3 s): the second waits for in-flight memory the first holds
  // (28 MiB of a 64 MiB server), so the server has a memory waiter for ~3 s.
  const auto with_attachment = [](std::uint64_t id, std::int32_t ms, std::size_t attachment) {
    std::string body;
    corvid::codec::string_sink sink{body};
    corvid::codec::encode(sink, ms);
    return corvid_attack::header_bytes(corvid::protocol::msg_type::request, id, function_id<slow>(),
                                       static_cast<std::uint32_t>(body.size()),
                                       static_cast<std::uint32_t>(attachment)) +
           body + std::string(attachment, 'a');
  };
  raw_socket hog_a(srv.port()), hog_b(srv.port());
  ASSERT_TRUE(hog_a.send(with_attachment(1, 3000, 20 * MiB)));
  ASSERT_TRUE(eventually([&] { return slow_running.load() >= 1; }, patience(2s)));
  ASSERT_TRUE(hog_b.send(with_attachment(1, 3000, 20 * MiB)));
  // The victim: 4 calls of slow(1.2 s) with 16 KiB attachments in one write; 2 run, 2 wait
  // in its buffer (grown past its initial 8 KiB by the 66 KiB write) for 1.2 s.
  raw_socket victim(srv.port());
  std::string calls;
  for (std::uint64_t id = 1; id <= 4; ++id) calls += with_attachment(id, 1200, 16 * KiB);
  ASSERT_TRUE(victim.send(calls));
  int ok = 0;
  while (ok < 4) {
    auto reply = victim.read_frame(patience(5s));
    if (!reply) break;
    if (reply->header.status == corvid::rpc_errc::ok) ++ok;
  }
  EXPECT_EQ(ok, 4) << "the paused client was cut off (" << ok << " of 4 replies)";
}

// 7. Headers with false lengths: 48 connections each send only a request header claiming a
// 1 MiB body (1.5 KB sent in all), then nothing. Buffers sized at the header would take the
// whole read-buffer budget (31 x 1 MiB of the 32 MiB of this 64 MiB server, leaving less
// than the good client's 1 MiB call needs; the other 17 wait) until frame_read_timeout
// (120 s). They must not: the read buffers hold little, and a
// good client's 1 MiB echo still succeeds promptly.
TEST(hostile_peers, headers_with_false_lengths_do_not_reserve_the_read_budget) {
  hostile_server srv(hostile_server::config(64 * MiB));
  attack_watch w(srv);
  const auto received_before = srv.server().stats().bytes_received;
  std::vector<raw_socket> liars;
  for (int i = 0; i < 48; ++i) {
    liars.emplace_back(srv.port());
    ASSERT_TRUE(liars.back().ok());
    ASSERT_TRUE(liars.back().send(corvid_attack::request_header(1, echo_id, MiB)));
  }
  // The server has read every header.
  ASSERT_TRUE(eventually(
      [&] {
        return srv.server().stats().bytes_received >=
               received_before + 48 * corvid::protocol::header_size;
      },
      patience(10s)));
  const auto m = srv.server().memory();
  const auto* reads = m.find("read_buffers");
  ASSERT_NE(reads, nullptr);
  std::printf("false headers: read buffers hold %.1f MiB of %.1f MiB\n",
              double(reads->current) / MiB, double(reads->limit) / MiB);
  EXPECT_LT(reads->current, reads->limit / 4)
      << "48 headers without bodies reserved the read-buffer budget";
  corvid::rpc_client large;
  ASSERT_FALSE(corvid::sync_wait(connect(large, srv.endpoint())));
  const std::string payload(MiB, 'L');
  for (int i = 0; i < 5; ++i) {
    auto r =
        corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::string, corvid::rpc_error>> {
          co_return co_await large.call_for<echo>(patience(2s), std::string_view(payload));
        }());
    ASSERT_TRUE(r.has_value()) << "1 MiB call " << i << " failed: " << r.error().message();
    EXPECT_EQ(r->size(), payload.size());
  }
  w.expect_good_client_served("false headers: during");
  w.expect_memory_bounded("false headers: 48 x 1 MiB claimed");
  liars.clear();
  large.close();
  w.expect_released("false headers: after the liars closed");
  w.expect_good_client_served("false headers: after");
}

// 8. Protocol details, as docs/protocol.md states them.
// "Id 0 is reserved ... Clients must never send id 0", and a response with id 0 and a non-ok
// status means "the server rejected the stream and is closing it". So a request with id 0 is
// never run, and whatever the server answers carries that meaning: an error, then the close.
TEST(hostile_peers, request_id_zero_is_rejected_and_the_connection_closed) {
  hostile_server srv(hostile_server::config(32 * MiB));
  attack_watch w(srv);
  for (const auto& [what, frame] :
       {std::pair{"echo with id 0",
                  corvid_attack::encoded_request(0, echo_id, std::string_view("zero"))},
        std::pair{"unknown function with id 0", corvid_attack::raw_request(0, 0x12345678, "")}}) {
    SCOPED_TRACE(what);
    raw_socket c(srv.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send(frame));
    if (auto reply = c.read_frame(patience(2s))) {
      EXPECT_NE(reply->header.status, corvid::rpc_errc::ok) << "a call with id 0 was run";
      EXPECT_EQ(reply->header.request_id, 0u);
    }
    EXPECT_TRUE(c.closed_by_peer_within(patience(2s)))
        << "an id-0 error reply was sent on a connection left open";
  }
  w.expect_good_client_served("request id 0");
}

// The other side of the list: what docs/protocol.md lets a client send besides requests
// (cancel for any id, ping with any id, pong) is not an error: no reply but the pong, and the
// connection keeps answering.
TEST(hostile_peers, frame_types_a_client_may_send_keep_the_connection) {
  hostile_server srv(hostile_server::config(32 * MiB));
  raw_socket c(srv.port());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.send(corvid_attack::cancel_frame(12345) + corvid_attack::cancel_frame(0) +
                     corvid_attack::header_bytes(msg_type::pong, 3) + corvid_attack::ping_frame(0) +
                     corvid_attack::encoded_request(8, echo_id, std::string_view("still"))));
  auto pong = c.read_frame(patience(2s));
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->header.type, msg_type::pong);
  EXPECT_EQ(pong->header.request_id, 0u);
  auto reply = c.read_frame(patience(2s));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->header.type, msg_type::response);
  EXPECT_EQ(reply->header.request_id, 8u);
  EXPECT_EQ(reply->header.status, corvid::rpc_errc::ok);
  EXPECT_FALSE(c.peer_closed());
}

// "Ids must be unique among the client's calls in flight on that connection": a second
// request with the id of a running call is a protocol error (request id 0: its reply could
// not be told from the running call's), only one of the two runs, and it still answers.
TEST(hostile_peers, duplicate_id_of_a_running_call_is_rejected) {
  hostile_server srv(hostile_server::config(32 * MiB));
  attack_watch w(srv);
  slow_running = 0;
  const auto started = slow_started.load();
  raw_socket c(srv.port());
  ASSERT_TRUE(c.ok());
  const std::string call =
      corvid_attack::encoded_request(7, function_id<slow>(), std::int32_t{2'000});
  ASSERT_TRUE(c.send(call + call));
  // The duplicate's error comes at once; the call itself sleeps 2 s.
  auto reply = c.read_frame(patience(1000ms));
  ASSERT_TRUE(reply.has_value()) << "the duplicate got no error reply within 1 s";
  EXPECT_EQ(reply->header.request_id, 0u) << "an error about the connection, not a call";
  EXPECT_EQ(reply->header.status, corvid::rpc_errc::protocol_error);
  EXPECT_EQ(slow_started.load() - started, 1) << "both calls with id 7 ran";
  // The one that runs still answers, once; then the server closes.
  int ok_replies = 0;
  while (auto more = c.read_frame(patience(3s))) {
    EXPECT_EQ(more->header.request_id, 7u);
    if (more->header.status == corvid::rpc_errc::ok) ++ok_replies;
    if (ok_replies >= 2) break;
  }
  EXPECT_EQ(ok_replies, 1) << "replies with status ok for id 7";
  c.close();
  w.expect_released("duplicate ids");
  w.expect_good_client_served("duplicate ids");
}

// Every frame type a client must not send is a protocol error: a protocol_error reply with
// id 0, then the close, after the replies to what came before. Per docs/protocol.md: type 2
// (a response), types outside 1..5 ("type is not 1…5 → bad_type"), and rdma_setup (6) on a
// server without init_ibv or after a connection's first frame.
// Stream frames naming no open stream (never opened, ended, or a plain call's id) are dropped:
// they hold nothing and the connection goes on.
TEST(hostile_peers, stream_frames_for_unknown_streams_are_dropped) {
  hostile_server srv(hostile_server::config(32 * MiB));
  attack_watch w(srv);
  {
    raw_socket c(srv.port());
    ASSERT_TRUE(c.ok());
    std::string junk;
    for (std::uint64_t id = 1; id < 2000; ++id) {
      junk += corvid_attack::header_bytes(msg_type::stream_credit, id);
      junk += corvid_attack::header_bytes(msg_type::stream_end, id);
      junk += corvid_attack::header_bytes(msg_type::stream_item, id);
    }
    ASSERT_TRUE(c.send(corvid_attack::encoded_request(5, echo_id, std::string_view("first")) +
                       junk +
                       corvid_attack::encoded_request(6, echo_id, std::string_view("after"))));
    for (std::uint64_t id : {5u, 6u}) {
      auto reply = c.read_frame(patience(2s));
      ASSERT_TRUE(reply.has_value());
      EXPECT_EQ(reply->header.request_id, id);
      EXPECT_EQ(reply->header.status, corvid::rpc_errc::ok);
    }
  }  // the attacker leaves
  w.expect_released("stream frames for unknown streams");
  w.expect_good_client_served("stream frames for unknown streams");
}

TEST(hostile_peers, frame_types_a_client_must_not_send_are_protocol_errors) {
  hostile_server srv(hostile_server::config(32 * MiB));
  attack_watch w(srv);
  const std::vector<std::pair<std::string, std::string>> frames = {
      {"response (2)", corvid_attack::header_bytes(msg_type::response, 9)},
      {"rdma_setup (6) after a request", corvid_attack::header_bytes(static_cast<msg_type>(6), 1)},
      {"type 0", corvid_attack::header_bytes(static_cast<msg_type>(0), 9)},
      {"type 10", corvid_attack::header_bytes(static_cast<msg_type>(10), 9)},
      {"type 255", corvid_attack::header_bytes(static_cast<msg_type>(255), 9)},
  };
  for (const auto& [what, frame] : frames) {
    SCOPED_TRACE(what);
    raw_socket c(srv.port());
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send(corvid_attack::encoded_request(5, echo_id, std::string_view("first")) +
                       frame +
                       corvid_attack::encoded_request(6, echo_id, std::string_view("after"))));
    auto first = c.read_frame(patience(2s));
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->header.request_id, 5u);
    EXPECT_EQ(first->header.status, corvid::rpc_errc::ok);
    auto error = c.read_frame(patience(2s));
    ASSERT_TRUE(error.has_value()) << "no reply to the forbidden frame";
    EXPECT_EQ(error->header.request_id, 0u) << "the request after it was served";
    EXPECT_EQ(error->header.status, corvid::rpc_errc::protocol_error);
    EXPECT_TRUE(c.closed_by_peer_within(patience(2s)));
  }
  w.expect_released("forbidden frame types");
  w.expect_good_client_served("forbidden frame types");
}

}  // namespace
}  // namespace corvid_test
