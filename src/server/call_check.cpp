// docs/architecture.md, "Interceptors".
#include "call_check.hpp"

#include <string>
#include <utility>

#include "corvid/detail/detached.hpp"
#include "corvid/detail/switch_to.hpp"

#include "interceptor_chain.hpp"
#include "server_connection.hpp"
#include "server_core.hpp"

namespace corvid::detail {

// What an asynchronous interceptor decides on, kept while the connection waits: the call's
// description with its metadata copied (the read buffer may move meanwhile).
struct call_check::pending {
  enum class state : std::uint8_t { starting, waiting, done };
  std::uint64_t request_id = 0;
  std::size_t at = 0;  // the link deciding
  std::string metadata_copy;
  std::size_t charged = 0;  // the copy's bytes, charged to the connection's call memory
  call_info info;
  call_verdict verdict;
  // starting: the dispatcher is still inside the interceptor's first step; waiting: it
  // returned, the connection is paused; done: the verdict is in. The coroutine may finish on
  // another thread, so the hand-over is one atomic exchange each side.
  std::atomic<state> phase{state::starting};
};

namespace {

detached decide(std::shared_ptr<call_check::pending> p, async_server_interceptor& i,
                std::shared_ptr<server_connection> conn, void (*wake)(server_connection&)) {
  call_verdict v;
  try {
    v = co_await i.on_call(p->info);
  } catch (...) {
    v = interceptor_failed(std::current_exception());
  }
  p->verdict = std::move(v);
  using state = call_check::pending::state;
  if (p->phase.exchange(state::done, std::memory_order_acq_rel) == state::starting) co_return;
  // The dispatcher has paused the connection: wake it on its reactor, from a fresh stack.
  co_await post_to{conn->reactor()};
  wake(*conn);
}

}  // namespace

call_check::call_check(server_connection& c) noexcept
    : c_(c), observes_(c.core_.interceptors.observes_end()) {}

void call_check::start_observing(const protocol::frame_header& h, const handler_entry& e) {
  // Allocates (a node per call) only on a server whose interceptors observe ends.
  observed_.insert_or_assign(h.request_id, observed{&e, h.function_id, c_.dispatch_.arrival()});
  c_.writer().observe_ends(true);
}

void call_check::ended(std::uint64_t request_id, rpc_errc status) noexcept {
  auto it = observed_.find(request_id);
  if (it == observed_.end()) return;
  const observed o = it->second;
  observed_.erase(it);
  if (observed_.empty()) c_.writer().observe_ends(false);
  c_.core_.interceptors.ended(
      call_end{.method = o.entry->name,
               .function_id = o.function_id,
               .identity = &c_.identity(),
               .status = status,
               .duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - o.arrived)});
}

call_check::result call_check::run(const protocol::frame_header& h, const request_view& req,
                                   const handler_entry& e) {
  const interceptor_chain& chain = c_.core_.interceptors;
  std::size_t from = 0;
  if (pending_ != nullptr) {
    // The connection resumed at the request it paused on: the decision is in (decided()
    // gave its memory back).
    std::shared_ptr<pending> p = std::move(pending_);
    if (p->request_id == h.request_id) {
      if (!p->verdict.proceeds()) return refuse(h.request_id, p->verdict);
      from = p->at + 1;
    }
  }
  call_info info{.method = e.name,
                 .function_id = h.function_id,
                 .stream = e.stream,
                 .identity = &c_.identity(),
                 .metadata = req.metadata == nullptr ? metadata_view() : *req.metadata,
                 .deadline = std::nullopt,
                 .peer = c_.peer_,
                 .request_id = h.request_id};
  if (req.deadline != std::chrono::steady_clock::time_point::max()) info.deadline = req.deadline;
  for (;;) {
    interceptor_chain::outcome out = chain.run(info, from);
    if (!out.verdict.proceeds()) return refuse(h.request_id, out.verdict);
    if (out.at == chain.size()) return result::proceed;
    // An asynchronous link: it keeps what it reads, charged like a running call's request.
    auto p = std::make_shared<pending>();
    p->request_id = h.request_id;
    p->at = out.at;
    p->charged = req.metadata_bytes();
    if (p->charged != 0 && !c_.mem().hold(p->charged)) {
      return refuse(h.request_id,
                    call_verdict::refuse_static(rpc_errc::server_busy,
                                                "server at its memory limit for running calls"));
    }
    p->metadata_copy.assign(info.metadata.wire());
    p->info = info;
    p->info.metadata = metadata_view(p->metadata_copy, info.metadata.size());
    const result r = wait_for(p);
    if (r != result::proceed) return r;
    c_.mem().call_done(p->charged);
    if (!p->verdict.proceeds()) return refuse(h.request_id, p->verdict);
    from = out.at + 1;
  }
}

call_check::result call_check::wait_for(const std::shared_ptr<pending>& p) {
  using state = pending::state;
  decide(p, c_.core_.interceptors.async_at(p->at), c_.self(), [](server_connection& c) {
    // On the reactor: the decision is in; read on from the request that waited for it.
    c.dispatch_.checks().decided();
    if (c.adm_.lift(pause_reason::check) && !c.paused() && !c.gate_.closed()) c.resume();
  });
  if (p->phase.exchange(state::waiting, std::memory_order_acq_rel) == state::done)
    return result::proceed;  // it answered at once: the caller reads p->verdict
  pending_ = p;
  c_.pause_for(verdict::pause(pause_reason::check));
  return result::wait;
}

void call_check::decided() noexcept {
  if (pending_ == nullptr) return;
  c_.mem().call_done(std::exchange(pending_->charged, 0));
  pending_->metadata_copy = {};  // the interceptor is done reading it
  pending_->info.metadata = {};
}

call_check::result call_check::refuse(std::uint64_t request_id, const call_verdict& v) {
  c_.writer().reply_error(request_id, v.code(), v.message());
  return result::answered;
}

}  // namespace corvid::detail
