// A real Prometheus (Debian's `prometheus`, optional: skipped when absent) scrapes the RPC port
// (http_admin) and its query API returns what the server counted.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <string>
#include <unistd.h>
#include <vector>

#include "corvid/protocol/function_id.hpp"

#include "http_client.hpp"
#include "test_support.hpp"
#include <sys/wait.h>

extern char** environ;

namespace corvid_test {
namespace {

constexpr const char* prometheus_binary = "/usr/bin/prometheus";

std::uint16_t free_port() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// The child process, killed and reaped at scope exit.
class child {
 public:
  explicit child(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~child() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

TEST(prometheus_scrape, real_prometheus_scrapes_the_rpc_port) {
  if (!std::filesystem::exists(prometheus_binary)) {
    GTEST_SKIP() << "Debian's prometheus is not installed (optional)";
  }
  auto cfg = test_server::make_config();
  cfg.http_admin = true;
  test_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < 3; ++i) EXPECT_TRUE((co_await client.call<echo>("x")).has_value());
  }());

  const auto dir =
      std::filesystem::temp_directory_path() / ("corvid-prometheus-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
         "scrape_configs:\n  - job_name: corvid\n    static_configs:\n      - targets: ['127.0.0.1:"
      << srv.port() << "']\n";
  const std::uint16_t web = free_port();
  std::string result;
  {
    child prom({prometheus_binary, "--config.file=" + (dir / "prometheus.yml").string(),
                "--storage.tsdb.path=" + (dir / "data").string(),
                "--web.listen-address=127.0.0.1:" + std::to_string(web)},
               (dir / "prometheus.log").string());
    ASSERT_TRUE(prom.started());
    // %7B method = "corvid_test::echo" %7D, URL-encoded.
    const std::string query =
        "/api/v1/query?query=corvid_server_calls_total%7Bmethod%3D%22corvid_test%3A%3Aecho%22%7D";
    const bool scraped = eventually(
        [&] {
          try {
            result = body_of(http_get(web, query));
          } catch (const std::exception&) {  // not listening yet
            return false;
          }
          return result.find("\"3\"]") != std::string::npos;
        },
        30s);
    EXPECT_TRUE(scraped) << result;
    const std::string targets = body_of(http_get(web, "/api/v1/targets"));
    EXPECT_NE(targets.find("\"health\":\"up\""), std::string::npos) << targets;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace corvid_test
