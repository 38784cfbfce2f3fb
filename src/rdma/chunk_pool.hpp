#pragma once
// Registered-memory chunks of one fixed size, shared by every RDMA connection on a device.
// Registering memory costs far more than copying it (a syscall and page pinning), so chunks are
// registered once and cached. The pool never holds more than its watermark of registered bytes: a
// request past it fails, and the caller refuses the connection that asked, while connections
// that already hold their chunks carry on. Free chunks unused for the idle time go back to
// the system: on every acquire/release, and on the timer schedule_trim() asks for.
// Thread-safe: connections on different reactors share it; chunks are taken at connection
// setup and teardown, never per message, so one mutex is enough.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace corvid::rdma {

struct registered_chunk {
  char* data = nullptr;
  std::uint32_t lkey = 0;
  void* region = nullptr;  // the provider's memory region, for deregistration
  explicit operator bool() const noexcept { return data != nullptr; }
};

// Allocates and registers memory with a device (or a fake one, in tests).
class chunk_registrar {
 public:
  virtual ~chunk_registrar() = default;
  // An empty chunk when allocation or registration fails.
  virtual registered_chunk register_chunk(std::size_t size) = 0;
  virtual void deregister_chunk(const registered_chunk& chunk) noexcept = 0;
};

struct chunk_pool_stats {
  std::size_t in_use = 0;            // chunks held by connections
  std::size_t cached = 0;            // free chunks kept registered
  std::size_t registered_bytes = 0;  // (in_use + cached) x chunk size; never above the watermark
  std::size_t registrations = 0;     // chunks registered since creation
  std::size_t releases = 0;          // chunks deregistered since creation
  std::size_t refusals = 0;          // requests refused at the watermark
};

class chunk_pool {
 public:
  using clock = std::chrono::steady_clock;

  chunk_pool(std::unique_ptr<chunk_registrar> registrar, std::size_t chunk_size,
             std::size_t watermark, std::chrono::milliseconds idle_release);
  ~chunk_pool();  // every chunk must have been released
  chunk_pool(const chunk_pool&) = delete;
  chunk_pool& operator=(const chunk_pool&) = delete;

  // Appends n chunks to `out`, all or none: false when they would take the registered
  // memory past the watermark (or registration failed).
  bool acquire(std::size_t n, std::vector<registered_chunk>& out,
               clock::time_point now = clock::now());
  void release(const registered_chunk& chunk, clock::time_point now = clock::now());
  // Deregisters free chunks idle for longer than the idle time (also done by acquire/release).
  void trim(clock::time_point now = clock::now());
  // After a release: when a trim() should run so that the free chunks are deregistered once
  // idle even if the pool is not used again, or nullopt when none is needed (no free chunks,
  // or a trim already asked for will see them idle). The caller runs it on a timer; the time
  // is the idle time plus up to an eighth of it, so a burst of releases shares one timer.
  std::optional<clock::time_point> schedule_trim();

  std::size_t chunk_size() const noexcept { return chunk_size_; }
  std::size_t watermark() const noexcept { return watermark_; }
  chunk_pool_stats stats() const;

 private:
  struct free_chunk {
    registered_chunk chunk;
    clock::time_point since;
  };
  void trim_locked(clock::time_point now);

  const std::unique_ptr<chunk_registrar> registrar_;
  const std::size_t chunk_size_;
  const std::size_t watermark_;
  const std::chrono::milliseconds idle_release_;

  mutable std::mutex mutex_;
  std::vector<free_chunk> free_;  // oldest first: released chunks go to the back, reuse from it
  chunk_pool_stats stats_;
  clock::time_point trim_scheduled_{};  // the latest time schedule_trim() returned
};

}  // namespace corvid::rdma
