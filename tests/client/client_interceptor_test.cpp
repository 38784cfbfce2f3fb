// Client interceptors (client_config::interceptors), against a fake server reading the raw
// frames: one adds metadata (to a copy: the caller's stays as it was), one refuses the call
// before it is sent, one throws (rpc_errc::internal); they run in order.
#include "corvid/client/client_interceptor.hpp"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "corvid/client/rpc_client.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/sync_wait.hpp"

#include "doc_echo.hpp"
#include "protocol/metadata_block.hpp"
#include "raw_server.hpp"
#include "role_api.hpp"

namespace corvid::test {
namespace {

using namespace std::chrono_literals;

struct adds : client_interceptor {
  std::string key, value;
  std::vector<std::string> seen;  // function names, in call order
  std::vector<std::uint32_t> ids;
  adds(std::string k, std::string v) : key(std::move(k)), value(std::move(v)) {}
  rpc_error on_call(outgoing_call& call) override {
    seen.emplace_back(call.function_name());
    ids.push_back(call.function_id());
    call.metadata().add(key, value);
    return {};
  }
};
struct refuses : client_interceptor {
  rpc_error on_call(outgoing_call&) override {
    return {rpc_errc::permission_denied, "not for you"};
  }
};
struct throws : client_interceptor {
  rpc_error on_call(outgoing_call&) override { throw std::runtime_error("interceptor broke"); }
};

// The metadata block of a request frame, read back (empty without the flag).
metadata metadata_of(const std::string& frame) {
  protocol::frame_header h;
  if (frame.size() < protocol::header_size ||
      protocol::decode_header(frame.data(), h, UINT32_MAX) != protocol::header_errc::ok ||
      (h.flags & protocol::flag_metadata) == 0)
    return {};
  auto r = protocol::read_metadata(std::string_view(frame).substr(protocol::header_size),
                                   protocol::default_metadata_limits);
  EXPECT_EQ(r.code, rpc_errc::ok) << r.message;
  return r.entries.to_metadata();
}

std::string ok_response(const std::string& request) {
  protocol::frame_header req;
  protocol::decode_header(request.data(), req, UINT32_MAX);
  std::string body;
  codec::string_sink sink{body};
  codec::encode(sink, std::string_view("hello"));
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.request_id = req.request_id;
  h.body_length = static_cast<std::uint32_t>(body.size());
  std::string f(protocol::header_size, '\0');
  protocol::encode_header(h, f.data());
  return f + body;
}

class client_interceptors : public ::testing::Test {
 protected:
  std::unique_ptr<rpc_client> connected(std::vector<std::shared_ptr<client_interceptor>> list) {
    client_config config;
    config.interceptors = std::move(list);
    auto client = std::make_unique<rpc_client>(config);
    EXPECT_FALSE(sync_wait(client->connect(server_.endpoint())));
    server_.accept();
    return client;
  }
  raw_server server_;
};

TEST_F(client_interceptors, add_metadata_in_order_to_a_copy) {
  auto first = std::make_shared<adds>("tenant", "acme");
  auto second = std::make_shared<adds>("authorization", "Bearer t");
  auto client = connected({first, second});
  const metadata mine{{"trace-tag", "x"}};
  call_options o;
  o.metadata = &mine;
  auto reply = client->call_with<echo>(o, "hello");
  const std::string request = server_.read_frame();
  server_.send(ok_response(request));
  auto r = sync_wait(std::move(reply));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(metadata_of(request),
            (metadata{{"trace-tag", "x"}, {"tenant", "acme"}, {"authorization", "Bearer t"}}));
  EXPECT_EQ(mine, (metadata{{"trace-tag", "x"}}));
  EXPECT_EQ(first->seen, std::vector<std::string>{"echo"});
  EXPECT_EQ(first->ids, std::vector<std::uint32_t>{protocol::function_id<echo>()});
  EXPECT_EQ(second->seen, std::vector<std::string>{"echo"});
}

TEST_F(client_interceptors, run_for_stream_opens) {
  auto added = std::make_shared<adds>("tenant", "acme");
  auto refusing = connected({std::make_shared<refuses>()});
  auto refused = sync_wait(refusing->stream<corvid_test::role_api::count_to>(3));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code(), rpc_errc::permission_denied);
  refusing->close();
  EXPECT_TRUE(server_.read_frame().empty());  // nothing was sent

  raw_server other;
  client_config config;
  config.interceptors = {added};
  rpc_client client(config);
  ASSERT_FALSE(sync_wait(client.connect(other.endpoint())));
  other.accept();
  auto opened = client.stream<corvid_test::role_api::count_to>(3);
  EXPECT_EQ(metadata_of(other.read_frame()), (metadata{{"tenant", "acme"}}));
  client.close();
}

TEST_F(client_interceptors, refusal_fails_the_call_unsent) {
  auto after = std::make_shared<adds>("tenant", "acme");
  auto client = connected({std::make_shared<refuses>(), after});
  auto r = sync_wait(client->call<echo>("hello"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), rpc_errc::permission_denied);
  EXPECT_EQ(r.error().message(), "not for you");
  EXPECT_TRUE(after->seen.empty());  // the first error stops the chain
  EXPECT_EQ(client->pending_calls(), 0u);
}

TEST_F(client_interceptors, throwing_fails_the_call_with_internal) {
  auto client = connected({std::make_shared<throws>()});
  auto r = sync_wait(client->call<echo>("hello"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), rpc_errc::internal);
  EXPECT_EQ(r.error().message(), "interceptor broke");
}

// A refused call never reaches the wire: after three, the server reads only the close.
TEST_F(client_interceptors, refused_calls_send_nothing) {
  auto client = connected({std::make_shared<refuses>()});
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(sync_wait(client->call<echo>("hello")));
  client->close();
  EXPECT_TRUE(server_.read_frame().empty());
}

}  // namespace
}  // namespace corvid::test
