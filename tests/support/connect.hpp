#pragma once
// co_await client.connect(ep) as a task, for sync_wait from a test's thread.
#include <string>

#include <corvid/corvid.hpp>

namespace corvid::test {

inline corvid::task<corvid::rpc_error> connect(corvid::rpc_client& c, std::string ep) {
  co_return co_await c.connect(ep);
}

}  // namespace corvid::test
