// The client's side of call metadata, against a fake server that reads the frames as sent:
// call_options::metadata on the wire (docs/protocol.md's vector), reply metadata read into
// call_options::reply_metadata, and a bad reply block failing its call alone.
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "corvid/client/rpc_client.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/sync_wait.hpp"

#include "doc_echo.hpp"
#include "hex.hpp"
#include "protocol/metadata_block.hpp"
#include "raw_server.hpp"
#include "role_api.hpp"

namespace corvid::test {
namespace {

using namespace std::chrono_literals;

// The bytes of docs/protocol.md's "```hex <name>" block (each line's text before its first
// double space).
std::string doc_vector(std::string_view name) {
  std::ifstream in(CORVID_PROTOCOL_DOC);
  std::string line, text;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside) {
      inside = line == "```hex " + std::string(name);
    } else if (line.starts_with("```")) {
      return unhex(text);
    } else {
      text += line.substr(0, line.find("  ")) + " ";
    }
  }
  ADD_FAILURE() << "no vector " << name << " in docs/protocol.md";
  return {};
}

std::string encoded(std::string_view s) {
  std::string out;
  codec::string_sink sink{out};
  codec::encode(sink, s);
  return out;
}

std::string block(const metadata& md) {
  std::string b(protocol::metadata_wire_size(md), '\0');
  protocol::encode_metadata(md, b.data());
  return b;
}

std::string response(std::uint64_t id, std::string_view body, std::uint8_t flags = 0,
                     rpc_errc status = rpc_errc::ok) {
  protocol::frame_header h;
  h.type = protocol::msg_type::response;
  h.flags = flags;
  h.status = status;
  h.request_id = id;
  h.body_length = static_cast<std::uint32_t>(body.size());
  std::string f(protocol::header_size, '\0');
  protocol::encode_header(h, f.data());
  return f + std::string(body);
}

protocol::frame_header header_of(const std::string& frame) {
  protocol::frame_header h;
  EXPECT_GE(frame.size(), protocol::header_size);
  if (frame.size() >= protocol::header_size) {
    EXPECT_EQ(protocol::decode_header(frame.data(), h, UINT32_MAX), protocol::header_errc::ok);
  }
  return h;
}

class call_metadata_client : public ::testing::Test {
 protected:
  void connect(rpc_client& client) {
    ASSERT_FALSE(sync_wait(client.connect(server_.endpoint())));
    server_.accept();
  }
  // Starts echo(text) with `o` (no deadline on the wire), reads its request, answers it with
  // `reply(id)` and returns the call's result and the request's bytes.
  template <class Reply>
  auto echo_call(rpc_client& client, call_options o, std::string& request, Reply reply) {
    o.timeout = 0ms;
    auto pending = client.call_with<echo>(o, "hello");
    request = server_.read_frame();
    if (!request.empty()) server_.send(reply(header_of(request).request_id));
    return sync_wait(std::move(pending));
  }

  raw_server server_;
};

TEST_F(call_metadata_client, request_carries_the_documented_block) {
  rpc_client client;
  connect(client);
  const metadata md{{"tenant", "acme"}};
  call_options o;
  o.metadata = &md;
  std::string request;
  auto r = echo_call(client, o, request,
                     [](std::uint64_t id) { return response(id, encoded("hello")); });
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, "hello");
  std::string expected = doc_vector("metadata_echo_request");
  ASSERT_EQ(request.size(), expected.size()) << hex(request);
  request.replace(8, 8, expected, 8, 8);  // the request id is the client's choice
  EXPECT_EQ(hex(request), hex(expected));
}

TEST_F(call_metadata_client, calls_without_metadata_are_as_before) {
  rpc_client client;
  connect(client);
  const metadata none;  // empty: no block, no flag
  for (const metadata* md : {static_cast<const metadata*>(nullptr), &none}) {
    call_options o;
    o.metadata = md;
    std::string request;
    auto r = echo_call(client, o, request,
                       [](std::uint64_t id) { return response(id, encoded("hello")); });
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(header_of(request).flags, 0);
    EXPECT_EQ(static_cast<int>(request[2]), protocol::base_version);
    EXPECT_EQ(request.substr(protocol::header_size), encoded("hello"));
  }
}

TEST_F(call_metadata_client, parked_request_carries_metadata) {
  client_config config;
  config.max_pending_calls = 1;  // the second call parks until the first is answered
  rpc_client client(config);
  connect(client);
  const metadata md{{"tenant", "acme"}};
  call_options o;
  o.timeout = 0ms;
  o.metadata = &md;
  auto first = client.call_with<echo>(o, "hello");
  auto second = client.call_with<echo>(o, "hello");
  const std::string f1 = server_.read_frame();
  server_.send(response(header_of(f1).request_id, encoded("hello")));
  const std::string f2 = server_.read_frame();
  server_.send(response(header_of(f2).request_id, encoded("hello")));
  ASSERT_TRUE(sync_wait(std::move(first)));
  ASSERT_TRUE(sync_wait(std::move(second)));
  const std::string expected = doc_vector("metadata_echo_request");
  for (const std::string& f : {f1, f2}) {
    ASSERT_EQ(f.size(), expected.size());
    EXPECT_EQ(hex(f.substr(16)), hex(expected.substr(16)));
  }
}

TEST_F(call_metadata_client, stream_open_carries_metadata) {
  rpc_client client;
  connect(client);
  const metadata md{{"tenant", "acme"}};
  call_options o;
  o.timeout = 0ms;
  o.metadata = &md;
  auto opened = client.stream_with<corvid_test::role_api::count_to>(o, 3);
  const std::string request = server_.read_frame();
  ASSERT_GE(request.size(), protocol::header_size);
  EXPECT_EQ(header_of(request).flags, protocol::flag_metadata);
  auto r = protocol::read_metadata(std::string_view(request).substr(protocol::header_size),
                                   protocol::default_metadata_limits);
  ASSERT_EQ(r.code, rpc_errc::ok) << r.message;
  EXPECT_EQ(r.entries.to_metadata(), md);
  client.close();
}

TEST_F(call_metadata_client, reply_metadata_is_read) {
  rpc_client client;
  connect(client);
  metadata got;
  call_options o;
  o.reply_metadata = &got;
  std::string request;
  auto r = echo_call(client, o, request, [](std::uint64_t id) {
    std::string f = doc_vector("metadata_echo_response");
    f.replace(8, 8, response(id, "").substr(8, 8));
    return f;
  });
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->value, "hello");
  EXPECT_EQ(got, (metadata{{"served-by", "a1"}}));
}

TEST_F(call_metadata_client, error_reply_with_metadata_keeps_its_message) {
  rpc_client client;
  connect(client);
  metadata got;
  call_options o;
  o.reply_metadata = &got;
  std::string request;
  auto r = echo_call(client, o, request, [](std::uint64_t id) {
    return response(id, block({{"retry-after", "5"}}) + encoded("go away"), protocol::flag_metadata,
                    rpc_errc::unauthenticated);
  });
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), rpc_errc::unauthenticated);
  EXPECT_EQ(r.error().message(), "go away");
  EXPECT_EQ(got.find("retry-after"), "5");
}

// A reply block that is malformed or over the client's limits ends that call alone.
TEST_F(call_metadata_client, bad_reply_block_fails_only_its_call) {
  client_config config;
  config.max_metadata_entries = 1;
  rpc_client client(config);
  connect(client);
  std::string cut = block({{"a", "1"}});
  cut.resize(cut.size() - 1);  // the last entry's value cut off
  const std::string bodies[] = {
      cut,                                             // malformed
      block({{"a", "1"}, {"b", "2"}}) + encoded("x"),  // two entries, one allowed
  };
  for (const std::string& body : bodies) {
    std::string request;
    auto r = echo_call(client, {}, request, [&](std::uint64_t id) {
      return response(id, body, protocol::flag_metadata);
    });
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code(), rpc_errc::protocol_error);
    EXPECT_TRUE(r.error().message().starts_with("bad reply metadata: ")) << r.error().message();
    // The connection goes on: the next call is answered.
    auto ok = echo_call(client, {}, request,
                        [](std::uint64_t id) { return response(id, encoded("hello")); });
    ASSERT_TRUE(ok) << ok.error().message();
  }
}

}  // namespace
}  // namespace corvid::test
