// A client program's translation unit: <corvid/client.hpp> and the shared API's own includes,
// no server header. Every client call form compiles here, on a connection, a pool and a
// balancer (what they instantiate in a user's file); role_headers.cmake checks what the
// header pulls.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include <gtest/gtest.h>

#include <corvid/client.hpp>

// The shared API, as a header both processes include would have it.
#include "role_api.hpp"

namespace role_client {

using namespace corvid_test::role_api;

// Not run (no server here): compiled, so each template below is instantiated.
corvid::task<int> every_call_form(corvid::rpc_client& client,
                                  std::shared_ptr<corvid::client_pool> pool,
                                  std::shared_ptr<corvid::load_balancer> lb) {
  if (auto ec = co_await client.connect("127.0.0.1:1")) co_return 1;
  auto r = co_await client.call<echo>("hello");
  auto s = co_await client.call_for<add>(std::chrono::milliseconds(100), 1, 2);
  corvid::call_options options;
  options.hash_key = "k";
  auto w = co_await client.call_with<add>(options, 1, 2);
  corvid::async_reply_t<add> pending = co_await client.send_request<add>(3, 4);
  auto t = co_await std::move(pending);
  auto numbers = co_await client.stream<count_to>(3);
  if (numbers) {
    while (auto n = co_await numbers->next()) {
    }
  }
  auto up = co_await client.open_stream<upload>();
  if (up) {
    if (auto e = co_await up->write(std::string("chunk"))) co_return 2;
    auto total = co_await up->finish();
  }
  auto duplex = co_await client.open_stream<chat>();
  if (duplex) {
    co_await duplex->write(std::string("hi"));
    duplex->close_writes();
    auto echoed = co_await duplex->next();
  }
  auto health = co_await client.call<&corvid::health_service::check>();

  auto pr = co_await pool->call<add>(1, 2);
  auto ps = co_await pool->stream<count_to>(3);
  auto pu = co_await pool->open_stream<upload>();
  auto lr = co_await lb->call<echo>("hello");
  auto ls = co_await lb->stream<count_to>(3);
  auto lu = co_await lb->open_stream<chat>();
  co_return r&& s&& w&& t&& health&& pr&& ps&& pu&& lr&& ls&& lu ? 0 : 3;
}

}  // namespace role_client

TEST(role_headers, client_header_alone_serves_every_client_call_form) {
  static_assert(
      std::is_same_v<decltype(role_client::every_call_form),
                     corvid::task<int>(corvid::rpc_client&, std::shared_ptr<corvid::client_pool>,
                                       std::shared_ptr<corvid::load_balancer>)>);
  EXPECT_FALSE(corvid::version().empty());
}
