#pragma once
// A hedged call through a load_balancer (hedging_policy, method_config.hpp). The first copy
// goes to the endpoint the policy picks; while no copy has answered, another goes to an
// endpoint not used yet each time the delay passes, up to max_copies. The first answer (a
// reply, or an error that does not say the call may be repeated) wins, and the other copies
// are cancelled on the wire. A copy that fails with such an error (server_busy, a connection
// lost) lets the others go on, and the next copy goes at once.
#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "corvid/client/load_balancer.hpp"

namespace corvid {

template <auto F, class... Args>
task<expected<with_attachment<detail::client_result_t<F>>, rpc_error>> load_balancer::hedged(
    hedging_policy h, call_options options, Args... args) {
  using R = expected<with_attachment<detail::client_result_t<F>>, rpc_error>;
  using race_t = detail::hedge_copies<R, async_reply_with_t<F>>;
  constexpr std::uint32_t method = protocol::function_id_v<F>;
  auto timeout = options.timeout;
  if (timeout.count() < 0) timeout = config_.pool.client.request_timeout;
  const steady::time_point start = steady::now();
  std::optional<steady::time_point> deadline;
  if (timeout.count() > 0) deadline = start + timeout;
  const auto delay = hedge_delay(method, h);

  auto race = std::make_shared<race_t>();
  race->attachment.assign(options.attachment);
  race->trace = options.trace != nullptr ? std::optional<trace_context>(*options.trace)
                                         : detail::capture_trace();
  options.attachment = race->attachment;
  options.trace = race->trace ? &*race->trace : nullptr;
  if (options.metadata != nullptr) {
    race->request_metadata.emplace(*options.metadata);
    options.metadata = &*race->request_metadata;
  }
  corvid::metadata* const reply_md = std::exchange(options.reply_metadata, nullptr);
  const std::string_view key = options.hash_key;  // the caller's, alive while it awaits
  options.hash_key = {};

  std::vector<node*> used;
  steady::time_point next_at = start;  // when another copy may go
  for (;;) {
    const auto now = steady::now();
    if (used.size() < h.max_copies && now >= next_at) {
      std::optional<picked> p;
      if (used.empty()) {
        auto first = pick(key, nullptr, start);
        if (!first) co_return unexpected(std::move(first).error());
        if (first->probe) {  // no other endpoint is usable: wait for this one's probe
          first->n->in_flight.fetch_add(1, std::memory_order_relaxed);
          if (!co_await probe(first->v, first->n, left(deadline))) {
            first->n->in_flight.fetch_sub(1, std::memory_order_relaxed);
            co_return unexpected(rpc_error(rpc_errc::connect_failed, "no endpoint answers"));
          }
        }
        p = std::move(*first);
      } else if (!(deadline && *deadline - now < delay) && hedge_allowed()) {
        p = pick_unused(key, used, now);
      }
      if (p) {
        const std::size_t index = used.size();
        used.push_back(p->n);
        if (index > 0) count(policy_count::hedge);
        call_options o = options;
        {
          std::lock_guard lk(race->mutex);
          race->replies.emplace_back();
          ++race->running;
          if (reply_md != nullptr) o.reply_metadata = &race->reply_metadata.emplace_back();
        }
        o.timeout = deadline ? left(deadline) : std::chrono::milliseconds(0);
        hedge_copy<F>(shared_from_this(), race, index, std::move(*p), o, args...);
        next_at = steady::now() + delay;
      } else {
        next_at = steady::time_point::max();  // no more copies: wait for those out
      }
    }
    std::vector<async_reply_with_t<F>> losers;
    std::optional<R> out;
    std::size_t from = 0;
    const bool more = used.size() < h.max_copies && next_at != steady::time_point::max();
    {
      std::lock_guard lk(race->mutex);
      if (race->answer) {
        race->decided = true;
        losers = race->take_losers();
        out = std::move(race->answer);
        from = race->answer_from;
      } else if (race->running == 0) {
        // Every copy sent failed in a way that lets the call go on: the next goes at once,
        // or, with none left to send, the last failure is the answer.
        if (!more) {
          race->decided = true;
          out = std::move(race->last_failure);
        } else {
          next_at = steady::time_point{};
          continue;
        }
      }
    }
    if (out) {
      for (auto& l : losers) l.cancel();
      // The answer's copy wrote its reply metadata before it stored the answer (under mutex).
      if (reply_md != nullptr && race->answer_from < race->reply_metadata.size() &&
          !race->reply_metadata[race->answer_from].empty())
        *reply_md = race->reply_metadata[race->answer_from];
      if (from > 0) count(policy_count::hedge_won);
      co_return std::move(*out);
    }
    co_await race->next(more ? std::max(steady::duration::zero(), next_at - steady::now())
                             : steady::duration(-1));
  }
}

template <auto F, class Race, class... Args>
detail::detached load_balancer::hedge_copy(std::shared_ptr<load_balancer> self,
                                           std::shared_ptr<Race> race, std::size_t index, picked p,
                                           call_options options, Args... args) {
  using R = expected<with_attachment<detail::client_result_t<F>>, rpc_error>;
  constexpr std::uint32_t method = protocol::function_id_v<F>;
  node& n = *p.n;
  const auto sent_at = steady::now();
  R r = unexpected(rpc_error(rpc_errc::cancelled, "a faster copy answered"));
  bool unsent = false;     // the call was answered before this copy got a connection
  bool cancelled = false;  // this copy lost and was cancelled
  try {
    auto lease = co_await n.pool->acquire();
    if (lease) {
      std::lock_guard lk(race->mutex);
      unsent = race->decided;
    }
    if (!lease) {
      r = unexpected(std::move(lease).error());
    } else if (!unsent) {
      auto reply = co_await lease->client->template send_request_with<F>(options, args...);
      {
        std::lock_guard lk(race->mutex);
        cancelled = race->decided;
        if (!cancelled) race->replies[index] = detail::share_reply(reply);
      }
      if (cancelled) reply.cancel();
      r = co_await std::move(reply);
    }
  } catch (const std::exception& e) {  // an argument that cannot be encoded, or memory
    r = unexpected(rpc_error(rpc_errc::invalid_argument,
                             std::string("the hedged copy could not be sent: ") + e.what()));
  }
  n.in_flight.fetch_sub(1, std::memory_order_relaxed);
  const rpc_errc code = r ? rpc_errc::ok : r.error().code();
  {
    std::lock_guard lk(race->mutex);
    if (!race->decided && !race->answer) {
      if (r || !retryable(code)) {
        race->answer = std::move(r);
        race->answer_from = index;
      } else {
        race->last_failure = std::move(r);
      }
    } else if (code == rpc_errc::cancelled) {
      cancelled = true;  // cancelled by the call once it had its answer
    }
    --race->running;
  }
  // A copy that lost and was cancelled says nothing about its endpoint; any other outcome,
  // a losing one too, counts for the endpoint and the retry budget.
  if (!unsent && !cancelled) {
    self->report(n, false, code);
    self->note_attempt(code);
    if (code == rpc_errc::ok) self->note_latency(method, steady::now() - sent_at);
  }
  race->copy_ended();
}

}  // namespace corvid
