#pragma once
// Writes the Prometheus text exposition (0.0.4) line by line: families (# HELP, # TYPE),
// samples and per-method latency histograms. Shared by the server's exposition
// (prometheus_text.cpp) and the clients' (client_text.cpp).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "snapshot.hpp"

namespace corvid::metrics {

class prometheus_writer {
 public:
  using labels = std::initializer_list<std::pair<const char*, std::string_view>>;

  explicit prometheus_writer(std::string& out) : out_(out) {}
  void family(const char* name, const char* type, const char* help);
  // A family of one unlabelled sample.
  void single(const char* name, const char* type, const char* help, double value);
  // name{k1="v1",k2="v2"} value
  void sample(std::string_view name, labels l, double value);
  // `m`'s latency as `family`_bucket (cumulative, at the fixed le bounds, then +Inf), _sum
  // (seconds) and _count, labelled method=m.name. The family line is the caller's.
  void duration_histogram(const std::string& family, const method_totals& m);
  // `m`'s nonzero error counts as `family`{method=m.name,code=<rpc_errc name>}.
  void error_counts(std::string_view family, const method_totals& m);

 private:
  void number(double v);
  std::string& out_;
};

// A label value with \, " and newline escaped as the format requires.
std::string escape_label(std::string_view v);

}  // namespace corvid::metrics
