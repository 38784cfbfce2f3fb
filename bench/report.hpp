// Result records and their renderings (markdown, CSV, JSON, PNG) for corvid-bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace corvid::bench {

// One point of the payload x concurrency grid.
struct cell_result {
  std::string transport;
  std::size_t payload = 0;        // request bytes
  std::size_t response_size = 0;  // reply bytes (== payload when echo)
  bool echo = true;
  int concurrency = 0;  // calls in flight
  int connections = 0;
  double seconds = 0;  // measured window
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  double gbps = 0;
  double qps = 0;
  double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0;
  double client_rpcs_per_write = -1;    // negative = not measured
  double server_rpcs_per_write = -1;    // negative = not measured
  double server_allocs_per_call = -1;   // negative = not measured
  std::uint64_t server_peak_bytes = 0;  // 0 = not measured
};

// "128B", "4K", "32K", "256K", "1M", "8M", "1G"; sizes that are not a whole number of the
// unit stay in bytes ("1500B") so the label is never a rounded lie.
std::string format_size(std::size_t bytes);
// `v` with `decimals` digits after the point, for the tables.
std::string fixed(double v, int decimals);

// Generic markdown table for the experiment sub-commands. Columns are padded so the text is
// readable unrendered; a column whose cells are all numbers (or "-") is right-aligned.
struct table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  void print_markdown(std::ostream& out) const;
};

// The docs/benchmarks.md grid table; the size is printed only on the first row of each run of
// equal payloads.
void print_grid_table(std::ostream& out, const std::vector<cell_result>& cells);

// Every field, one row/object per cell; doubles in shortest round-trip form.
void write_csv(std::ostream& out, const std::vector<cell_result>& cells);
void write_json(std::ostream& out, const std::vector<cell_result>& cells);

// Draws qps vs concurrency and Gb/s vs payload into one PNG through gnuplot (plot.cpp).
// Returns false with a readable message in `error` if gnuplot is missing or fails.
bool write_plot(const std::string& png_path, const std::vector<cell_result>& cells,
                std::string& error);

}  // namespace corvid::bench
