#include "interceptor_chain.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "corvid/detail/handler_invoker.hpp"

namespace corvid::detail {

void interceptor_chain::add(std::shared_ptr<server_interceptor> i) {
  if (!i) throw std::invalid_argument("corvid: add_interceptor(nullptr)");
  observes_end_ = observes_end_ || i->observes_end();
  links_.push_back({std::move(i), nullptr});
}

void interceptor_chain::add(std::shared_ptr<async_server_interceptor> i) {
  if (!i) throw std::invalid_argument("corvid: add_interceptor(nullptr)");
  links_.push_back({nullptr, std::move(i)});
}

call_verdict interceptor_failed(std::exception_ptr e) {
  return call_verdict::refuse(rpc_errc::internal, "interceptor threw: " + describe_exception(e));
}

interceptor_chain::outcome interceptor_chain::run(const call_info& call, std::size_t from) const {
  for (std::size_t i = from; i < links_.size(); ++i) {
    const link& l = links_[i];
    if (!l.sync) return {call_verdict::proceed(), i};
    try {
      call_verdict v = l.sync->on_call(call);
      if (!v.proceeds()) return {std::move(v), i};
    } catch (...) {
      return {interceptor_failed(std::current_exception()), i};
    }
  }
  return {call_verdict::proceed(), links_.size()};
}

void interceptor_chain::ended(const call_end& end) const noexcept {
  for (const link& l : links_) {
    if (l.sync && l.sync->observes_end()) l.sync->on_end(end);
  }
}

}  // namespace corvid::detail
