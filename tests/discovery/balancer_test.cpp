// load_balancer::open() on list:// and file://, consistent hashing with bounded load through
// real servers, and the health method (serving / not_serving / draining) as balancers follow
// it through each endpoint's watch.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "background_quiet.hpp"
#include "child_process.hpp"
#include "connect.hpp"
#include "discovery_support.hpp"

namespace discovery_test {
namespace {

using corvid::test::eventually;
using corvid::test::patience;

TEST(open, rejects_bad_names_with_a_clear_error) {
  for (const char* url : {"ftp://x", "list://", "list://hostwithoutport", "etcd://127.0.0.1:1",
                          "etcd://nohostport/prefix", "dns://noport", "file:///nonexistent/file"}) {
    auto lb = corvid::sync_wait(corvid::load_balancer::open(url));
    ASSERT_FALSE(lb) << url;
    EXPECT_FALSE(lb.error().message().empty()) << url;
  }
}

TEST(open, list_names_fixed_endpoints) {
  named_server a("a"), b("b");
  auto lb = open_balancer("list://" + a.endpoint() + ", " + b.endpoint());
  std::vector<std::string> want{a.endpoint(), b.endpoint()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(addresses(*lb), want);
  EXPECT_EQ(spread(*lb, 100), (std::map<std::string, int>{{"a", 50}, {"b", 50}}));
}

TEST(open, file_is_read_again_when_it_changes) {
  named_server a("a"), b("b");
  const std::string path =
      (std::filesystem::temp_directory_path() / ("corvid-endpoints-" + std::to_string(::getpid())))
          .string();
  std::ofstream(path) << "# the echo service\n" << a.endpoint() << "\n";
  corvid::lb_config cfg;
  cfg.file_poll_interval = 20ms;
  auto lb = open_balancer("file://" + path, cfg);
  EXPECT_EQ(addresses(*lb), std::vector<std::string>{a.endpoint()});
  // Replaced the way configuration tools do it: a new file renamed over the old one.
  std::ofstream(path + ".new") << b.endpoint() << "\n\n";
  std::filesystem::rename(path + ".new", path);
  EXPECT_TRUE(eventually([&] { return addresses(*lb) == std::vector<std::string>{b.endpoint()}; },
                         patience(5s)));
  EXPECT_EQ(spread(*lb, 10), (std::map<std::string, int>{{"b", 10}}));
  // A file that vanishes keeps the last endpoints.
  std::filesystem::remove(path);
  std::this_thread::sleep_for(100ms);  // several polls; nothing must change
  EXPECT_EQ(addresses(*lb), std::vector<std::string>{b.endpoint()});
}

TEST(consistent_hash, a_key_stays_on_one_endpoint_and_two_clients_agree) {
  named_server a("a"), b("b"), c("c");
  corvid::lb_config cfg;
  cfg.policy = corvid::lb_policy::consistent_hash;
  auto url = "list://" + a.endpoint() + "," + b.endpoint() + "," + c.endpoint();
  auto first = open_balancer(url, cfg);
  // The second learns them in another order, as another process might.
  auto second =
      open_balancer("list://" + c.endpoint() + "," + a.endpoint() + "," + b.endpoint(), cfg);
  std::set<std::string> used;
  for (int k = 0; k < 60; ++k) {
    const std::string key = "user:" + std::to_string(k);
    auto s1 = spread(*first, 5, key);
    auto s2 = spread(*second, 5, key);
    ASSERT_EQ(s1.size(), 1u) << key;
    EXPECT_EQ(s1, s2) << key;
    used.insert(s1.begin()->first);
  }
  EXPECT_EQ(used.size(), 3u);  // 60 keys land on every endpoint
  // Calls without a key still reach every endpoint (power of two choices).
  EXPECT_EQ(spread(*first, 300).size(), 3u);
}

TEST(consistent_hash, a_hot_key_spills_past_the_load_bound) {
  named_server a("a"), b("b"), c("c"), d("d");
  corvid::lb_config cfg;
  cfg.policy = corvid::lb_policy::consistent_hash;
  cfg.hash_load_factor = 1.25;
  auto lb = open_balancer(
      "list://" + a.endpoint() + "," + b.endpoint() + "," + c.endpoint() + "," + d.endpoint(), cfg);
  // 100 callers at once, each holding its call for a while: all in flight together.
  constexpr int calls = 100;
  std::map<std::string, int> seen;
  std::mutex seen_mutex;
  std::vector<std::thread> callers;
  for (int i = 0; i < calls; ++i) {
    callers.emplace_back([&] {
      corvid::call_options o;
      o.hash_key = "the-hot-key";
      auto r = corvid::sync_wait(lb->call_with<&identity::hold>(o, 500));
      std::lock_guard lk(seen_mutex);
      ++seen[r ? r->value : "!" + std::string(corvid::to_string(r.error().code()))];
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(seen.count("!timeout") + seen.count("!connect_failed"), 0u);
  // No pick saw more than `calls` in flight: none let a server hold more than
  // ceil(1.25 * (calls + 1) / 4).
  const int bound = ((calls + 1) * 125 + 399) / 400;
  for (auto* s : {&a, &b, &c, &d}) EXPECT_LE(s->id().max_holding.load(), bound) << s->id().name;
  EXPECT_GE(seen.size(), 2u);  // it spilled
}

TEST(health, answers_serving_not_serving_and_draining) {
  auto cfg = server_config();
  named_server s("s", cfg);
  auto pool = corvid::client_pool::create(s.endpoint());
  auto ask = [&] {
    return corvid::sync_wait(pool->call<&corvid::health_service::check>());
  };
  ASSERT_TRUE(ask());
  EXPECT_EQ(*ask(), corvid::health_status::serving);
  s.server().set_serving(false);
  EXPECT_EQ(*ask(), corvid::health_status::not_serving);
  s.server().set_serving(true);
  EXPECT_EQ(*ask(), corvid::health_status::serving);
}

TEST(health, watch_streams_each_change_and_ends_with_draining) {
  auto cfg = server_config();
  cfg.registry.clear();
  named_server s("s", cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s.endpoint())));
  using hs = corvid::health_status;
  std::mutex seen_mutex;
  std::vector<hs> seen;
  auto seen_now = [&] {
    std::lock_guard lk(seen_mutex);
    return seen;
  };
  std::thread watcher([&] {
    corvid::sync_wait([&]() -> corvid::task<void> {
      auto w = co_await client.stream<&corvid::health_service::watch>();
      if (!w) {
        ADD_FAILURE() << w.error().message();
        co_return;
      }
      while (auto st = co_await w->next()) {
        std::lock_guard lk(seen_mutex);
        seen.push_back(*st);
      }
      EXPECT_FALSE(w->error()) << w->error().message();
    }());
  });
  // Each change once the one before has arrived (changes in between may merge into one).
  ASSERT_TRUE(eventually([&] { return seen_now().size() == 1; }, patience(5s)));
  s.server().set_serving(false);
  ASSERT_TRUE(eventually([&] { return seen_now().size() == 2; }, patience(5s)));
  s.server().set_serving(true);
  ASSERT_TRUE(eventually([&] { return seen_now().size() == 3; }, patience(5s)));
  s.server().stop();  // the watch says draining and ends: the stop is not held up by it
  watcher.join();
  EXPECT_EQ(seen, (std::vector<hs>{hs::serving, hs::not_serving, hs::serving, hs::draining}));
}

// The server's count of watches running now, from its metrics.
int watches_running(corvid::rpc_server& server) {
  const std::string t = server.metrics_text();
  const std::string key = "corvid_server_requests_in_flight{method=\"";
  for (auto at = t.find(key); at != std::string::npos; at = t.find(key, at + 1)) {
    const auto line_end = t.find('\n', at);
    const std::string line = t.substr(at, line_end - at);
    if (line.find("watch\"}") != std::string::npos) return std::stoi(line.substr(line.rfind(' ')));
  }
  return -1;
}

TEST(health, a_watch_ends_as_soon_as_its_client_goes_away) {
  named_server s("s");
  {
    corvid::rpc_client client;
    ASSERT_FALSE(corvid::sync_wait(corvid::test::connect(client, s.endpoint())));
    auto first = corvid::sync_wait([&]() -> corvid::task<std::optional<corvid::health_status>> {
      auto w = co_await client.stream<&corvid::health_service::watch>();
      if (!w) co_return std::nullopt;
      auto st = co_await w->next();
      EXPECT_EQ(watches_running(s.server()), 1);
      co_return st;
    }());  // the reader is gone
    EXPECT_EQ(first, corvid::health_status::serving);
  }  // and the connection
  // Not at its next item (30 s away): a watch nobody reads no longer counts as a balancer
  // following the server, whose stop() would wait drain_delay for it.
  EXPECT_TRUE(eventually([&] { return watches_running(s.server()) == 0; }, patience(5s)));
}

// What the balancer follows: each endpoint's health watch, open once stats() says `watched`.
bool watched(const corvid::load_balancer& lb, const std::string& address) {
  return stats_of(lb, address).watched;
}

TEST(health, a_server_not_serving_gets_no_calls_until_it_serves_again) {
  named_server a("a"), b("b");
  auto lb = open_balancer("list://" + a.endpoint() + "," + b.endpoint());
  ASSERT_TRUE(eventually([&] { return watched(*lb, b.endpoint()); }, patience(5s)));
  b.server().set_serving(false);
  ASSERT_TRUE(eventually([&] { return stats_of(*lb, b.endpoint()).not_serving; }, patience(5s)));
  EXPECT_EQ(spread(*lb, 40), (std::map<std::string, int>{{"a", 40}}));
  b.server().set_serving(true);
  ASSERT_TRUE(eventually([&] { return !stats_of(*lb, b.endpoint()).not_serving; }, patience(5s)));
  EXPECT_EQ(spread(*lb, 40), (std::map<std::string, int>{{"a", 20}, {"b", 20}}));
}

TEST(health, a_draining_server_gets_no_new_calls_and_no_call_fails) {
  named_server a("a"), b("b");  // drain_delay 300 ms, no registry
  auto lb = open_balancer("list://" + a.endpoint() + "," + b.endpoint());
  ASSERT_TRUE(eventually([&] { return watched(*lb, a.endpoint()) && watched(*lb, b.endpoint()); },
                         patience(5s)));
  // Several callers: calls are on their way to b whenever it stops.
  constexpr int callers = 4;
  std::vector<std::unique_ptr<caller>> calls;
  for (int i = 0; i < callers; ++i) calls.push_back(std::make_unique<caller>(*lb));
  auto answered_by = [&](const std::string& name) {
    int n = 0;
    for (auto& c : calls) n += c->answered_by(name);
    return n;
  };
  ASSERT_TRUE(eventually([&] { return answered_by("b") > 10 * callers; }, patience(5s)));
  // Draining: its watch says so at once; drain_delay later it stops reading and closes.
  std::thread stopper([&] { b.server().stop(); });
  ASSERT_TRUE(eventually([&] { return stats_of(*lb, b.endpoint()).not_serving; }, patience(5s)));
  const int b_calls = answered_by("b");
  stopper.join();  // b has drained and closed its connections
  const int a_calls = answered_by("a");
  ASSERT_TRUE(eventually([&] { return answered_by("a") > a_calls + 50; }, patience(5s)));
  for (auto& c : calls) {
    c->stop();
    EXPECT_EQ(c->failed(), 0) << c->last_error();
  }
  // At most the calls that were on their way when the watch's word arrived: one a caller.
  EXPECT_LE(answered_by("b") - b_calls, callers);
}

// registered_server (not registered) in its own process, to be SIGKILLed: its sockets close
// with no goodbye, so the balancer's watch breaks rather than ends.
class peer_server {
 public:
  explicit peer_server(const std::string& name, std::uint16_t port = 0)
      : log_((std::filesystem::temp_directory_path() /
              ("corvid-peer-" + name + "-" + std::to_string(::getpid()) + "-" +
               std::to_string(++started) + ".log"))
                 .string()),
        process_(REGISTERED_SERVER_PATH, {"", name, "1", std::to_string(port)}, log_) {
    unsigned p = 0;
    if (!eventually(
            [&] {
              const auto log = process_.log();
              const auto at = log.find("port ");
              return at != std::string::npos && std::sscanf(log.c_str() + at, "port %u", &p) == 1;
            },
            patience(10s))) {
      throw std::runtime_error("peer server never said its port: " + process_.log());
    }
    port_ = static_cast<std::uint16_t>(p);
  }
  ~peer_server() {
    process_.stop(SIGKILL);
    std::filesystem::remove(log_);
  }
  peer_server(const peer_server&) = delete;
  peer_server& operator=(const peer_server&) = delete;
  std::uint16_t port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void kill() { process_.stop(SIGKILL); }
  // SIGUSR1: health not_serving; SIGUSR2: serving.
  void signal(int sig) { process_.signal(sig); }

 private:
  static inline int started = 0;  // each its own log (the log is appended to)
  std::string log_;
  corvid::test::child_process process_;
  std::uint16_t port_ = 0;
};

corvid::lb_config quick_watch_config() {
  corvid::lb_config cfg;
  // The watch re-opens within ~200 ms of its server's return.
  cfg.pool.reconnect_backoff_initial = 10ms;
  cfg.pool.reconnect_backoff_max = 200ms;
  return cfg;
}

TEST(health, the_watch_resumes_after_its_connection_breaks) {
  named_server a("a");
  auto first = std::make_unique<peer_server>("c");
  const auto port = first->port();
  const auto c = first->endpoint();
  auto lb = open_balancer("list://" + a.endpoint() + "," + c, quick_watch_config());
  ASSERT_TRUE(eventually([&] { return watched(*lb, c); }, patience(5s)));
  first->kill();
  ASSERT_TRUE(eventually([&] { return !watched(*lb, c); }, patience(5s)));
  peer_server second("c", port);
  ASSERT_TRUE(eventually([&] { return watched(*lb, c); }, patience(5s)));
  // What the new process says is followed.
  second.signal(SIGUSR1);
  ASSERT_TRUE(eventually([&] { return stats_of(*lb, c).not_serving; }, patience(5s)));
  EXPECT_EQ(spread(*lb, 20), (std::map<std::string, int>{{"a", 20}}));
  second.signal(SIGUSR2);
  ASSERT_TRUE(eventually([&] { return !stats_of(*lb, c).not_serving; }, patience(5s)));
  EXPECT_EQ(spread(*lb, 20), (std::map<std::string, int>{{"a", 10}, {"c", 10}}));
}

TEST(health, an_ejected_endpoint_returns_when_its_watch_says_serving) {
  named_server a("a");
  auto first = std::make_unique<peer_server>("c");
  const auto port = first->port();
  const auto c = first->endpoint();
  auto cfg = quick_watch_config();
  cfg.eject_base = cfg.eject_max = 60s;  // no probe during the test: only the watch brings it back
  auto lb = open_balancer("list://" + a.endpoint() + "," + c, cfg);
  ASSERT_TRUE(eventually([&] { return watched(*lb, c); }, patience(5s)));
  first->kill();
  // Calls find it gone (and go to a instead): ejected for a minute.
  ASSERT_TRUE(eventually(
      [&] {
        spread(*lb, 4);
        return stats_of(*lb, c).ejected;
      },
      patience(5s)));
  peer_server second("c", port);
  ASSERT_TRUE(eventually([&] { return spread(*lb, 4).count("c") > 0; }, patience(5s)));
  EXPECT_FALSE(stats_of(*lb, c).ejected);
}

TEST(health, an_ejected_endpoint_is_probed_with_the_health_method) {
  named_server a("a");
  auto b = std::make_unique<named_server>("b");
  const std::string b_endpoint = b->endpoint();
  corvid::lb_config cfg;
  cfg.eject_base = 50ms;
  cfg.follow_health = false;  // the probe alone brings it back
  auto lb = open_balancer("list://" + a.endpoint() + "," + b_endpoint, cfg);
  EXPECT_EQ(spread(*lb, 10).size(), 2u);
  const auto port = b->server().port();
  b.reset();  // b goes away: calls that cannot reach it are sent elsewhere
  auto seen = spread(*lb, 40);
  // One call may have been written to b's connection just as b closed it: sent, so it is
  // not safe to repeat (connection_closed). None may fail for want of reaching b.
  EXPECT_GE(seen["a"], 39);
  EXPECT_EQ(seen.count("!connect_failed"), 0u);
  EXPECT_EQ(seen.count("b"), 0u);
  // b returns on the same port: the probe (a health call) brings it back.
  auto back_cfg = server_config();
  back_cfg.port = port;
  named_server b2("b", back_cfg);
  EXPECT_TRUE(eventually([&] { return spread(*lb, 4).count("b") > 0; }, patience(5s)));
}

}  // namespace
}  // namespace discovery_test
