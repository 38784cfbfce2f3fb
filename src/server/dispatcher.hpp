#pragma once
// A server connection's requests, from admission's verdict to the handler: the method looked
// up, the must-understand flags and the trace context read off the body, the deadline
// checked, the method's concurrency limit held, and the invoker run. Each step either passes
// the call on or answers it with an error; a check that decides whether a call may run
// (an interceptor) is one more such step, in `dispatch`, after the method is known and
// before its limit is taken. Reactor thread only.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "corvid/call_metadata.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/trace/trace_context.hpp"

#include "../admission/verdict.hpp"
#include "blocking_lane.hpp"
#include "call_check.hpp"

namespace corvid {
class request_context;
}

namespace corvid::detail {

class server_connection;
class method_limit;
struct handler_entry;
struct request_view;

class dispatcher {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit dispatcher(server_connection& c) noexcept;

  // The next frame is a request: whether it may be dispatched now. False = stop the batch
  // (paused, or the frame was refused and the stream cannot continue: `ok` false).
  bool admit_request(const protocol::frame_header& h, const char* payload, bool& ok);
  // A coroutine call has started: it takes the method limit's place with it.
  void call_started(request_context& ctx) noexcept;
  // The request was read at `t`: its deadline counts from then.
  void arrived(time_point t) noexcept { arrived_ = t; }
  time_point arrival() const noexcept { return arrived_; }
  // A request has been dispatched (an rdma_setup is then refused).
  bool served() const noexcept { return served_; }
  blocking_lane& lane() noexcept { return lane_; }
  call_check& checks() noexcept { return checks_; }

 private:
  // Carries out admission's verdict on a request that did not pass the common checks:
  // dispatches, answers the refusal, fails the connection or pauses it (false).
  [[gnu::cold, gnu::noinline]] bool act_on(verdict v, const protocol::frame_header& h,
                                           const char* payload, const handler_entry* entry,
                                           bool& ok);
  // False: an asynchronous interceptor is deciding on the request, and the connection is
  // paused with it unconsumed (it is dispatched again when the decision is in).
  bool dispatch(const protocol::frame_header& h, const char* payload, const handler_entry* entry);
  // Steps 2-5 of dispatch (deadline, method, interceptors, limit and handler), for a request
  // whose flags have been read.
  bool run(const protocol::frame_header& h, request_view& req, const handler_entry* entry);
  // dispatch for a request with flag bits set (must-understand or flag_accepts_compressed):
  // reads them (read_flags), runs it, then frees its inflated copy if it had one.
  [[gnu::cold, gnu::noinline]] bool dispatch_flagged(const protocol::frame_header& h,
                                                     request_view& req, const handler_entry* entry);
  // Inflates a compressed request (protocol::flag_compressed) and takes the trace context and
  // the metadata block off its body (flag_trace, flag_metadata). False when a bit is unknown,
  // or what a bit announces is not there or over a limit: the request has then been
  // answered, before anything else reads its body.
  // A compressed request's inflated payload and what it holds of the call memory, while the
  // request is dispatched (dispatch_flagged's; `req` views it).
  struct inflated_payload {
    std::string bytes;
    std::size_t charge = 0;
  };
  bool read_flags(const protocol::frame_header& h, request_view& req, inflated_payload& room);
  // A compressed request's payload, inflated into `room` (its declared size checked against
  // max_frame_size and charged to the connection's call memory first); `req` then views it.
  // False: answered (bad_request, message_too_large or server_busy).
  bool inflate(const protocol::frame_header& h, request_view& req, inflated_payload& room);
  // For a method with a set_method_limit: refused at the limit, otherwise holds a place in
  // it until the call ends (handed to the call's context if it outlives dispatch).
  [[gnu::noinline]] void invoke_limited(const handler_entry& entry, const request_view& req);
  void invoke(const handler_entry& entry, const request_view& req);

  server_connection& c_;
  time_point arrived_{};           // when the batch being dispatched was read
  trace_context caller_trace_;     // the request being dispatched's, while it is
  metadata_view metadata_;         // likewise its call metadata (request_view points to it)
  method_limit* limit_ = nullptr;  // the limit invoke_limited holds for the call starting
  blocking_lane lane_;             // its blocking calls waiting for a worker (the pool's)
  call_check checks_;              // the server's interceptors' verdicts on its requests
  bool served_ = false;
  const bool intercepted_;  // the server has interceptors (fixed at start)
};

}  // namespace corvid::detail
