#pragma once
// A server connection's interceptors at work: the verdict of the server's interceptor chain
// on each request, taken after its method is known and before its arguments are decoded.
// An asynchronous interceptor that answers at once costs nothing more; one that has to wait
// pauses its connection with the request at the head of the read buffer (its later requests
// stay unread, TCP pushes back), and its answer resumes the connection at that request.
// Reactor thread.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

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

  explicit call_check(server_connection& c) noexcept : c_(c) {}

  result run(const protocol::frame_header& h, const request_view& req, const handler_entry& e);

  // An asynchronous interceptor's decision in progress; shared with its coroutine.
  struct pending;

 private:
  // Starts the asynchronous link `at`: true once it has answered (at once, or already).
  result wait_for(const std::shared_ptr<pending>& p);
  result refuse(std::uint64_t request_id, const call_verdict& v);

  server_connection& c_;
  std::shared_ptr<pending> pending_;  // the decision the paused connection waits for
};

}  // namespace corvid::detail
