// The exposition format and the shards, without a server: known stats in, known text out.
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "metrics/call_recorder.hpp"
#include "metrics/prometheus_text.hpp"
#include "metrics/snapshot.hpp"

namespace corvid::metrics {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

TEST(exposition, label_values_are_escaped) {
  EXPECT_EQ(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(exposition, histogram_buckets_are_cumulative_at_their_bounds) {
  server_metrics m({"svc::f"}, 1);
  method_stats& s = m.shard(0).at(0);
  s.calls.add(4);
  s.latency.record(900);             // <= 1 us
  s.latency.record(2'000);           // <= 2.5 us
  s.latency.record(2'600);           // <= 5 us
  s.latency.record(20'000'000'000);  // 20 s: only +Inf
  server_snapshot snap;
  snap.methods = collect_methods(m);
  const std::string t = prometheus_text(snap);
  EXPECT_TRUE(has_line(t, "# TYPE corvid_server_call_duration_seconds histogram")) << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"svc::f\",le=\"1e-06\"} 1"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"svc::f\",le=\"2.5e-06\"} 2"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"svc::f\",le=\"5e-06\"} 3"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"svc::f\",le=\"10\"} 3"))
      << t;
  EXPECT_TRUE(
      has_line(t, "corvid_server_call_duration_seconds_bucket{method=\"svc::f\",le=\"+Inf\"} 4"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_server_call_duration_seconds_count{method=\"svc::f\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_call_duration_seconds_sum{method=\"svc::f\"} 20.0000055"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_server_calls_total{method=\"svc::f\"} 4")) << t;
  EXPECT_TRUE(has_line(t, "corvid_server_requests_in_flight{method=\"svc::f\"} 0")) << t;
}

TEST(exposition, errors_by_code_and_requests_naming_no_method) {
  server_metrics m({"svc::f"}, 2);
  call_recorder r;
  r.attach(&m.shard(1));
  r.begin(call_recorder::no_method, 7, 10, {});
  call_recorder::error(r.dispatching(7), rpc_errc::function_not_found);
  r.end_dispatch();
  r.end_batch({});
  server_snapshot snap;
  snap.methods = collect_methods(m);
  const std::string t = prometheus_text(snap);
  EXPECT_TRUE(
      has_line(t, "corvid_server_errors_total{method=\"(none)\",code=\"function_not_found\"} 1"))
      << t;
  EXPECT_TRUE(has_line(t, "corvid_server_calls_total{method=\"svc::f\"} 0")) << t;
}

TEST(exposition, shards_written_by_two_threads_sum_at_scrape) {
  server_metrics m({"a", "b"}, 2);
  auto work = [&](std::size_t shard) {
    call_recorder r;
    r.attach(&m.shard(shard));
    for (std::uint64_t i = 1; i <= 10000; ++i) {
      r.begin(i % 2, i, 100, std::chrono::steady_clock::now());
      r.end_dispatch();
      if (i % 16 == 0) r.end_batch({});
    }
    r.end_batch({});
  };
  std::thread t0(work, 0), t1(work, 1);
  // A scrape while they run reads without a data race (TSan) and never more than was done.
  for (int i = 0; i < 20; ++i) {
    const auto totals = collect_methods(m);
    EXPECT_LE(totals[0].calls, 10000u);
  }
  t0.join();
  t1.join();
  const auto totals = collect_methods(m);
  EXPECT_EQ(totals[0].calls, 10000u);
  EXPECT_EQ(totals[1].calls, 10000u);
  EXPECT_EQ(totals[0].latency_count, 10000u);
  EXPECT_EQ(totals[0].request_bytes, 1'000'000u);
  EXPECT_EQ(totals[0].in_flight(), 0u);
}

}  // namespace
}  // namespace corvid::metrics
