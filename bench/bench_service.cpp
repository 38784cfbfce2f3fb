#include "bench_service.hpp"

#include <algorithm>
#include <atomic>

#include "alloc_counter.hpp"

namespace corvid::bench {
namespace {
std::atomic<rpc_server*> current_server{nullptr};
constexpr std::size_t max_response = 8u << 20;

struct alignas(64) reactor_count {
  std::atomic<std::uint64_t> calls{0};
};
reactor_count counts[max_counted_reactors + 1];  // the last: threads that are no reactor
thread_local std::size_t reactor_slot = max_counted_reactors;

std::string_view response_bytes(std::size_t n) {
  static const std::string bytes(max_response, 'r');  // built once, before measuring
  return std::string_view(bytes).substr(0, std::min(n, max_response));
}
}  // namespace

void bench_call(request_context& ctx, std::uint32_t response_size, bool echo) {
  auto& n = counts[reactor_slot].calls;  // written by this reactor alone
  n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  if (echo) {
    ctx.set_response_attachment(ctx.request_attachment());
  } else if (response_size > 0) {
    ctx.set_response_attachment(response_bytes(response_size));
  }
}

stream<std::string_view> bench_items(std::uint32_t size, std::uint64_t count) {
  const std::string_view item = response_bytes(size);
  for (std::uint64_t i = 0; i < count; ++i) co_yield item;
}

server_counters bench_stats() {
  server_counters c;
  if (rpc_server* s = current_server.load()) {
    c.transport = s->stats();
    c.memory_peak = s->memory().peak;
    s->reset_memory_peak();
  }
  c.allocations = tracked_allocations();
  return c;
}

void set_reactor_slot(std::size_t index) { reactor_slot = std::min(index, max_counted_reactors); }

std::vector<std::uint64_t> reactor_calls(std::size_t reactors) {
  std::vector<std::uint64_t> out;
  for (std::size_t i = 0; i < std::min(reactors, max_counted_reactors); ++i) {
    out.push_back(counts[i].calls.load(std::memory_order_relaxed));
  }
  return out;
}

void reset_reactor_calls() {
  for (auto& c : counts) c.calls.store(0, std::memory_order_relaxed);
}

void set_bench_server(rpc_server* server) {
  response_bytes(0);
  current_server.store(server);
}

void register_bench_service(rpc_server& server) {
  server.register_handler<bench_call, bench_stats, bench_items>();
}

}  // namespace corvid::bench
