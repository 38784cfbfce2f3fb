#pragma once
// A server connection's streams, as the connection's writer sees them: which wait for room
// in the reply queue, which lent items to writes not yet done, and how far their windows
// grew together. The connection tells it when a write starts and ends and when the queue
// drains; it tells the streams (stream_link). Reactor thread, except the window growth,
// which a stream's reader may reserve from its own thread.
#include <atomic>
#include <cstddef>
#include <vector>

#include "corvid/detail/stream_link.hpp"
#include "corvid/server/server_config.hpp"

namespace corvid::detail {

class stream_mux {
 public:
  explicit stream_mux(const server_config& config) noexcept : config_(config) {}

  // The credit window a stream grants its client, and what it may grow to.
  std::size_t window() const noexcept;
  std::size_t max_window() const noexcept;
  // A stream's window grows by `bytes`: how much of that the connection allows. The windows
  // grow into at most a quarter of the connection's call memory together. Any thread.
  std::size_t reserve_growth(std::size_t bytes) noexcept;
  void release_growth(std::size_t bytes) noexcept {
    growth_.fetch_sub(bytes, std::memory_order_relaxed);
  }

  // Streams parked for room in the reply queue: told (on_writable) once it drains.
  void wait_writable(stream_link* link) { writable_.push_back(link); }
  void forget_writable(stream_link* link) noexcept { std::erase(writable_, link); }
  void wake_writable();
  bool writable_waiting() const noexcept { return !writable_.empty(); }

  // Streams whose borrowed items are queued (told on_written once written): the queued ones
  // go with the next write, which tells them when it is done.
  void wait_written(stream_link* link) { queued_.push_back(link); }
  void write_started() noexcept { writing_.swap(queued_); }  // (the write before told its own)
  void write_done() noexcept { tell(writing_); }
  // The connection closed: what is queued will never be written (the write in flight tells
  // its own).
  void closed() noexcept { tell(queued_); }

 private:
  static void tell(std::vector<stream_link*>& links) noexcept;

  const server_config& config_;
  std::vector<stream_link*> writable_;
  std::vector<stream_link*> queued_;
  std::vector<stream_link*> writing_;
  // What the open streams' windows grew by beyond window() (reserved by their readers'
  // threads, released on the reactor as they end).
  std::atomic<std::size_t> growth_{0};
};

}  // namespace corvid::detail
