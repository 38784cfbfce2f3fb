// PNG rendering through gnuplot: corvid-bench writes the data + script, gnuplot draws.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include "report.hpp"
#include <sys/wait.h>

namespace corvid::bench {
namespace {

namespace fs = std::filesystem;

bool on_path(const std::string& exe) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((fs::path(dir) / exe).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// gnuplot single-quoted string: only ' needs escaping, by doubling.
std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// POSIX shell single-quoted string.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One gnuplot data block per series; blocks are selected with `index`. x is the series'
// independent variable, y the metric.
struct series {
  std::string title;
  std::vector<std::pair<double, double>> points;
};

std::string plot_command(const std::string& data, std::size_t first, std::size_t count,
                         const std::vector<series>& all) {
  std::string cmd = "plot ";
  for (std::size_t i = 0; i < count; ++i) {
    cmd += (i ? ", \\\n     " : "") + gp_quote(data) + " index " + std::to_string(first + i) +
           " using 1:2 with linespoints lw 2 pt 7 ps 1.2 title " + gp_quote(all[first + i].title);
  }
  return cmd + "\n";
}

// Two panels: left qps vs concurrency (series 0..left_count), right Gb/s vs payload (the rest).
std::string gnuplot_script(const std::string& png_path, const std::string& data,
                           const std::vector<series>& all, std::size_t left_count,
                           const std::set<int>& concurrencies, const std::set<std::size_t>& sizes) {
  std::ostringstream gp;
  gp << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
        "  set terminal pngcairo size 1400,600 enhanced font 'Sans,11'\n"
        "} else {\n"
        "  set terminal png size 1400,600\n"
        "}\n"
     << "set output " << gp_quote(png_path) << "\n"
     << "set multiplot layout 1,2 title 'corvid-bench'\n"
        "set grid\n"
        "set key outside right top box width 1\n";
  // gnuplot's default 5th/6th colours (yellow, light blue) are unreadable on white.
  const char* colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                           "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#000000"};
  for (int i = 0; i < 10; ++i) gp << "set linetype " << i + 1 << " lc rgb '" << colours[i] << "'\n";

  // Log x ranges are padded so the end points and their tic labels stay off the border.
  gp << "set title 'Throughput (calls/s) vs concurrency'\n"
        "set xlabel 'concurrency (calls in flight)'\n"
        "set ylabel 'qps'\n"
        "set format y '%.0s%c'\n"
        "set key title 'payload'\n"
        "set logscale x 2\n"
        "set logscale y 10\n"
     << "set xrange [" << *concurrencies.begin() / 1.3 << ':' << *concurrencies.rbegin() * 1.3
     << "]\nset xtics (";
  for (auto it = concurrencies.begin(); it != concurrencies.end(); ++it) {
    gp << (it == concurrencies.begin() ? "" : ", ") << *it;
  }
  gp << ")\n" << plot_command(data, 0, left_count, all);

  gp << "set title 'Goodput (Gb/s) vs payload size'\n"
        "set xlabel 'payload size'\n"
        "set ylabel 'Gb/s'\n"
        "set format y '%g'\n"
        "set key title 'concurrency' width 4\n"
        "unset logscale\n"
        "set logscale x 2\n"
        "set yrange [0:*]\n"
        "set offsets 0, 0, graph 0.05, 0\n"  // a saturated line must not sit on the frame
     << "set xrange [" << static_cast<double>(*sizes.begin()) / 1.6 << ':'
     << static_cast<double>(*sizes.rbegin()) * 1.6 << "]\nset xtics (";
  for (auto it = sizes.begin(); it != sizes.end(); ++it) {
    gp << (it == sizes.begin() ? "" : ", ") << gp_quote(format_size(*it)) << ' ' << *it;
  }
  gp << ")\n" << plot_command(data, left_count, all.size() - left_count, all);
  gp << "unset multiplot\n";
  return gp.str();
}

}  // namespace

bool write_plot(const std::string& png_path, const std::vector<cell_result>& cells,
                std::string& error) {
  if (cells.empty()) return error = "no results to plot", false;
  if (!on_path("gnuplot")) {
    return error = "gnuplot not found in PATH (install gnuplot-nox, see scripts/setup)", false;
  }

  // Label series with the transport only when several transports share the plot.
  std::set<std::string> transports;
  for (const auto& c : cells) transports.insert(c.transport);
  auto prefix = [&](const cell_result& c) {
    return transports.size() > 1 ? c.transport + " " : std::string();
  };
  std::map<std::pair<std::string, std::size_t>, series> by_size;  // qps vs concurrency
  std::map<std::pair<std::string, int>, series> by_conc;          // Gb/s vs payload
  std::set<int> concurrencies;
  std::set<std::size_t> sizes;
  for (const auto& c : cells) {
    auto& s = by_size[{c.transport, c.payload}];
    s.title = prefix(c) + format_size(c.payload);
    s.points.emplace_back(c.concurrency, c.qps);
    auto& g = by_conc[{c.transport, c.concurrency}];
    g.title = prefix(c) + std::to_string(c.concurrency);
    g.points.emplace_back(static_cast<double>(c.payload), c.gbps);
    concurrencies.insert(c.concurrency);
    sizes.insert(c.payload);
  }
  std::vector<series> all;
  for (auto& [key, s] : by_size) all.push_back(std::move(s));
  const std::size_t left_count = all.size();
  for (auto& [key, s] : by_conc) all.push_back(std::move(s));

  std::string tmpl = (fs::temp_directory_path() / "corvid-plot-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return error = "cannot create a temp directory", false;
  const fs::path dir = tmpl;
  const fs::path data = dir / "data.dat", script = dir / "plot.gp", log = dir / "gnuplot.log";

  std::ofstream d(data);
  d.precision(12);
  for (auto& s : all) {
    std::sort(s.points.begin(), s.points.end());
    for (auto [x, y] : s.points) d << x << ' ' << y << '\n';
    d << "\n\n";  // two blank lines end a gnuplot `index` block
  }
  d.close();

  std::ofstream(script) << gnuplot_script(png_path, data.string(), all, left_count, concurrencies,
                                          sizes);

  const std::string cmd =
      "gnuplot " + sh_quote(script.string()) + " > " + sh_quote(log.string()) + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::error_code ec;
  const bool ok = rc == 0 && fs::file_size(png_path, ec) > 0 && !ec;
  if (!ok) {
    const int status = WIFEXITED(rc) ? WEXITSTATUS(rc) : rc;  // system() returns a wait status
    error = "gnuplot failed (exit " + std::to_string(status) + "): " + read_all(log);
  }
  fs::remove_all(dir, ec);
  return ok;
}

}  // namespace corvid::bench
