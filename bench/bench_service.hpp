#pragma once
// The functions corvid-bench calls. Both processes (or both halves of one process) compile
// this header, so the function ids match.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// Calls bench_call ran on each reactor of the in-process server (index = the reactor's
// on_thread_start index): each reactor counts into its own cache line, a load and a store.
constexpr std::size_t max_counted_reactors = 64;
void set_reactor_slot(std::size_t index);  // on a server reactor thread, as it starts
std::vector<std::uint64_t> reactor_calls(std::size_t reactors);
void reset_reactor_calls();

// The server whose counters bench_stats() reports.
void set_bench_server(rpc_server* server);
// Registers the two functions.
void register_bench_service(rpc_server& server);

}  // namespace corvid::bench
