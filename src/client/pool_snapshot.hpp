#pragma once
// client_pool's connections as its callers read them: a snapshot published under the pool's
// mutex and read without it. A reader never suspends while it holds one, so a replaced snapshot
// (and each connection closed with it) can go once every reactor of the client's io_pool has
// run a handler queued after the swap.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "corvid/client/client_pool.hpp"

#include "client_connection.hpp"

namespace corvid {

// One pooled connection; its address is stable while any snapshot names it.
struct client_pool::entry {
  std::shared_ptr<rpc_client> client;
  std::size_t reactor = 0;  // index in the client's io_pool
  std::chrono::steady_clock::time_point created;
  std::chrono::steady_clock::time_point last_used;  // as last seen by reap_locked()
  bool connecting = true;
  bool used = false;
  // Calls handed out; readers bump it without the mutex (a lost bump from two threads at once
  // only delays nothing: any change marks the connection used since the last look).
  std::atomic<std::uint64_t> uses{0};
  std::uint64_t uses_seen = 0;  // under the mutex
};

struct client_pool::snapshot {
  struct conn {
    entry* e;
    // The connection itself: its state and counts are read inline, with no call per read.
    const detail::client_connection* link;
    std::chrono::steady_clock::time_point created;
  };
  std::vector<conn> conns;            // connected entries, grouped by reactor
  std::vector<std::uint32_t> begins;  // reactor i's are conns[begins[i], begins[i + 1])
  // Whether a busy pick may open another connection (else the fast path never reads
  // pending counts on a reactor with one connection): room under the cap.
  bool room = false;
  std::size_t live = 0;             // connections open or being made
  std::size_t spread_below = 0;     // spread while live < this: min(server reactors, cap)
  std::size_t server_reactors = 0;  // as stated when published
  std::chrono::steady_clock::time_point next_attempt{};  // no connect before (backoff)
};

struct alignas(64) client_pool::reactor_counts {
  std::atomic<std::uint64_t> cross{0};
};

}  // namespace corvid
