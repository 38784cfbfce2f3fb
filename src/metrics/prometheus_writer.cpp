#include "prometheus_writer.hpp"

#include <cstdio>

namespace corvid::metrics {
namespace {

// Histogram bounds in seconds (le), from 1 us to 10 s. A fine bucket counts towards a bound
// when all its values are within it; the fine buckets are <= 1/64 of their value wide, so a
// bound's count is off by at most the calls within 1.6% below it.
constexpr double le_bounds[] = {1e-6, 2.5e-6, 5e-6,   1e-5, 2.5e-5, 5e-5,   1e-4, 2.5e-4,
                                5e-4, 1e-3,   2.5e-3, 5e-3, 1e-2,   2.5e-2, 5e-2, 0.1,
                                0.25, 0.5,    1.0,    2.5,  5.0,    10.0};

}  // namespace

void prometheus_writer::family(const char* name, const char* type, const char* help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;  // constant texts, no \ or newline to escape
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void prometheus_writer::single(const char* name, const char* type, const char* help, double value) {
  family(name, type, help);
  sample(name, {}, value);
}

void prometheus_writer::sample(std::string_view name, labels l, double value) {
  out_ += name;
  if (l.size() != 0) {
    out_ += '{';
    bool first = true;
    for (const auto& [k, v] : l) {
      if (!first) out_ += ',';
      first = false;
      out_ += k;
      out_ += "=\"";
      out_ += escape_label(v);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  number(value);
  out_ += '\n';
}

void prometheus_writer::error_counts(std::string_view family, const method_totals& m) {
  for (std::size_t c = 1; c < errc_count; ++c) {
    if (m.errors[c] == 0) continue;
    sample(family, {{"method", m.name}, {"code", to_string(static_cast<rpc_errc>(c))}},
           static_cast<double>(m.errors[c]));
  }
}

void prometheus_writer::duration_histogram(const std::string& family, const method_totals& m) {
  const std::string bucket = family + "_bucket";
  std::size_t b = 0;
  std::uint64_t cumulative = 0;
  char le[32];
  for (double bound : le_bounds) {
    const auto bound_ns = static_cast<std::uint64_t>(bound * 1e9 + 0.5);
    while (b < m.buckets.size() && latency_histogram::bucket_high(b) <= bound_ns) {
      cumulative += m.buckets[b++];
    }
    std::snprintf(le, sizeof le, "%g", bound);
    sample(bucket, {{"method", m.name}, {"le", le}}, static_cast<double>(cumulative));
  }
  sample(bucket, {{"method", m.name}, {"le", "+Inf"}}, static_cast<double>(m.latency_count));
  sample(family + "_sum", {{"method", m.name}}, static_cast<double>(m.latency_sum_ns) / 1e9);
  sample(family + "_count", {{"method", m.name}}, static_cast<double>(m.latency_count));
}

void prometheus_writer::number(double v) {
  char buf[64];
  // Integers exactly (counters up to 2^53), fractions with enough digits to round-trip.
  if (v == static_cast<double>(static_cast<std::int64_t>(v)) && v < 9.0e15 && v > -9.0e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", v);
  }
  out_ += buf;
}

std::string escape_label(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace corvid::metrics
