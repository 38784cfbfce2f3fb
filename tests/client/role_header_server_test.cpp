// A server program's translation unit: <corvid/server.hpp> and the shared API's own includes,
// none of the client's headers. Every handler kind registers here (what the invokers
// instantiate in a user's file); role_headers.cmake checks what the header pulls.
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include <corvid/server.hpp>

// The shared API, as a header both processes include would have it.
#include "role_api.hpp"

namespace role_server {

using namespace corvid_test::role_api;

inline corvid::task<std::string> with_context(corvid::request_context& ctx, std::string s) {
  co_await ctx.sleep_for(std::chrono::milliseconds(1));
  ctx.set_response_attachment(std::string(ctx.request_attachment()));
  co_return s + ctx.peer_address();
}
inline int slow_square(int x) { return x * x; }

struct counter {
  int bump(int by) { return total += by; }
  int total = 0;
};

}  // namespace role_server

TEST(role_headers, server_header_alone_registers_every_handler_kind) {
  using namespace role_server;
  corvid::server_config config;
  config.address = "127.0.0.1";
  config.io_threads = 1;
  config.worker_threads = 1;
  config.reflection = true;
  corvid::rpc_server server(config);
  counter c;
  server.register_handler<echo, add, with_context, count_to, upload, chat>();
  server.register_handler<&counter::bump>(&c);
  server.register_blocking_handler<slow_square>();
  server.set_method_limit<add>(4);
  EXPECT_EQ(server.method_refusals<add>(), 0u);
  ASSERT_FALSE(server.async_start());
  EXPECT_NE(server.port(), 0);
  server.set_serving(false);
  server.stop();
}
