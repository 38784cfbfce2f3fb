#pragma once
// A call the client internals can file, link and park; it never completes.
#include <corvid/client/call_state.hpp>

namespace corvid_test {

struct test_call final : corvid::detail::call_base {
  void set_reply(corvid::rpc_errc, std::string_view, std::string_view) noexcept override {}
  void set_error(corvid::rpc_error) noexcept override {}
};

}  // namespace corvid_test
