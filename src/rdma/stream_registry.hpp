#pragma once
// The RDMA streams living on one reactor, as an asio service of that reactor.
//
// A socket's pending handlers live in the reactor's operation queue, so a reactor that is
// stopped and destroyed destroys them with it. An rdma_stream keeps its read and write
// handlers itself, and they hold their connection, which holds the stream: the reactor's
// shutdown must drop them too, or each open connection keeps itself (and its registered
// chunks) alive for good. This service's shutdown() runs when the reactor is destroyed,
// before its queued operations go, and drops every live stream's handlers.
#include <mutex>
#include <unordered_set>

#include "../runtime/asio_all.hpp"

namespace corvid::rdma {

class rdma_stream;

class stream_registry : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;  // NOLINT: asio's service lookup key

  explicit stream_registry(asio::execution_context& owner)
      : asio::execution_context::service(owner) {}

  void add(rdma_stream* s);
  void remove(rdma_stream* s) noexcept;

 private:
  void shutdown() override;

  std::mutex mutex_;  // a stream may be destroyed off its reactor's thread
  std::unordered_set<rdma_stream*> streams_;
};

}  // namespace corvid::rdma
