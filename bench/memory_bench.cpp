// corvid-memory-bench: what memory accounting costs on the hot path (docs/benchmarks.md).
// Google Benchmark; run with --benchmark_min_time=0.5 for stable figures.
#include <benchmark/benchmark.h>

#include <corvid/detail/byte_buffer.hpp>
#include <corvid/memory/buffer_pool.hpp>
#include <corvid/memory/memory_tracker.hpp>

namespace {

using corvid::memory_tracker;
using corvid::unlimited_memory;

// The server's real path: category leaf -> category -> server -> process, limits on two.
struct server_path {
  memory_tracker process{"process"};
  memory_tracker server{"server", std::size_t{1} << 40, &process};
  memory_tracker category{"in_flight", unlimited_memory, &server};
  memory_tracker conn{"conn", std::size_t{1} << 30, &category};
};

void tracker_reserve_release(benchmark::State& state) {
  // One server shared by every thread; each thread charges its own connection leaf, as
  // reactors do. The contended lines are the server's and the process's counters.
  static server_path shared;
  memory_tracker leaf("conn", std::size_t{1} << 30, &shared.category);
  for (auto _ : state) {
    benchmark::DoNotOptimize(leaf.try_reserve(4096));
    leaf.release(4096);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(tracker_reserve_release)->Threads(1)->Threads(2)->UseRealTime();

void tracker_forced_reserve_release(benchmark::State& state) {
  server_path p;
  for (auto _ : state) {
    p.conn.reserve(4096);
    p.conn.release(4096);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(tracker_forced_reserve_release);

void tracker_failed_reserve(benchmark::State& state) {
  server_path p;
  p.server.set_limit(1024);
  for (auto _ : state) benchmark::DoNotOptimize(p.conn.try_reserve(4096));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(tracker_failed_reserve);

// What the pool saves: a read buffer taken and handed back per batch.
void pool_acquire_release(benchmark::State& state) {
  corvid::buffer_pool pool;
  const auto size = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    auto b = pool.acquire(size);
    benchmark::DoNotOptimize(b.data);
    pool.release(b);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(pool_acquire_release)->Arg(4096)->Arg(64 * 1024)->Arg(256 * 1024);

void malloc_free(benchmark::State& state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    void* p = std::malloc(size);
    benchmark::DoNotOptimize(p);
    std::free(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(malloc_free)->Arg(4096)->Arg(64 * 1024)->Arg(256 * 1024);

// A connection's read buffer growing for one big frame and shrinking back once idle (8 KiB ->
// the frame's size -> 8 KiB), with the frame's header bytes carried over: through the
// thread's buffer_pool (what server connections do) or through malloc/realloc.
void read_buffer_grow_shrink(benchmark::State& state, bool pooled) {
  const auto size = static_cast<std::size_t>(state.range(0));
  corvid::detail::byte_buffer buf;
  if (pooled) buf.draw_from_thread_pool();
  buf.reserve(8192);
  for (auto _ : state) {
    buf.append("header..");
    buf.reserve(size);
    benchmark::DoNotOptimize(buf.tail());
    buf.consume(buf.size());
    buf.shrink_to(8192);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_CAPTURE(read_buffer_grow_shrink, pooled, true)->Arg(64 * 1024)->Arg(200 * 1024);
BENCHMARK_CAPTURE(read_buffer_grow_shrink, malloc, false)->Arg(64 * 1024)->Arg(200 * 1024);

}  // namespace

BENCHMARK_MAIN();
