// Streams end to end: the three modes over TCP, Unix sockets and TLS, then ending (errors,
// cancellation, deadlines, disconnects, stop), limits and backpressure over TCP.
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#include "background_quiet.hpp"  // pools and balancers end their background work first
#include "eventually.hpp"
#include "slowdown.hpp"
#include "stream_handlers.hpp"
#include "stream_server.hpp"

namespace {

using namespace std::chrono_literals;
using namespace corvid_test::streams;
using corvid::test::stream_server;
using corvid::test::transport;

class each_transport : public ::testing::TestWithParam<transport> {};

TEST_P(each_transport, server_streaming_delivers_every_item_in_order_then_ends_cleanly) {
  stream_server srv(GetParam());
  auto client = srv.connect();
  auto [got, err] = corvid::sync_wait(read_count(*client, 5));
  EXPECT_FALSE(err) << err.message();
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST_P(each_transport, a_long_server_stream_passes_many_credit_windows_complete) {
  stream_server srv(GetParam());
  auto client = srv.connect();
  // 100k items of 36 bytes of credit each: about 14 windows of 256 KiB.
  auto [got, err] = corvid::sync_wait(read_count(*client, 100'000));
  EXPECT_FALSE(err) << err.message();
  ASSERT_EQ(got.size(), 100'000u);
  for (int i = 0; i < 100'000; ++i) ASSERT_EQ(got[i], i + 1);
}

TEST_P(each_transport, client_streaming_returns_the_handlers_result) {
  stream_server srv(GetParam());
  auto client = srv.connect();
  auto small = corvid::sync_wait(write_upload(*client, 3, 1000));
  ASSERT_TRUE(small) << small.error().message();
  EXPECT_EQ(*small, 3000u);
  auto large = corvid::sync_wait(write_upload(*client, 2000, 1000));  // 2 MB: many windows
  ASSERT_TRUE(large) << large.error().message();
  EXPECT_EQ(*large, 2'000'000u);
}

TEST_P(each_transport, bidirectional_streams_answer_each_message_then_end_after_close_writes) {
  stream_server srv(GetParam());
  auto client = srv.connect();
  auto [got, err] = corvid::sync_wait(talk(*client, {"a", "b", "c"}));
  EXPECT_FALSE(err) << err.message();
  EXPECT_EQ(got, (std::vector<std::string>{"re: a", "re: b", "re: c"}));
}

// Reads stream F's `count` items of 1 MiB, each of one letter ('a' + its index % 26) through
// and through: "N items", or what the first wrong item was; and why the stream ended.
template <auto F>
std::pair<std::string, corvid::rpc_error> read_megabyte_items(corvid::rpc_client& client,
                                                              std::uint32_t count) {
  return corvid::sync_wait([&]() -> corvid::task<std::pair<std::string, corvid::rpc_error>> {
    auto s = co_await client.stream<F>(1u << 20, count);
    std::uint32_t i = 0;
    while (auto b = co_await s->next()) {
      const char want = static_cast<char>('a' + i % 26);
      if (b->size() != (1u << 20) || b->find_first_not_of(want) != std::string::npos) {
        co_return std::pair{"item " + std::to_string(i) + " is not 1 MiB of " + want, s->error()};
      }
      ++i;
    }
    co_return std::pair{std::to_string(i) + " items", s->error()};
  }());
}

TEST_P(each_transport, megabyte_items_arrive_whole) {
  stream_server srv(GetParam());
  auto client = srv.connect();
  auto [what, err] = read_megabyte_items<blobs>(*client, 8u);
  EXPECT_FALSE(err) << err.message();
  EXPECT_EQ(what, "8 items");
}

// Items of 1 MiB that are views of the producer's buffer, refilled for each item: each must
// arrive whole with its own bytes, so the producer may not resume before its item is written.
TEST_P(each_transport, lent_megabyte_items_arrive_unchanged) {
  stream_server srv(GetParam());
  auto client = srv.connect();
  auto [what, err] = read_megabyte_items<lent_blobs>(*client, 12u);
  EXPECT_FALSE(err) << err.message();
  EXPECT_EQ(what, "12 items");
}

INSTANTIATE_TEST_SUITE_P(streams, each_transport,
                         ::testing::Values(transport::tcp, transport::unix_socket, transport::tls),
                         [](const auto& param_info) {
                           switch (param_info.param) {
                             case transport::tcp:
                               return std::string("tcp");
                             case transport::unix_socket:
                               return std::string("unix");
                             default:
                               return std::string("tls");
                           }
                         });

TEST(streams, a_handler_that_throws_ends_the_stream_with_handler_error_after_its_items) {
  stream_server srv;
  auto client = srv.connect();
  auto run = [&]() -> corvid::task<std::pair<std::vector<int>, corvid::rpc_error>> {
    auto s = co_await client->stream<fails_after>(3);
    std::vector<int> got;
    while (auto v = co_await s->next()) got.push_back(*v);
    co_return std::pair{got, s->error()};
  };
  auto [got, err] = corvid::sync_wait(run());
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(err.code(), corvid::rpc_errc::handler_error);
  EXPECT_NE(err.message().find("producer broke"), std::string::npos) << err.message();
}

TEST(streams, an_item_over_max_frame_size_throws_at_its_co_yield) {
  auto cfg = stream_server::config();
  cfg.max_frame_size = 64 << 10;
  stream_server srv(transport::tcp, cfg);
  auto client = srv.connect();
  auto run = [&]() -> corvid::task<std::string> {
    // Caught by the handler: it goes on with a small item and ends cleanly.
    auto s = co_await client->stream<oversize_then_small>(100'000u);
    std::string got;
    while (auto v = co_await s->next()) got += *v;
    if (got != "small" || s->error()) co_return "caught: " + got + " " + s->error().message();
    // Not caught: the stream ends with handler_error naming the limit.
    auto b = co_await client->stream<blobs>(100'000u, 2u);
    if (co_await b->next()) co_return "an oversized item arrived";
    if (b->error().code() != corvid::rpc_errc::handler_error ||
        b->error().message().find("max_frame_size") == std::string::npos) {
      co_return "uncaught: " + b->error().message();
    }
    co_return "";
  };
  EXPECT_EQ(corvid::sync_wait(run()), "");
}

TEST(streams, a_stream_to_a_missing_handler_ends_with_function_not_found) {
  corvid::server_config cfg = stream_server::config();
  corvid::rpc_server server(cfg);
  server.register_handler<upload>();
  ASSERT_FALSE(server.async_start());
  corvid::rpc_client client;
  ASSERT_FALSE(corvid::sync_wait(
      corvid::test::connect(client, "127.0.0.1:" + std::to_string(server.port()))));
  auto [got, err] = corvid::sync_wait(read_count(client, 3));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(err.code(), corvid::rpc_errc::function_not_found) << err.message();
  // A client-streaming call to a missing handler: the write learns it (no credit ever comes).
  corvid::rpc_server other(cfg);
  other.register_handler<count_to>();
  ASSERT_FALSE(other.async_start());
  corvid::rpc_client c2;
  ASSERT_FALSE(
      corvid::sync_wait(corvid::test::connect(c2, "127.0.0.1:" + std::to_string(other.port()))));
  auto r = corvid::sync_wait(write_upload(c2, 3, 10));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::function_not_found) << r.error().message();
}

// Waits (bounded) until the endless producer's coroutine was destroyed `n` times.
bool destroyed_within(int n, std::chrono::milliseconds limit) {
  return corvid::test::eventually([n] { return probe().destroyed >= n; }, limit);
}

// Waits (bounded) until the endless producer has yielded `n` items since `start`.
bool yielded_within(int start, int n) {
  return corvid::test::eventually([&] { return probe().yielded - start >= n; },
                                  corvid::test::patience(10s));
}

// About time: a producer without credit would run on meanwhile; one that waits does nothing
// (the wait itself has no event to wait for).
void give_a_producer_time_to_overrun() { std::this_thread::sleep_for(100ms); }

TEST(streams, a_client_cancel_stops_the_producer_and_destroys_its_coroutine) {
  stream_server srv;
  auto client = srv.connect();
  const int destroyed = probe().destroyed;
  auto run = [&]() -> corvid::task<corvid::rpc_error> {
    auto s = co_await client->stream<endless>(100u);
    for (int i = 0; i < 10; ++i) {
      if (!co_await s->next()) co_return s->error();
    }
    s->cancel();
    while (co_await s->next()) {
    }
    co_return s->error();
  };
  EXPECT_EQ(corvid::sync_wait(run()).code(), corvid::rpc_errc::cancelled);
  EXPECT_TRUE(destroyed_within(destroyed + 1, corvid::test::patience(2s)));
}

TEST(streams, a_slow_consumer_suspends_the_producer_and_bounds_server_memory) {
  stream_server srv;
  auto client = srv.connect();
  const int start = probe().yielded;
  auto s = corvid::test::opened(client->stream<endless>(4096u));  // the consumer reads nothing
  EXPECT_TRUE(yielded_within(start, 256 / 4));  // it runs until the credit runs out
  give_a_producer_time_to_overrun();
  const int yielded = probe().yielded - start;
  // One window (256 KiB) of 4 KiB items, plus the one that overshoots it, plus the one parked.
  EXPECT_LE(yielded, 256 / 4 + 2);
  give_a_producer_time_to_overrun();
  EXPECT_EQ(probe().yielded - start, yielded) << "the producer ran on without credit";
  // The server holds at most the queued window, not an ever-growing queue.
  EXPECT_LT(srv.server().memory().peak, 8u << 20);
  // Reading resumes it.
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < 500; ++i) co_await s.next();
  }());
  EXPECT_GT(probe().yielded - start, 500);
}

// The credit windows are configurable: a client's stream_window lets its server send that
// much ahead, a server's lets its clients write that much ahead.
TEST(streams, the_stream_windows_set_how_far_each_side_runs_ahead) {
  for (const std::size_t window : {std::size_t{256} << 10, std::size_t{4} << 20}) {
    auto cfg = stream_server::config();
    cfg.stream_window = window;
    stream_server srv(transport::tcp, cfg);
    corvid::client_config ccfg;
    ccfg.stream_window = window;
    auto client = srv.connect(ccfg);
    // Server to client: 64 KiB items, read by no one.
    const int start = probe().yielded;
    auto s = corvid::test::opened(client->stream<endless>(64u << 10));
    const int items = static_cast<int>(window / (64u << 10));
    EXPECT_TRUE(yielded_within(start, items)) << "window " << window;
    give_a_producer_time_to_overrun();
    const int ahead = probe().yielded - start;
    EXPECT_LE(ahead, items + 2) << "window " << window;
    s.cancel();
    // Client to server: 64 KiB writes to a handler that reads nothing for a second.
    const int written = corvid::sync_wait([&]() -> corvid::task<int> {
      auto up = co_await client->open_stream<lazy_upload>(1000u);
      if (!up) co_return -1;
      const std::string chunk(64u << 10, 'w');
      const auto until = std::chrono::steady_clock::now() + 500ms;
      int n = 0;
      while (std::chrono::steady_clock::now() < until) {
        if (co_await up->write(chunk)) co_return -2;
        ++n;
        if (n > items + 2) break;  // ran past the window: stop, the check below fails
      }
      up->cancel();
      co_return n;
    }());
    EXPECT_GE(written, items) << "window " << window;
    EXPECT_LE(written, items + 2) << "window " << window;
    // Gone before the server stops: a stream still open would hold the drain until it ends
    // or stop_timeout passes.
    client.reset();
    EXPECT_TRUE(corvid::test::eventually([&] { return srv.server().connection_count() == 0; },
                                         corvid::test::patience(5s)));
  }
}

// How many 1 MiB items a server streams ahead of a reader that took 20 and then stopped.
int items_ahead_of_a_stalled_reader(corvid::rpc_client& client) {
  const int start = probe().yielded;
  auto s = corvid::test::opened(client.stream<endless>(1u << 20));
  corvid::sync_wait([&]() -> corvid::task<void> {
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(co_await s.next());
  }());
  // At least the one item the fixed window sends ahead, then whatever it runs on to.
  EXPECT_TRUE(yielded_within(start, 20 + 2));
  give_a_producer_time_to_overrun();
  const int ahead = probe().yielded - start - 20;
  s.cancel();
  return ahead;
}

// How many 1 MiB items a client writes ahead of a handler that took 20 and then stalled:
// it writes until a write waits for credit, which the stream's deadline then ends (the
// cancel that follows ends the handler's stall).
int items_ahead_of_a_stalled_handler(corvid::rpc_client& client) {
  return corvid::sync_wait([&]() -> corvid::task<int> {
    const auto stall = static_cast<std::uint32_t>(corvid::test::patience(60s).count());
    auto up = co_await client.open_stream_with<upload_then_stall>(
        {.timeout = corvid::test::patience(2000ms), .attachment = {}}, 20u, stall);
    if (!up) co_return -100;
    const std::string chunk(1u << 20, 'w');
    int n = 0;
    corvid::rpc_error e;
    while (!(e = co_await up->write(chunk))) ++n;
    EXPECT_EQ(e.code(), corvid::rpc_errc::timeout) << e.message();
    co_return n - 20;
  }());
}

// Items of 1 MiB against the default 256 KiB windows: one item would be in flight at a time,
// each waiting a round trip for its credit. A reader that keeps up grows its window until
// the next item's credit is on its way before the reader has taken the last one (2 MiB),
// after which the producer runs one item further ahead; once the reader stops, the window
// bounds how far. Both ways.
TEST(streams, a_reader_that_keeps_up_with_large_items_grows_its_window) {
  stream_server srv;
  auto client = srv.connect();
  // Two items within the window, with the second overshooting it (and, on the server, the
  // one parked at its co_yield). With the window fixed at 256 KiB: one (and the parked one).
  EXPECT_EQ(items_ahead_of_a_stalled_reader(*client), 3);
  EXPECT_EQ(items_ahead_of_a_stalled_handler(*client), 2);
}

// The windows stay at stream_window when max_stream_window says so.
TEST(streams, max_stream_window_at_the_window_keeps_it_fixed) {
  auto cfg = stream_server::config();
  cfg.max_stream_window = cfg.stream_window;
  stream_server srv(transport::tcp, cfg);
  corvid::client_config ccfg;
  ccfg.max_stream_window = ccfg.stream_window;
  auto client = srv.connect(ccfg);
  EXPECT_EQ(items_ahead_of_a_stalled_reader(*client), 2);
  EXPECT_EQ(items_ahead_of_a_stalled_handler(*client), 1);
}

// A stream opened while its client is at max_pending_calls (when_busy = wait) waits in its
// co_await until the request has room, then works: what the caller sends next (here an end
// with no items) follows the request, and so does the larger window granted with it.
TEST(streams, a_stream_opened_at_the_clients_call_cap_waits_for_room_then_works) {
  stream_server srv;
  corvid::client_config ccfg;
  ccfg.max_pending_calls = 1;
  ccfg.stream_window = 4u << 20;
  auto client = srv.connect(ccfg);
  // Cancels the stream that holds the client's only slot once another call waits for it.
  auto free_the_slot_soon = [&client](auto& holder) {
    return std::thread([&holder, &client, waited = client->stats().calls_waited] {
      EXPECT_TRUE(corvid::test::eventually([&] { return client->stats().calls_waited > waited; },
                                           corvid::test::patience(10s)));
      holder.cancel();
    });
  };
  {
    auto holder = corvid::test::opened(client->stream<endless>(16u));
    std::thread t = free_the_slot_soon(holder);
    auto r =
        corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::size_t, corvid::rpc_error>> {
          auto up = co_await client->open_stream_with<upload>(
              {.timeout = corvid::test::patience(5s), .attachment = {}});
          if (!up) co_return corvid::unexpected(up.error());
          co_return co_await up->finish();  // an upload of nothing: its end must reach the server
        }());
    t.join();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(*r, 0u);
  }
  {
    auto holder = corvid::test::opened(client->open_stream<lazy_upload>(1000u));
    std::thread t = free_the_slot_soon(holder);
    const int start = probe().yielded;
    auto s = corvid::test::opened(client->stream<endless>(64u << 10));  // waits for the slot
    t.join();
    EXPECT_TRUE(yielded_within(start, 64))
        << "the 4 MiB window was not granted to a stream that waited for room";
    give_a_producer_time_to_overrun();
    EXPECT_LE(probe().yielded - start, 64 + 2);
    s.cancel();
  }
}

TEST(streams, a_slow_handler_suspends_the_writer_and_bounds_server_memory) {
  stream_server srv;
  auto client = srv.connect();
  srv.server().reset_memory_peak();
  auto run = [&]() -> corvid::task<corvid::expected<std::size_t, corvid::rpc_error>> {
    auto up = co_await client->open_stream<lazy_upload>(300u);
    if (!up) co_return corvid::unexpected(up.error());
    const std::string chunk(64 << 10, 'w');
    for (int i = 0; i < 100; ++i) {  // 6.4 MB against a 256 KiB window
      if (auto e = co_await up->write(chunk)) co_return corvid::unexpected(e);
    }
    co_return co_await up->finish();
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto r = corvid::sync_wait(run());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 100u * (64u << 10));
  // The handler reads nothing for 300 ms, and the window holds far less than 6.4 MB.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms) << "the writer did not wait";
  // At most a window and one item held for the stream (plus read buffers and replies).
  EXPECT_LT(srv.server().memory().peak, 2u << 20);
  // Every item's charge was given back as the handler took it.
  auto in_flight = [&] {
    return srv.server().memory().find("in_flight")->current;
  };
  EXPECT_TRUE(corvid::test::eventually([&] { return in_flight() == 0; }, 1s))
      << srv.server().memory().to_string();
}

TEST(streams, a_deadline_covers_the_whole_stream_on_both_sides) {
  stream_server srv;
  auto client = srv.connect();
  const int destroyed = probe().destroyed;
  auto run = [&]() -> corvid::task<corvid::rpc_error> {
    auto s = co_await client->stream_with<endless>({.timeout = 100ms, .attachment = {}}, 10u);
    while (co_await s->next()) co_await corvid::sleep_for(1ms);
    co_return s->error();
  };
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(corvid::sync_wait(run()).code(), corvid::rpc_errc::timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, corvid::test::patience(2s));
  EXPECT_TRUE(destroyed_within(destroyed + 1, corvid::test::patience(2s)));
}

TEST(streams, a_closed_client_connection_ends_the_servers_producer) {
  stream_server srv;
  const int destroyed = probe().destroyed;
  {
    auto client = srv.connect();
    auto s = corvid::sync_wait([&]() -> corvid::task<corvid::stream_reader<std::string>> {
      auto r = co_await client->stream<endless>(100u);
      co_await r->next();
      co_return std::move(*r);
    }());
    client->close();
    auto [v, err] = corvid::sync_wait([&]() -> corvid::task<std::pair<bool, corvid::rpc_error>> {
      while (co_await s.next()) {
      }
      co_return std::pair{false, s.error()};
    }());
    EXPECT_EQ(err.code(), corvid::rpc_errc::connection_closed) << err.message();
  }
  EXPECT_TRUE(destroyed_within(destroyed + 1, corvid::test::patience(2s)));
  EXPECT_TRUE(corvid::test::eventually([&] { return srv.server().connection_count() == 0; },
                                       corvid::test::patience(2s)));
}

// close() from another thread while the server's items keep arriving: a read that completed
// just before the close must not be processed after it (the close resets the read buffer).
// ASan, and the read buffer's assertion in debug builds, catch it within a few rounds.
TEST(streams, closing_a_client_while_items_pour_in_ends_the_stream_cleanly) {
  stream_server srv;
  for (int round = 0; round < 30; ++round) {
    auto client = srv.connect();
    auto s = corvid::sync_wait([&]() -> corvid::task<corvid::stream_reader<std::string>> {
      auto r = co_await client->stream<endless>(4096u);
      for (int i = 0; i < 20; ++i) co_await r->next();  // credit flows back: items keep coming
      co_return std::move(*r);
    }());
    client->close();
    const auto err = corvid::sync_wait([&]() -> corvid::task<corvid::rpc_error> {
      while (co_await s.next()) {
      }
      co_return s.error();
    }());
    // Not a clean end: a consumer woken to an empty inbox read as the end (fixed in push()).
    ASSERT_EQ(err.code(), corvid::rpc_errc::connection_closed) << err.message();
  }
}

// Cancelled, or its client closed, while a lent item is being written: the producer (whose
// frame holds the item's bytes) is destroyed only once the write no longer reads them
// (ASan sees any read of the freed buffer), and the connection goes on.
TEST(streams, ending_a_stream_while_its_lent_item_is_written_waits_for_the_write) {
  stream_server srv;
  for (int round = 0; round < 10; ++round) {
    auto client = srv.connect();
    auto err = corvid::sync_wait([&]() -> corvid::task<corvid::rpc_error> {
      auto s = co_await client->stream<lent_blobs>(1u << 20, 1000u);
      for (int i = 0; i < 3; ++i) co_await s->next();
      if (round % 2 == 0) {
        s->cancel();
        auto r = co_await client->call<twice>(21);
        if (!r) co_return r.error();
      }
      co_return corvid::rpc_error{};
    }());
    EXPECT_FALSE(err) << err.message();
    client->close();  // odd rounds: the client goes with the stream open
  }
  EXPECT_TRUE(corvid::test::eventually([&] { return srv.server().connection_count() == 0; },
                                       corvid::test::patience(5s)));
}

TEST(streams, server_stop_ends_open_streams_on_both_sides) {
  auto cfg = stream_server::config();
  cfg.stop_timeout = 200ms;
  auto srv = std::make_unique<stream_server>(transport::tcp, cfg);
  auto client = srv->connect();
  const int destroyed = probe().destroyed;
  auto s = corvid::sync_wait([&]() -> corvid::task<corvid::stream_reader<std::string>> {
    auto r = co_await client->stream<endless>(100u);
    co_await r->next();
    co_return std::move(*r);
  }());
  const auto t0 = std::chrono::steady_clock::now();
  srv->server().stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, corvid::test::patience(2s));
  EXPECT_TRUE(destroyed_within(destroyed + 1, corvid::test::patience(2s)));
  auto err = corvid::sync_wait([&]() -> corvid::task<corvid::rpc_error> {
    while (co_await s.next()) {
    }
    co_return s.error();
  }());
  EXPECT_TRUE(err) << "a stream cut by stop() must not look like a clean end";
}

// stop() drains: an open stream keeps moving until it ends (within stop_timeout), while its
// connection refuses new calls.
TEST(streams, stop_lets_an_open_upload_finish_and_refuses_new_calls_meanwhile) {
  auto cfg = stream_server::config();
  cfg.stop_timeout = corvid::test::patience(5s);
  stream_server srv(transport::tcp, cfg);
  auto client = srv.connect();
  std::thread stopper;
  std::chrono::steady_clock::time_point stop_began, stop_done;
  auto r =
      corvid::sync_wait([&]() -> corvid::task<corvid::expected<std::size_t, corvid::rpc_error>> {
        auto up = co_await client->open_stream<upload>();
        if (!up) co_return corvid::unexpected(up.error());
        if (auto e = co_await up->write("abc")) co_return corvid::unexpected(e);
        stopper = std::thread([&] {
          stop_began = std::chrono::steady_clock::now();
          srv.server().stop();
          stop_done = std::chrono::steady_clock::now();
        });
        // Once the drain has begun, a new call on the draining connection is refused with a
        // clear error (one made before that is still served).
        const auto give_up = std::chrono::steady_clock::now() + corvid::test::patience(5s);
        auto refused = co_await client->call<twice>(2);
        while (refused && std::chrono::steady_clock::now() < give_up) {
          co_await corvid::sleep_for(5ms);
          refused = co_await client->call<twice>(2);
        }
        EXPECT_EQ(refused ? corvid::rpc_errc::ok : refused.error().code(),
                  corvid::rpc_errc::server_busy)
            << (refused ? std::string("never refused") : refused.error().message());
        for (int i = 0; i < 3; ++i) {
          if (auto e = co_await up->write("abc")) co_return corvid::unexpected(e);
        }
        co_return co_await up->finish();
      }());
  stopper.join();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, 12u);
  EXPECT_LT(stop_done - stop_began, corvid::test::patience(3s))
      << "stop() waited for its timeout instead of for the stream";
}

TEST(streams, a_stream_past_max_streams_per_connection_is_refused_with_a_clear_error) {
  auto cfg = stream_server::config();
  cfg.max_streams_per_connection = 3;
  stream_server srv(transport::tcp, cfg);
  auto client = srv.connect();
  auto run = [&]() -> corvid::task<std::string> {
    std::vector<corvid::stream_reader<std::string>> open;
    for (int i = 0; i < 3; ++i) {
      auto s = co_await client->stream<endless>(10u);
      if (!s || !co_await s->next()) co_return "stream " + std::to_string(i) + " did not run";
      open.push_back(std::move(*s));
    }
    auto [got, err] = co_await read_count(*client, 2);
    if (err.code() != corvid::rpc_errc::server_busy ||
        err.message().find("max_streams_per_connection = 3") == std::string::npos) {
      co_return "fourth stream: " + err.message();
    }
    // A plain call still goes through; and a slot frees when a stream ends.
    auto r = co_await client->call<twice>(21);
    if (!r || *r != 42) co_return "plain call failed";
    open.front().cancel();
    for (int i = 0; i < 1000; ++i) {  // polls for up to 5 s: the cancel reaches the server
      co_await corvid::sleep_for(std::chrono::milliseconds(5));
      auto [again, again_err] = co_await read_count(*client, 2);
      if (!again_err) co_return "";
    }
    co_return "no slot after a stream ended";
  };
  EXPECT_EQ(corvid::sync_wait(run()), "");
}

TEST(streams, a_thousand_streams_interleave_with_unary_calls_on_one_connection) {
  auto cfg = stream_server::config();
  cfg.max_streams_per_connection = 1000;
  cfg.max_calls_per_connection = 2048;
  stream_server srv(transport::tcp, cfg);
  auto client = srv.connect();
  constexpr int streams = 1000;
  auto run = [&]() -> corvid::task<int> {
    // All open at once, a plain call queued after each.
    std::vector<corvid::stream_reader<int>> readers;
    std::vector<corvid::async_reply_t<twice>> calls;
    for (int i = 0; i < streams; ++i) {
      auto s = co_await client->stream<count_to>(20 + i % 7);
      if (!s) co_return -1;
      readers.push_back(std::move(*s));
      calls.push_back(co_await client->send_request<twice>(i));
    }
    int ok = 0;
    for (int i = 0; i < streams; ++i) {
      int n = 0;
      while (auto v = co_await readers[i].next()) {
        if (*v != ++n) co_return -2;
      }
      auto r = co_await std::move(calls[i]);
      if (n == 20 + i % 7 && !readers[i].error() && r && *r == 2 * i) ++ok;
    }
    co_return ok;
  };
  EXPECT_EQ(corvid::sync_wait(run()), streams);
}

TEST(streams, through_a_client_pool_and_a_load_balancer) {
  stream_server a, b;
  auto pool = corvid::client_pool::create(a.endpoint(), {});
  auto lb = corvid::load_balancer::create({{a.endpoint()}, {b.endpoint()}});
  auto run = [&]() -> corvid::task<std::string> {
    auto s = co_await pool->stream<count_to>(4);
    if (!s) co_return "pool stream: " + s.error().message();
    int n = 0;
    while (auto v = co_await s->next()) n += *v;
    if (n != 10 || s->error()) co_return "pool stream: wrong items";
    auto up = co_await pool->open_stream<upload>();
    if (!up) co_return "pool upload: " + up.error().message();
    co_await up->write("12345");
    auto total = co_await up->finish();
    if (!total || *total != 5) co_return "pool upload: wrong result";
    for (int i = 0; i < 4; ++i) {  // both endpoints take streams
      auto c = co_await lb->open_stream<chat>();
      if (!c) co_return "balancer chat: " + c.error().message();
      co_await c->write("hi");
      auto r = co_await c->next();
      if (!r || *r != "re: hi") co_return "balancer chat: wrong answer";
      c->close_writes();
      if (co_await c->next() || c->error()) co_return "balancer chat: no clean end";
      auto ls = co_await lb->stream<count_to>(2);
      if (!ls) co_return "balancer stream: " + ls.error().message();
      while (co_await ls->next()) {
      }
      if (ls->error()) co_return "balancer stream: " + ls->error().message();
    }
    co_return "";
  };
  EXPECT_EQ(corvid::sync_wait(run()), "");
}

}  // namespace
