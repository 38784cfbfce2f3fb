#pragma once
// A call the client internals can file, link and park; it never completes.
#include <corvid/client/call_state.hpp>

#include "client/call_table.hpp"

namespace corvid_test {

struct test_call final : corvid::detail::call_base {
  void set_reply(corvid::rpc_errc, std::string_view, std::string_view) noexcept override {}
  void set_error(corvid::rpc_error) noexcept override {}
  // The connection's part of it (its id, deadline links, parked request).
  corvid::detail::call_slot& slot() noexcept { return corvid::detail::slot_of(*this); }
};

}  // namespace corvid_test
