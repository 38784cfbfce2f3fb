#pragma once
// What handler templates use of a server connection: a reply sink (reply_sink.hpp), a call
// budget (call_budget.hpp) and a stream port (stream_port.hpp); each template uses the
// narrowest it needs.
#include <memory>

#include "corvid/detail/call_budget.hpp"
#include "corvid/detail/reply_sink.hpp"
#include "corvid/detail/stream_port.hpp"

namespace corvid::detail {

class reply_channel : public reply_sink,
                      public call_budget,
                      public stream_port,
                      public std::enable_shared_from_this<reply_channel> {};

}  // namespace corvid::detail
