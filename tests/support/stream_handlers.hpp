#pragma once
// The streaming handlers and client routines the stream tests share across transports
// (tests/stream/ over TCP, Unix sockets and TLS; tests/rdma/ over RDMA).
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <corvid/corvid.hpp>

#include "role_api.hpp"

namespace corvid_test::streams {

// Counting to n and summing an upload's bytes: the handlers the role-header tests use too.
using role_api::count_to;
using role_api::upload;
inline corvid::stream<std::string> chat(corvid::stream_reader<std::string> in) {
  while (auto m = co_await in.next()) co_yield "re: " + *m;
}
inline corvid::stream<int> fails_after(int n) {
  for (int i = 0; i < n; ++i) co_yield i;
  throw std::runtime_error("producer broke");
}
// Items of `size` bytes, `count` of them.
inline corvid::stream<std::string> blobs(std::uint32_t size, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i)
    co_yield std::string(size, static_cast<char>('a' + i % 26));
}

// What the endless producer did, for the tests that stop it.
struct endless_probe {
  std::atomic<int> yielded{0};
  std::atomic<int> destroyed{0};
};
inline endless_probe& probe() {
  static endless_probe p;
  return p;
}
// Never ends by itself: only a cancellation (or the connection's end) stops it.
inline corvid::stream<std::string> endless(std::uint32_t size) {
  struct on_destroy {
    ~on_destroy() { ++probe().destroyed; }
  } guard;
  for (;;) {
    ++probe().yielded;
    co_yield std::string(size, 'x');
  }
}

// Reads nothing for `ms`, then everything: a slow consumer of a client stream.
inline corvid::task<std::size_t> lazy_upload(std::uint32_t ms,
                                             corvid::stream_reader<std::string> in) {
  co_await corvid::sleep_for(std::chrono::milliseconds(ms));
  std::size_t total = 0;
  while (auto chunk = co_await in.next()) total += chunk->size();
  co_return total;
}

// Reads `n` items, then nothing for `ms` (or until cancelled), then the rest: a consumer
// that kept up, then stalls.
inline corvid::task<std::size_t> upload_then_stall(corvid::request_context& ctx, std::uint32_t n,
                                                   std::uint32_t ms,
                                                   corvid::stream_reader<std::string> in) {
  std::size_t total = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    auto chunk = co_await in.next();
    if (!chunk) co_return total;
    total += chunk->size();
  }
  co_await ctx.sleep_for(std::chrono::milliseconds(ms));
  while (auto chunk = co_await in.next()) total += chunk->size();
  co_return total;
}

// Yields an item of `big` bytes; if that throws (over max_frame_size), one small item instead.
inline corvid::stream<std::string> oversize_then_small(std::uint32_t big) {
  bool refused = false;
  try {
    co_yield std::string(big, 'b');
  } catch (const std::length_error&) {
    refused = true;
  }
  if (refused) co_yield std::string("small");
}

// What watched_upload saw, for the tests that kill its client.
struct upload_probe {
  std::atomic<int> started{0};
  std::atomic<int> items{0};
  std::atomic<int> ended{0};
  std::atomic<int> end_code{-1};  // the reader's error() at its end (0: a clean end)
};
inline upload_probe& uploads() {
  static upload_probe p;
  return p;
}
// Reads to the end like upload, telling uploads() how far it got and how it ended.
inline corvid::task<std::size_t> watched_upload(corvid::stream_reader<std::string> in) {
  ++uploads().started;
  std::size_t total = 0;
  while (auto chunk = co_await in.next()) {
    total += chunk->size();
    ++uploads().items;
  }
  uploads().end_code = static_cast<int>(in.error().code());
  ++uploads().ended;
  co_return total;
}

// Like blobs, but each item is a view of the producer's own buffer, refilled for the next
// item: an item written after the producer resumed would arrive with the next one's bytes.
inline corvid::stream<std::string_view> lent_blobs(std::uint32_t size, std::uint32_t count) {
  std::string buf(size, ' ');
  for (std::uint32_t i = 0; i < count; ++i) {
    std::fill(buf.begin(), buf.end(), static_cast<char>('a' + i % 26));
    co_yield std::string_view(buf);
  }
}

// A plain call, for interleaving with streams.
inline int twice(int x) { return 2 * x; }

inline void register_all(corvid::rpc_server& server) {
  server.register_handler<count_to, upload, chat, fails_after, blobs, endless, twice, lazy_upload,
                          oversize_then_small, watched_upload, lent_blobs, upload_then_stall>();
}

// Reads count_to(n) to its end.
inline corvid::task<std::pair<std::vector<int>, corvid::rpc_error>> read_count(
    corvid::rpc_client& client, int n) {
  std::vector<int> got;
  auto s = co_await client.stream<count_to>(n);
  if (!s) co_return std::pair{got, s.error()};
  while (auto v = co_await s->next()) got.push_back(*v);
  co_return std::pair{got, s->error()};
}

// Writes `chunks` chunks of `size` bytes to upload, then its result.
inline corvid::task<corvid::expected<std::size_t, corvid::rpc_error>> write_upload(
    corvid::rpc_client& client, int chunks, std::size_t size) {
  auto up = co_await client.open_stream<upload>();
  if (!up) co_return corvid::unexpected(up.error());
  const std::string chunk(size, 'a');
  for (int i = 0; i < chunks; ++i) {
    if (auto e = co_await up->write(chunk)) co_return corvid::unexpected(e);
  }
  co_return co_await up->finish();
}

// Sends each message to chat and reads its answer in turn, then closes and reads the end.
inline corvid::task<std::pair<std::vector<std::string>, corvid::rpc_error>> talk(
    corvid::rpc_client& client, std::vector<std::string> messages) {
  std::vector<std::string> got;
  auto c = co_await client.open_stream<chat>();
  if (!c) co_return std::pair{got, c.error()};
  for (const auto& m : messages) {
    if (auto e = co_await c->write(m)) co_return std::pair{got, e};
    if (auto r = co_await c->next()) got.push_back(*r);
  }
  c->close_writes();
  while (auto r = co_await c->next()) got.push_back(*r);
  co_return std::pair{got, c->error()};
}

}  // namespace corvid_test::streams
