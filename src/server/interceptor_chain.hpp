#pragma once
// The server's interceptors, in the order added (rpc_server::add_interceptor): fixed at
// start(), then read by every reactor without a lock.
#include <cstddef>
#include <memory>
#include <vector>

#include "corvid/server/interceptor.hpp"

namespace corvid::detail {

class interceptor_chain {
 public:
  void add(std::shared_ptr<server_interceptor> i);
  void add(std::shared_ptr<async_server_interceptor> i);

  bool empty() const noexcept { return links_.empty(); }
  std::size_t size() const noexcept { return links_.size(); }
  bool observes_end() const noexcept { return observes_end_; }

  // What running the links from one of them on found: the first refusal, or proceed; `at`
  // is where it stopped: a refusing link, an asynchronous one it did not run, or size().
  struct outcome {
    call_verdict verdict;
    std::size_t at = 0;
  };
  // Runs the synchronous links from `from` on, up to the first refusal or asynchronous
  // link. An interceptor that throws refuses the call with rpc_errc::internal.
  outcome run(const call_info& call, std::size_t from) const;
  // The asynchronous interceptor at `i` (run stopped there).
  async_server_interceptor& async_at(std::size_t i) const noexcept { return *links_[i].async; }
  // A call that passed every link ended: each link that observes ends hears of it.
  void ended(const call_end& end) const noexcept;

 private:
  struct link {
    std::shared_ptr<server_interceptor> sync;  // one of the two is set
    std::shared_ptr<async_server_interceptor> async;
  };
  std::vector<link> links_;
  bool observes_end_ = false;
};

// "interceptor threw: <what>", the refusal of a call whose interceptor threw.
call_verdict interceptor_failed(std::exception_ptr e);

}  // namespace corvid::detail
