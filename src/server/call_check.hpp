#pragma once
// A server connection's interceptors at work: the verdict of the server's interceptor chain
// on each request, taken after its method is known and before its arguments are decoded.
// An asynchronous interceptor that answers at once costs nothing more; one that has to wait
// pauses its connection with the request at the head of the read buffer (its later requests
// stay unread, TCP pushes back), and its answer resumes the connection at that request.
// Reactor thread.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "corvid/protocol/frame_header.hpp"
#include "corvid/server/interceptor.hpp"

namespace corvid::detail {

class server_connection;
struct handler_entry;
struct request_view;

class call_check {
 public:
  enum class result : std::uint8_t {
    proceed,   // every interceptor let the call through
    answered,  // refused: the refusal is queued
    wait,      // an asynchronous interceptor is deciding: the connection is paused
  };

  explicit call_check(server_connection& c) noexcept;

  result run(const protocol::frame_header& h, const request_view& req, const handler_entry& e);
  // The call passed: if an interceptor observes ends, its end is awaited (ended()).
  void observe(const protocol::frame_header& h, const handler_entry& e) {
    if (observes_) [[unlikely]]
      start_observing(h, e);
  }
  // The call `request_id` ended with `status` (its reply, its error reply, or cancelled
  // without one): the observing interceptors hear of it once.
  void ended(std::uint64_t request_id, rpc_errc status) noexcept;
  // The asynchronous decision the connection waits for is in: what it held is given back.
  void decided() noexcept;

  // An asynchronous interceptor's decision in progress; shared with its coroutine.
  struct pending;

 private:
  // Starts the asynchronous link `at`: true once it has answered (at once, or already).
  result wait_for(const std::shared_ptr<pending>& p);
  result refuse(std::uint64_t request_id, const call_verdict& v);

  void start_observing(const protocol::frame_header& h, const handler_entry& e);

  struct observed {
    const handler_entry* entry;
    std::uint32_t function_id;
    std::chrono::steady_clock::time_point arrived;
  };
  server_connection& c_;
  std::shared_ptr<pending> pending_;  // the decision the paused connection waits for
  const bool observes_;               // an interceptor observes ends
  std::unordered_map<std::uint64_t, observed> observed_;  // calls passed, not ended yet
};

}  // namespace corvid::detail
