#include "bench_service.hpp"

#include <algorithm>
#include <atomic>

#include "alloc_counter.hpp"

namespace corvid::bench {
namespace {
std::atomic<rpc_server*> current_server{nullptr};
constexpr std::size_t max_response = 8u << 20;

std::string_view response_bytes(std::size_t n) {
  static const std::string bytes(max_response, 'r');  // built once, before measuring
  return std::string_view(bytes).substr(0, std::min(n, max_response));
}
}  // namespace

void bench_call(request_context& ctx, std::uint32_t response_size, bool echo) {
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

void set_bench_server(rpc_server* server) {
  response_bytes(0);
  current_server.store(server);
}

void register_bench_service(rpc_server& server) {
  server.register_handler<bench_call, bench_stats, bench_items>();
}

}  // namespace corvid::bench
