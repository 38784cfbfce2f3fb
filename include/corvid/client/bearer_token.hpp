#pragma once
// bearer_token_provider: a client_interceptor that adds "authorization: Bearer <token>" to
// every call, the token coming from a fetch function the application gives (an OAuth client,
// a file a sidecar rewrites). A thread of its own fetches the first token at once and the
// next one before the current one expires, so calls do not wait for a fetch (only calls made
// before the first fetch ended do, up to first_token_wait). A failed fetch keeps the token it
// has until that expires and tries again with back-off; a call made with no valid token fails
// with unauthenticated and the fetch's error message.
//
//   auto auth = std::make_shared<corvid::bearer_token_provider>([] {
//     return corvid::bearer_token{fetch_from_idp(), std::chrono::minutes(10)};
//   });
//   corvid::client_config config;
//   config.interceptors.push_back(auth);
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "corvid/client/client_interceptor.hpp"
#include "corvid/error.hpp"
#include "corvid/expected.hpp"
#include "corvid/export.hpp"

namespace corvid {

struct bearer_token {
  std::string token;                   // sent as "Bearer <token>"
  std::chrono::milliseconds lifetime;  // valid for this long from when the fetch returned
};

struct bearer_token_options {
  // Refresh once this share of a token's lifetime has passed (0.8: a token of 10 minutes is
  // replaced after 8), leaving the rest for a fetch, and its retries, to succeed.
  double refresh_at = 0.8;
  // Back-off between failed fetches: from min_backoff, doubling, up to max_backoff.
  std::chrono::milliseconds min_backoff{100};
  std::chrono::milliseconds max_backoff{30'000};
  // How long a call made before the first fetch ended waits for it.
  std::chrono::milliseconds first_token_wait{10'000};
};

class CORVID_API bearer_token_provider final : public client_interceptor {
 public:
  // A fetch returns the token, or the error that says why there is none (an exception it
  // throws counts as an error with its what()). It runs on the provider's thread, one at a
  // time.
  using fetch_function = std::function<expected<bearer_token, rpc_error>()>;

  explicit bearer_token_provider(fetch_function fetch, bearer_token_options options = {});
  // Stops the thread (waiting for a fetch under way to return).
  ~bearer_token_provider() override;
  bearer_token_provider(const bearer_token_provider&) = delete;
  bearer_token_provider& operator=(const bearer_token_provider&) = delete;

  rpc_error on_call(outgoing_call& call) override;
  // Fetches (successful or not) that have ended so far.
  std::uint64_t fetches() const noexcept { return fetches_.load(std::memory_order_acquire); }

 private:
  struct current {
    std::string header;  // "Bearer <token>"
    std::chrono::steady_clock::time_point expires;
  };
  void run();
  // `t` is not valid: waits for the first fetch if none ended yet, and takes the current
  // token into `t` if it is valid now; else says why there is none.
  rpc_error no_token(std::shared_ptr<const current>& t);
  // The token under the mutex, and the version it is.
  std::shared_ptr<const current> take(std::uint64_t& version);

  fetch_function fetch_;
  const bearer_token_options options_;
  // Calls keep a copy of the token per thread and compare versions (one atomic load), so
  // the common call takes no lock and touches no shared reference count; a thread takes
  // the mutex once per new token.
  const std::uint64_t id_;                  // this provider, among all (the copies' owner)
  std::atomic<std::uint64_t> version_{0};   // bumped when a new token is stored
  std::shared_ptr<const current> current_;  // under mutex_; null until a fetch succeeded
  std::atomic<std::uint64_t> fetches_{0};
  std::mutex mutex_;
  std::condition_variable wake_;     // the thread: stop
  std::condition_variable fetched_;  // callers waiting for the first fetch
  std::string last_error_;           // under mutex_: the last failed fetch's message
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace corvid
