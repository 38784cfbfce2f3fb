// A client talking to a broken server: calls end with clear errors, never hang or crash.
#include <thread>

#include "test_support.hpp"

namespace corvid_test {
namespace {

// Accepts one connection, reads one request header+body, then sends `reply(request_id)`.
class fake_server {
 public:
  template <class Reply>
  explicit fake_server(Reply reply) : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this, reply] {
      asio::ip::tcp::socket s(io_);
      acceptor_.accept(s);
      char hdr[corvid::protocol::header_size];
      asio::read(s, asio::buffer(hdr));
      corvid::protocol::frame_header h;
      corvid::protocol::decode_header(hdr, h, UINT32_MAX);
      std::string rest(h.payload_size(), '\0');
      asio::read(s, asio::buffer(rest));
      asio::write(s, asio::buffer(reply(h.request_id)));
      char c;
      std::error_code ec;
      s.read_some(asio::buffer(&c, 1), ec);  // hold the socket until the client closes
    });
  }
  ~fake_server() { thread_.join(); }
  std::string endpoint() const {
    return "127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
  }

 private:
  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

std::string response(std::uint64_t id, std::string body, corvid::rpc_errc status = {}) {
  corvid::protocol::frame_header h;
  h.type = corvid::protocol::msg_type::response;
  h.request_id = id;
  h.status = status;
  return frame_bytes(h, body);
}

corvid::rpc_error call_add(const std::string& endpoint) {
  corvid::rpc_client client;
  if (auto ec = corvid::sync_wait(connect(client, endpoint))) return ec;
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call_for<add>(5s, 1, 2);
  }());
  return r.has_value() ? corvid::rpc_error{} : r.error();
}

TEST(bad_reply, garbage) {
  fake_server fake([](std::uint64_t) { return std::string(64, '\x7f'); });
  auto e = call_add(fake.endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::protocol_error) << e.message();
}

TEST(bad_reply, reply_larger_than_the_client_limit) {
  fake_server fake([](std::uint64_t id) {
    std::string r = response(id, "");
    r[20] = r[21] = r[22] = r[23] = '\x7f';  // body_length ~2 GiB
    return r;
  });
  auto e = call_add(fake.endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::protocol_error) << e.message();
}

TEST(bad_reply, body_that_does_not_decode_as_the_result) {
  fake_server fake([](std::uint64_t id) { return response(id, "x"); });  // 1 byte, not an int
  auto e = call_add(fake.endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::protocol_error) << e.message();
}

TEST(bad_reply, error_status_carries_the_message) {
  fake_server fake([](std::uint64_t id) {
    std::string body;
    corvid::codec::string_sink sink{body};
    corvid::codec::encode(sink, std::string_view("overloaded"));
    return response(id, body, corvid::rpc_errc::server_busy);
  });
  auto e = call_add(fake.endpoint());
  EXPECT_EQ(e.code(), corvid::rpc_errc::server_busy);
  EXPECT_EQ(e.message(), "overloaded");
}

corvid::stream<std::string> words(int n) {
  for (int i = 0; i < n; ++i) co_yield std::to_string(i);
}

// A stream item is taken apart as it arrives when the reader wants strings: one that is not
// exactly one encoded string (a prefix claiming more bytes than follow, or fewer) ends the
// stream with protocol_error, after the good items before it.
TEST(bad_reply, stream_items_that_are_not_one_string_end_the_stream) {
  // "\x05" "ab": 5 bytes claimed, 2 follow; "\x01" "ab": 1 claimed, 2 follow; nothing at all.
  for (const std::string& bad : {std::string("\x05"
                                             "ab"),
                                 std::string("\x01"
                                             "ab"),
                                 std::string()}) {
    fake_server fake([&](std::uint64_t id) {
      corvid::protocol::frame_header h;
      h.type = corvid::protocol::msg_type::stream_item;
      h.request_id = id;
      return frame_bytes(h, std::string("\x02ok")) + frame_bytes(h, bad);
    });
    corvid::rpc_client client;
    ASSERT_FALSE(corvid::sync_wait(connect(client, fake.endpoint())));
    auto [items, err] = corvid::sync_wait(
        [&]() -> corvid::task<std::pair<std::vector<std::string>, corvid::rpc_error>> {
          std::vector<std::string> got;
          auto s = co_await client.stream_with<words>({5s, {}}, 3);
          if (!s) co_return std::pair{got, s.error()};
          while (auto w = co_await s->next()) got.push_back(*w);
          co_return std::pair{got, s->error()};
        }());
    EXPECT_EQ(items, std::vector<std::string>{"ok"});
    EXPECT_EQ(err.code(), corvid::rpc_errc::protocol_error) << err.message();
    client.close();
  }
}

TEST(bad_reply, server_closes_mid_call) {
  fake_server fake([](std::uint64_t id) { return response(id, "").substr(0, 10); });
  // Half a header, then the fake server waits for us; our deadline is 5 s, but the
  // connection-level failure must come first when the server goes away: close it from here.
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(connect(client, fake.endpoint())));
  std::thread closer([&] {
    // Once the call is on the wire (the fake server then answers half a header).
    EXPECT_TRUE(eventually([&] { return client.stats().frames_sent >= 1; }));
    client.close();
  });
  auto r = corvid::sync_wait([&]() -> corvid::task<corvid::expected<int, corvid::rpc_error>> {
    co_return co_await client.call_for<add>(5s, 1, 2);
  }());
  closer.join();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::connection_closed);
}

}  // namespace
}  // namespace corvid_test
