#pragma once
// The functions corvid-bench calls. Both processes (or both halves of one process) compile
// this header, so the function ids match.
#include <cstdint>
#include <string>
#include <string_view>

#include <corvid/corvid.hpp>

namespace corvid::bench {

// What the server reports about itself between cells.
struct server_counters {
  transport_stats transport;
  std::uint64_t allocations = 0;  // on the server's reactor threads
  // Peak of the server's tracked memory since the previous bench_stats() call, which starts
  // a new peak: so the figure taken after a cell is that cell's peak.
  std::uint64_t memory_peak = 0;
};

// One benchmark call: the request payload is the attachment; the reply attachment is the
// payload again (echo) or `response_size` bytes.
void bench_call(request_context& ctx, std::uint32_t response_size, bool echo);
// A stream of `count` items of `size` bytes (corvid-bench stream).
stream<std::string_view> bench_items(std::uint32_t size, std::uint64_t count);
server_counters bench_stats();

// The server whose counters bench_stats() reports.
void set_bench_server(rpc_server* server);
// Registers the two functions.
void register_bench_service(rpc_server& server);

}  // namespace corvid::bench
