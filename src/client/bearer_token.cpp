// bearer_token_provider: the fetch thread and the per-call read of the current token.
#include "corvid/client/bearer_token.hpp"

#include <algorithm>
#include <exception>
#include <utility>

namespace corvid {

namespace {
using steady = std::chrono::steady_clock;

expected<bearer_token, rpc_error> fetch_once(const bearer_token_provider::fetch_function& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return unexpected(rpc_error(rpc_errc::internal, e.what()));
  } catch (...) {
    return unexpected(rpc_error(rpc_errc::internal, "the token fetch threw"));
  }
}
std::atomic<std::uint64_t> next_provider_id{1};

// A thread's copy of one provider's token: `owner` is the provider's id (never reused, unlike
// its address), `version` the token's.
struct token_copy {
  std::uint64_t owner = 0;
  std::uint64_t version = 0;
  std::shared_ptr<const void> token;
};
thread_local token_copy this_thread_copy;
}  // namespace

bearer_token_provider::bearer_token_provider(fetch_function fetch, bearer_token_options options)
    : fetch_(std::move(fetch)),
      options_(options),
      id_(next_provider_id.fetch_add(1, std::memory_order_relaxed)),
      thread_([this] { run(); }) {}

std::shared_ptr<const bearer_token_provider::current> bearer_token_provider::take(
    std::uint64_t& version) {
  std::lock_guard lk(mutex_);
  version = version_.load(std::memory_order_relaxed);
  return current_;
}

bearer_token_provider::~bearer_token_provider() {
  {
    std::lock_guard lk(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

rpc_error bearer_token_provider::on_call(outgoing_call& call) {
  token_copy& copy = this_thread_copy;
  if (copy.owner != id_ || copy.version != version_.load(std::memory_order_acquire)) [[unlikely]] {
    std::uint64_t version = 0;
    copy.token = take(version);
    copy.owner = id_;
    copy.version = version;
  }
  const auto* t = static_cast<const current*>(copy.token.get());
  if (t == nullptr || steady::now() >= t->expires) [[unlikely]] {
    std::shared_ptr<const current> fresh;
    if (rpc_error e = no_token(fresh)) return e;
    call.metadata().add("authorization", fresh->header);
    return {};
  }
  call.metadata().add("authorization", t->header);
  return {};
}

rpc_error bearer_token_provider::no_token(std::shared_ptr<const current>& t) {
  std::unique_lock lk(mutex_);
  const bool waited = fetches() > 0 || fetched_.wait_for(lk, options_.first_token_wait,
                                                         [&] { return fetches() > 0 || stop_; });
  // A fetch may have succeeded meanwhile (the first, or one that raced this call).
  t = current_;
  if (t != nullptr && steady::now() < t->expires) return {};
  if (!waited) return {rpc_errc::unauthenticated, "no bearer token: the first fetch has not ended"};
  if (last_error_.empty()) return {rpc_errc::unauthenticated, "bearer token expired"};
  return {rpc_errc::unauthenticated, last_error_};
}

void bearer_token_provider::run() {
  std::unique_lock lk(mutex_);
  auto backoff = options_.min_backoff;
  while (!stop_) {
    lk.unlock();
    auto got = fetch_once(fetch_);
    const auto now = steady::now();
    steady::time_point next;
    if (got) {
      const auto lifetime = std::max(got->lifetime, std::chrono::milliseconds(0));
      auto fresh = std::make_shared<const current>(
          current{"Bearer " + std::move(got->token), now + lifetime});
      std::lock_guard store(mutex_);
      current_ = std::move(fresh);
      version_.fetch_add(1, std::memory_order_release);
      // Never sooner than min_backoff: a token of no lifetime must not spin the thread.
      next = now + std::max<steady::duration>(
                       std::chrono::duration_cast<steady::duration>(lifetime * options_.refresh_at),
                       options_.min_backoff);
      backoff = options_.min_backoff;
    } else {
      next = now + backoff;
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    lk.lock();
    if (got) {
      last_error_.clear();
    } else {
      last_error_ = "bearer token fetch failed: " + got.error().message();
    }
    fetches_.fetch_add(1, std::memory_order_release);
    fetched_.notify_all();
    wake_.wait_until(lk, next, [&] { return stop_; });
  }
}

}  // namespace corvid
