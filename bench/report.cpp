#include "report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace corvid::bench {

// g++ 12 has no <format>; snprintf with a fixed precision is what the tables need.
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

namespace {

// Shortest text that parses back to the same double: CSV/JSON lose nothing.
std::string exact(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::string("nan");
}

// Microseconds: integers hide sub-10us differences, decimals above that are noise.
std::string micros(double us) { return fixed(us, us < 10 ? 1 : 0); }

std::string ratio(double v, int decimals) { return v < 0 ? "-" : fixed(v, decimals); }

// Display width in UTF-8 code points, so "µs" pads like "us".
std::size_t width(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; }));
}

bool is_number(const std::string& s) {
  if (s.empty() || s == "-") return true;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

enum class kind { string, number, boolean };
struct field {
  const char* name;
  std::string value;
  kind type;
};

// The single list of fields, shared by CSV and JSON so the two can never disagree.
std::vector<field> fields_of(const cell_result& c) {
  auto num = [](auto v) {
    return std::to_string(v);
  };
  return {
      {"transport", c.transport, kind::string},
      {"payload", num(c.payload), kind::number},
      {"response_size", num(c.response_size), kind::number},
      {"echo", c.echo ? "true" : "false", kind::boolean},
      {"concurrency", num(c.concurrency), kind::number},
      {"connections", num(c.connections), kind::number},
      {"seconds", exact(c.seconds), kind::number},
      {"calls", num(c.calls), kind::number},
      {"errors", num(c.errors), kind::number},
      {"gbps", exact(c.gbps), kind::number},
      {"qps", exact(c.qps), kind::number},
      {"p50_us", exact(c.p50_us), kind::number},
      {"p90_us", exact(c.p90_us), kind::number},
      {"p99_us", exact(c.p99_us), kind::number},
      {"p999_us", exact(c.p999_us), kind::number},
      {"client_rpcs_per_write", exact(c.client_rpcs_per_write), kind::number},
      {"server_rpcs_per_write", exact(c.server_rpcs_per_write), kind::number},
      {"server_allocs_per_call", exact(c.server_allocs_per_call), kind::number},
      {"server_peak_bytes", num(c.server_peak_bytes), kind::number},
  };
}

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace

std::string format_size(std::size_t bytes) {
  static constexpr const char* units[] = {"B", "K", "M", "G", "T"};
  std::size_t unit = 0;
  while (unit + 1 < std::size(units) && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + units[unit];
}

void table::print_markdown(std::ostream& out) const {
  const std::size_t n = header.size();
  std::vector<std::size_t> widths(n, 3);  // "---" is the shortest separator
  std::vector<bool> right(n, true);
  for (std::size_t i = 0; i < n; ++i) widths[i] = std::max(widths[i], width(header[i]));
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < n && i < row.size(); ++i) {
      widths[i] = std::max(widths[i], width(row[i]));
      right[i] = right[i] && is_number(row[i]);
    }
  }
  auto line = [&](const std::vector<std::string>& cells) {
    out << '|';
    for (std::size_t i = 0; i < n; ++i) {
      const std::string cell = i < cells.size() ? cells[i] : std::string();
      const std::string pad(widths[i] - width(cell), ' ');
      out << ' ' << (right[i] ? pad + cell : cell + pad) << " |";
    }
    out << '\n';
  };
  line(header);
  out << '|';
  for (std::size_t i = 0; i < n; ++i) {
    out << ' ' << std::string(widths[i] - (right[i] ? 1 : 0), '-') << (right[i] ? ":" : "") << " |";
  }
  out << '\n';
  for (const auto& row : rows) line(row);
}

void print_grid_table(std::ostream& out, const std::vector<cell_result>& cells) {
  table t;
  t.header = {"size",
              "concurrency",
              "Gb/s",
              "P50(us)",
              "P90(us)",
              "P99(us)",
              "P99.9(us)",
              "qps",
              "errors",
              "RPCs/write client",
              "RPCs/write server",
              "allocs/call server",
              "peak MiB server"};
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const cell_result& c = cells[i];
    const bool first = i == 0 || cells[i - 1].payload != c.payload;
    t.rows.push_back({first ? format_size(c.payload) : "", std::to_string(c.concurrency),
                      fixed(c.gbps, 2), micros(c.p50_us), micros(c.p90_us), micros(c.p99_us),
                      micros(c.p999_us), fixed(c.qps, 0), std::to_string(c.errors),
                      ratio(c.client_rpcs_per_write, 1), ratio(c.server_rpcs_per_write, 1),
                      ratio(c.server_allocs_per_call, 2),
                      c.server_peak_bytes == 0
                          ? std::string("-")
                          : fixed(static_cast<double>(c.server_peak_bytes) / (1 << 20), 1)});
  }
  t.print_markdown(out);
}

void write_csv(std::ostream& out, const std::vector<cell_result>& cells) {
  const auto names = fields_of(cell_result{});
  for (std::size_t i = 0; i < names.size(); ++i) out << (i ? "," : "") << names[i].name;
  out << '\n';
  for (const auto& c : cells) {
    const auto fields = fields_of(c);
    for (std::size_t i = 0; i < fields.size(); ++i) {
      out << (i ? "," : "") << csv_quote(fields[i].value);
    }
    out << '\n';
  }
}

void write_json(std::ostream& out, const std::vector<cell_result>& cells) {
  out << '[';
  for (std::size_t i = 0; i < cells.size(); ++i) {
    out << (i ? ",\n  {" : "\n  {");
    const auto fields = fields_of(cells[i]);
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const field& fd = fields[f];
      out << (f ? ", " : "") << json_quote(fd.name) << ": ";
      if (fd.type == kind::string) {
        out << json_quote(fd.value);
      } else if (fd.type == kind::number &&
                 !std::isfinite(std::strtod(fd.value.c_str(), nullptr))) {
        out << "null";  // JSON has no NaN/Infinity
      } else {
        out << fd.value;
      }
    }
    out << '}';
  }
  out << (cells.empty() ? "]\n" : "\n]\n");
}

}  // namespace corvid::bench
