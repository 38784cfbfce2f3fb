#pragma once
// The server's memory trackers and the per-connection accounting built on them (issue 5):
//
//   process
//   └─ server                 server_config::max_memory
//      ├─ read_buffers        read_buffer_share of it: reads can never starve the calls
//      │  └─ <peer>           one leaf per connection: its read buffer's capacity
//      ├─ queued_replies
//      │  └─ <peer>           encoded replies not yet written; max_queued_reply_bytes
//      └─ in_flight
//         └─ <peer>           request bytes of running calls (a coroutine copies its request)
//
// Reads and calls are admitted with try_reserve before anything is allocated; a connection
// that is refused pauses (stops reading: TCP pushes back on its client) and registers as a
// waiter, resumed when memory is released. Replies already encoded are charged as they are.
#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "corvid/memory/memory_tracker.hpp"
#include "corvid/server/server_config.hpp"

namespace corvid::detail {

class server_memory {
 public:
  explicit server_memory(const server_config& config);

  memory_tracker server;
  memory_tracker read_buffers;
  memory_tracker queued_replies;
  memory_tracker in_flight;
  const std::size_t max_queued_reply_bytes;

  // Runs `resume` (on the thread that frees memory: it should post to its reactor) once
  // memory is released. Checks `enough` after registering, so a release between the failed
  // reservation and this call is never missed.
  // `for_read`: the waiter needs read-buffer memory, so idle connections holding more
  // than they need are asked to give it back (see add_holder).
  void wait(std::function<void()> resume, const std::function<bool()>& enough, bool for_read);
  // A connection whose read buffer stays grown while it is idle registers a `reclaim` (it
  // should post to its reactor), run once when someone waits for read memory: an idle
  // connection would otherwise keep that memory until its next read, however long. A
  // connection that closes first removes itself (its callback's weak_ptr would otherwise
  // keep the connection's storage allocated).
  void add_holder(const void* key, std::function<void()> reclaim);
  void remove_holder(const void* key);
  // After releasing memory: resumes every waiter (each retries; those still refused wait
  // again). One fence and one load when nobody waits.
  void notify();
  bool has_waiters() const noexcept { return waiters_.load(std::memory_order_relaxed) != 0; }

 private:
  std::atomic<std::size_t> waiters_{0};
  std::mutex mutex_;
  std::vector<std::function<void()>> resume_;
  std::unordered_map<const void*, std::function<void()>> holders_;
};

// One connection's leaves and the charges it holds. Reactor thread only.
class connection_memory {
 public:
  connection_memory(server_memory& server, const std::string& name);
  ~connection_memory();

  // Read buffer: reserve before growing to `capacity`; false = no room, do not grow.
  bool reserve_read(std::size_t capacity) noexcept;
  // Brings the read charge to the buffer's capacity after it changed (a shrink releases).
  void settle_read(std::size_t capacity) noexcept;

  // In-flight calls. Before dispatching a frame: room for its request bytes, taken from a
  // batch credit so a batch of small calls costs one reservation. False = no room.
  bool admit(std::size_t bytes) noexcept;
  // The admitted frame became a running call that keeps its bytes until call_done().
  std::size_t take_admitted() noexcept;
  // The admitted frame is done (handled synchronously): its bytes return to the credit.
  void return_admitted() noexcept;
  void call_done(std::size_t bytes) noexcept;
  // End of a batch: unused credit goes back.
  void end_batch() noexcept;

  // Queued replies: charge what is queued now (already allocated, so past limits if need be).
  void settle_replies(std::size_t bytes) noexcept;
  bool replies_full() const noexcept { return replies_charged_ >= server_.max_queued_reply_bytes; }

  // Whether a refused reservation could ever succeed: one larger than its tracker's limit
  // would wait forever, so the caller answers message_too_large instead of waiting.
  bool read_could_fit(std::size_t capacity) const noexcept {
    return capacity <= server_.read_buffers.limit();
  }
  bool call_could_fit(std::size_t bytes) const noexcept {
    return bytes <= server_.in_flight.limit();
  }

  // Room a reservation could still get (for deciding whether a waiter may retry).
  std::size_t read_available() const noexcept { return read_.available(); }
  std::size_t call_available() const noexcept { return calls_.available() + credit_; }
  server_memory& server() noexcept { return server_; }

 private:
  server_memory& server_;
  memory_tracker read_;
  memory_tracker replies_;
  memory_tracker calls_;
  std::size_t read_charged_ = 0;
  std::size_t replies_charged_ = 0;
  std::size_t credit_ = 0;    // reserved on calls_, not yet owned by a call
  std::size_t admitted_ = 0;  // the frame being dispatched
};

}  // namespace corvid::detail
