// The status page in a real headless browser (Debian's chromium, installed by scripts/setup):
// it loads, renders, and its DOM holds the called method's row and the client's connection.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "corvid/protocol/function_id.hpp"

#include "test_support.hpp"
#include <sys/wait.h>

namespace corvid_test {
namespace {

std::string chromium_binary() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return {};
}

// Runs chromium headless on `url` with `what` (--dump-dom or --screenshot=FILE); its stdout.
std::string run_chromium(const std::string& bin, const std::string& what, const std::string& url,
                         const std::filesystem::path& dir) {
  const auto out = dir / "stdout.txt";
  // --no-sandbox: tests may run as root; a private profile keeps runs apart.
  const std::string cmd = "timeout 60 " + bin +
                          " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage"
                          " --no-first-run --user-data-dir=" +
                          (dir / "profile").string() + " --window-size=1200,900 " + what + " '" +
                          url + "' >" + out.string() + " 2>" + (dir / "stderr.txt").string();
  const int rc = std::system(cmd.c_str());
  EXPECT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << cmd;
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(status_page, renders_in_headless_chromium) {
  const std::string bin = chromium_binary();
  if (bin.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup installs it)";
  auto cfg = test_server::make_config();
  cfg.http_admin = true;
  test_server srv(cfg);
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, srv.endpoint())));
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < 5; ++i) EXPECT_TRUE((co_await client.call<echo>("hi")).has_value());
    EXPECT_FALSE((co_await client.call<fail_always>(1)).has_value());
  }());
  const auto dir =
      std::filesystem::temp_directory_path() / ("corvid-status-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string url = "http://127.0.0.1:" + std::to_string(srv.port()) + "/status";

  const std::string dom = run_chromium(bin, "--dump-dom", url, dir);
  const std::string echo_name(corvid::protocol::function_name<echo>());
  EXPECT_NE(dom.find("<table id=\"methods\">"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<tr class=\"method\" data-method=\"" + echo_name + "\"><td>" + echo_name +
                     "</td><td>5</td>"),
            std::string::npos)
      << dom;
  EXPECT_NE(dom.find("handler_error=1"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<tr class=\"connection\""), std::string::npos) << dom;

  const auto png = dir / "status.png";
  run_chromium(bin, "--screenshot=" + png.string(), url, dir);
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 10'000u);
  // CORVID_STATUS_SCREENSHOT=path keeps a copy (docs/status-page.png is made this way).
  if (const char* keep = std::getenv("CORVID_STATUS_SCREENSHOT")) {
    std::filesystem::copy_file(png, keep, std::filesystem::copy_options::overwrite_existing);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace corvid_test
