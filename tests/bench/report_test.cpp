#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

// Boost.JSON built header-only in this TU: an independent parser to check write_json().
#include <boost/json/src.hpp>
#include <gtest/gtest.h>

#include "report.hpp"

namespace corvid::bench {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back().push_back(c);
    }
  }
  return out;
}

// Markdown row "| a | b |" -> {"a", "b"}.
std::vector<std::string> md_cells(const std::string& row) {
  auto parts = split(row, '|');
  std::vector<std::string> out(parts.begin() + 1, parts.end() - 1);
  for (auto& p : out)
    p = p.substr(p.find_first_not_of(' ') == std::string::npos ? p.size()
                                                               : p.find_first_not_of(' '));
  for (auto& p : out) p.erase(p.find_last_not_of(' ') + 1);
  return out;
}

std::vector<cell_result> grid() {
  std::vector<cell_result> cells;
  for (std::size_t size : {128, 4096}) {
    for (int conc : {1, 4, 16}) {
      cell_result c;
      c.transport = "tcp";
      c.payload = c.response_size = size;
      c.concurrency = conc;
      c.connections = 1;
      c.seconds = 5;
      c.calls = 1000u * static_cast<unsigned>(conc);
      c.gbps = 0.04 * conc;
      c.qps = 43394.4 * conc;
      c.p50_us = 7.46;
      c.p90_us = 24.4;
      c.p99_us = 26.6;
      c.p999_us = 1234.4;
      c.client_rpcs_per_write = conc == 1 ? -1 : 3.26;
      c.server_rpcs_per_write = 1;
      c.server_allocs_per_call = conc == 16 ? 0.126 : -1;
      cells.push_back(c);
    }
  }
  return cells;
}

TEST(report, format_size) {
  EXPECT_EQ(format_size(128), "128B");
  EXPECT_EQ(format_size(4096), "4K");
  EXPECT_EQ(format_size(32768), "32K");
  EXPECT_EQ(format_size(262144), "256K");
  EXPECT_EQ(format_size(1 << 20), "1M");
  EXPECT_EQ(format_size(8 << 20), "8M");
  EXPECT_EQ(format_size(std::size_t{1} << 30), "1G");
  EXPECT_EQ(format_size(0), "0B");
  EXPECT_EQ(format_size(1500), "1500B");
  EXPECT_EQ(format_size(1536), "1536B");
  EXPECT_EQ(format_size(1536 * 1024), "1536K");
}

TEST(report, grid_table) {
  std::ostringstream out;
  print_grid_table(out, grid());
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 2u + 6u);  // header, separator, one row per cell
  const auto header = md_cells(lines[0]);
  ASSERT_EQ(header.size(), 13u);
  EXPECT_EQ(header[0], "size");
  EXPECT_EQ(header[6], "P99.9(us)");
  EXPECT_EQ(header[11], "allocs/call server");
  EXPECT_EQ(header[12], "peak MiB server");
  EXPECT_EQ(md_cells(lines[1])[2].back(), ':');  // numbers right-aligned
  const auto r0 = md_cells(lines[2]);
  EXPECT_EQ(r0, (std::vector<std::string>{"128B", "1", "0.04", "7.5", "24", "27", "1234", "43394",
                                          "0", "-", "1.0", "-", "-"}));
  EXPECT_EQ(md_cells(lines[3])[0], "");  // size only on the group's first row
  EXPECT_EQ(md_cells(lines[4])[0], "");
  EXPECT_EQ(md_cells(lines[4])[11], "0.13");
  EXPECT_EQ(md_cells(lines[4])[9], "3.3");
  EXPECT_EQ(md_cells(lines[5])[0], "4K");
  EXPECT_EQ(md_cells(lines[7])[7], "694310");
}

TEST(report, generic_table_pads_and_aligns) {
  table t{{"name", "µs"}, {{"alpha", "1.5"}, {"b", "-"}, {"c"}}};
  std::ostringstream out;
  t.print_markdown(out);
  EXPECT_EQ(out.str(),
            "| name  |  µs |\n"
            "| ----- | --: |\n"
            "| alpha | 1.5 |\n"
            "| b     |   - |\n"
            "| c     |     |\n");
}

TEST(report, csv_header_and_one_line_per_cell) {
  auto cells = grid();
  cells[0].transport = "tcp, \"nodelay\"";
  std::ostringstream out;
  write_csv(out, cells);
  const auto lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 1 + cells.size());
  const auto header = split(lines[0], ',');
  EXPECT_EQ(header.size(), 19u);
  EXPECT_EQ(header.front(), "transport");
  EXPECT_EQ(header.back(), "server_peak_bytes");
  EXPECT_EQ(lines[1].rfind("\"tcp, \"\"nodelay\"\"\",128,128,true,1,1,5,1000,0,0.04,", 0), 0u)
      << lines[1];
  for (std::size_t i = 2; i < lines.size(); ++i) EXPECT_EQ(split(lines[i], ',').size(), 19u);
}

TEST(report, json_parses_back) {
  auto cells = grid();
  cells[1].transport = "a\"b\\c\n";
  cells[2].gbps = std::numeric_limits<double>::quiet_NaN();
  cells[3].server_peak_bytes = 123456789012;
  std::ostringstream out;
  write_json(out, cells);
  boost::json::error_code ec;
  const auto doc = boost::json::parse(out.str(), ec);
  ASSERT_FALSE(ec) << ec.message() << "\n" << out.str();
  const auto& arr = doc.as_array();
  ASSERT_EQ(arr.size(), cells.size());
  for (const auto& v : arr) EXPECT_EQ(v.as_object().size(), 19u);
  EXPECT_EQ(arr[1].at("transport").as_string(), "a\"b\\c\n");
  EXPECT_EQ(arr[0].at("payload").to_number<std::size_t>(), 128u);
  EXPECT_EQ(arr[0].at("echo").as_bool(), true);
  EXPECT_DOUBLE_EQ(arr[4].at("qps").to_number<double>(), 43394.4 * 4);
  EXPECT_DOUBLE_EQ(arr[0].at("client_rpcs_per_write").to_number<double>(), -1);
  EXPECT_TRUE(arr[2].at("gbps").is_null());
  EXPECT_EQ(arr[3].at("server_peak_bytes").to_number<std::uint64_t>(), 123456789012u);

  std::ostringstream empty;
  write_json(empty, {});
  EXPECT_TRUE(boost::json::parse(empty.str()).as_array().empty());
}

TEST(report, plot_writes_png) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0) GTEST_SKIP() << "no gnuplot";
  const auto png = std::filesystem::temp_directory_path() /
                   ("corvid-plot-test-" + std::to_string(::getpid()) + ".png");
  std::string error;
  ASSERT_TRUE(write_plot(png.string(), grid(), error)) << error;
  std::ifstream in(png, std::ios::binary);
  char magic[8] = {};
  in.read(magic, 8);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::filesystem::remove(png);

  EXPECT_FALSE(write_plot(png.string(), {}, error));
  EXPECT_FALSE(error.empty());
}

TEST(report, plot_reports_missing_gnuplot) {
  const std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("PATH", "/nonexistent", 1);
  std::string error;
  const bool ok = write_plot("/tmp/never.png", grid(), error);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("gnuplot not found"), std::string::npos) << error;
}

}  // namespace
}  // namespace corvid::bench
