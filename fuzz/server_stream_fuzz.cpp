// Fuzzes a live corvid::rpc_server with arbitrary client byte streams over loopback: the
// server's framing (partial headers, partial bodies, pipelined frames, lengths at and over the
// limit), dispatch, argument decoding, coroutine handlers that outlive the read buffer, handler
// exceptions, half-close handling, and peers that vanish while calls are in flight. Issue 11's
// states too: arguments whose decoded size is far above their encoded size (vector<optional<
// array>>, vector<string>, a map of vectors, vector<variant>), a decode that throws (a set key
// whose comparison throws; sync and coroutine handler), replies far bigger than their requests for
// a peer that reads late, cancels for calls still running, request id 0 and duplicate ids. One
// server runs for the whole session (started in LLVMFuzzerInitialize, 1 reactor thread, an 8 KiB
// frame limit so inputs reach it with request headers and with replies, a 1 s idle timeout so every
// connection arms and cancels its idle timer, a 4 MiB memory limit and a 32 KiB queued-reply
// cap so a few inputs' bytes reach both).
//
// Per input: connect, write the stream (split in two writes at a fuzzer-chosen point, maybe
// with a pause between, so the server sees the bytes in different read batches), read the
// replies owed, shut down the write side (the server cancels what still runs), and read until
// EOF. Or, when the input says so, close without reading, either
// orderly or with a reset, after a pause of 0-3 ms: the server then meets a dead socket while
// coroutine handlers are still running (only the health check below applies then). Checked:
//   * the server closes the connection within 2 s of our EOF (a hang there is a bug: abort);
//   * what it sent is a sequence of complete, valid response frames (a v1 header, type 2,
//     function id 0, timeout 0, a status the server sends, and for an error a body that is
//     exactly one string), and empty pongs (type 5);
//   * it answers exactly the requests a v1 receiver must answer (docs/protocol.md): every
//     complete request frame before the first bad header, by request id (a cancel frame for
//     that id excuses one reply: a coroutine call it reaches sends none), one pong per ping,
//     and then one error frame for that header (its id for too_large, 0 otherwise); nothing
//     for a partial frame. A request with id 0 ("Clients must never send id 0"; a reply with
//     id 0 means the server is closing) ends the stream like a bad header: one error frame
//     with id 0 (any failure status), nothing after it;
//   * every 64 inputs, a fresh rpc_client's call still succeeds and the server has no
//     connection left but that client's (abort otherwise).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <variant>
#include <vector>

#include "corvid/client/rpc_client.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/runtime/sleep.hpp"
#include "corvid/server/request_context.hpp"
#include "corvid/server/rpc_server.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"
#include "fuzz_socket.hpp"
#include "protocol/compression.hpp"

#include <sys/socket.h>

// The handlers. Global and in `ns`, like docs/protocol.md's examples, so the doc's request
// vectors (echo, store, ns::calc::add / div) are valid seeds with the same function ids.
std::string_view echo(std::string_view s) { return s; }
void store(corvid::request_context& ctx, std::string key) {
  // Echo the attachment back (owned or viewed, by key length) to reach both reply paths.
  if (key.size() % 2 == 0) {
    ctx.set_response_attachment(std::string(ctx.request_attachment()));
  } else {
    ctx.set_response_attachment(ctx.request_attachment());
  }
}
// A coroutine handler: its request bytes must outlive the read buffer across the sleep.
corvid::task<std::vector<std::string>> split(std::string_view s, std::uint8_t delay_ms) {
  co_await corvid::sleep_for(std::chrono::milliseconds(delay_ms % 4));
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == ',') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  co_return parts;
}
// A reply that can outgrow the frame limit: the server must fail this call alone.
std::string repeat(std::string_view s, std::uint8_t times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += s;
  return out;
}
corvid::task<void> throws_later(std::uint8_t delay_ms) {
  co_await corvid::sleep_for(std::chrono::milliseconds(delay_ms % 4));
  throw std::runtime_error("coroutine handler failed");
}
// Claimed counts: one byte per element on the wire, 4097 / 32 / ~100 / 4098 bytes decoded.
std::uint64_t count_pages(std::vector<std::optional<std::array<std::uint8_t, 4096>>> v) {
  return v.size();
}
std::uint64_t count_strings(std::vector<std::string> v) { return v.size(); }
std::uint64_t count_map(std::map<std::uint32_t, std::vector<std::string>> m) { return m.size(); }
std::uint64_t count_variants(
    std::vector<std::variant<std::monostate, std::array<std::uint8_t, 4096>>> v) {
  return v.size();
}
// A set key whose comparison throws for 666: decoding such a set throws out of the codec.
struct touchy_key {
  std::int32_t v;
  bool operator<(const touchy_key& o) const {
    if (v == 666 || o.v == 666) throw std::runtime_error("touchy_key: poisoned compare");
    return v < o.v;
  }
};
std::uint64_t touchy(std::set<touchy_key> s) { return s.size(); }
corvid::task<std::uint64_t> touchy_co(std::set<touchy_key> s) { co_return s.size(); }
// A reply far bigger than its 4-byte request (at most 8000 bytes: within the frame limit).
std::string big(std::uint32_t n) { return std::string(std::min<std::uint32_t>(n, 8000), 'b'); }
// A coroutine call that runs long enough (up to 63 ms) for cancels and duplicates to find it.
corvid::task<std::uint16_t> nap(corvid::request_context& ctx, std::uint16_t ms) {
  co_await ctx.sleep_for(std::chrono::milliseconds(ms % 64));
  co_return ms;
}
// Streams: a few items then the end; and an echo of the client's items, which ends only
// when the client closes its writes (or the connection, cancelling it).
corvid::stream<std::uint8_t> ticks(std::uint8_t n) {
  for (std::uint8_t i = 0; i < n % 8; ++i) co_yield i;
}
corvid::stream<std::string> relay(corvid::stream_reader<std::string> in) {
  while (auto item = co_await in.next()) co_yield std::move(*item);
}
namespace ns {
struct calc {
  // Wrapping arithmetic: the inputs are the fuzzer's, and signed overflow would be our UB.
  int add(int a, int b) const {
    return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b));
  }
  int div(int a, int b) const {
    if (b == 0) throw std::domain_error("division by zero");
    if (b == -1) return static_cast<int>(0u - static_cast<unsigned>(a));
    return a / b;
  }
};
}  // namespace ns

namespace {

namespace protocol = corvid::protocol;
using corvid::rpc_errc;

// The server's limit (body + attachment): small, so inputs reach it both with request
// headers and with replies (`repeat`).
constexpr std::uint32_t max_frame = 8192;
constexpr int io_timeout_s = 2;
constexpr unsigned health_every = 64;

ns::calc calculator;
corvid::rpc_server* server = nullptr;

void die(const char* what) {
  std::fprintf(stderr, "server_stream_fuzz: %s\n", what);
  std::abort();  // libFuzzer records the input and the stack
}
void check(bool ok, const char* what) {
  if (!ok) die(what);
}

corvid::task<corvid::rpc_error> connect_client(corvid::rpc_client& c, std::string ep) {
  co_return co_await c.connect(ep);
}
corvid::task<bool> echo_ok(corvid::rpc_client& c) {
  auto r = co_await c.call_for<echo>(std::chrono::seconds(5), std::string_view("ping"));
  co_return r.has_value() && *r == "ping";
}

// A fresh client each time (the server's idle timeout may have closed an older one).
void health_check() {
  corvid::rpc_client client;
  if (auto ec = corvid::sync_wait(
          connect_client(client, "127.0.0.1:" + std::to_string(server->port())))) {
    die(("health check: connect failed: " + ec.message()).c_str());
  }
  check(corvid::sync_wait(echo_ok(client)), "health check: echo call failed");
  // Every fuzz connection must have been closed (and forgotten) by now: only ours is left.
  for (int i = 0; server->connection_count() != 1; ++i) {
    check(i < 200, "health check: the server still holds fuzz connections");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// `small_window`: a 4 KiB receive buffer, so a reader that starts late leaves the server
// with its replies queued (the kernel holds little of them).
int connect_raw(bool small_window) {
  const int fd = corvid_fuzz::connect_loopback(server->port(), io_timeout_s, small_window ? 4096 : 0);
  check(fd >= 0, "connect() failed");
  return fd;
}

// False if the server closed its side early (it may, after a framing error).
bool send_all(int fd, std::string_view bytes) {
  const auto r = corvid_fuzz::send_all(fd, bytes);
  if (r == corvid_fuzz::send_result::blocked) die("send blocked for 2 s");
  return r == corvid_fuzz::send_result::sent;
}

// Complete frames at the front of `got`.
// Complete frames at the front of `got` that answer something (a stream's items and credit
// grants come in any number besides).
int complete_frames(std::string_view got) {
  int n = 0;
  protocol::frame_header h;
  while (got.size() >= protocol::header_size &&
         protocol::decode_header(got.data(), h, UINT32_MAX) == protocol::header_errc::ok &&
         got.size() >= h.frame_size()) {
    got.remove_prefix(h.frame_size());
    if (h.type != protocol::msg_type::stream_item && h.type != protocol::msg_type::stream_credit)
      ++n;
  }
  return n;
}

// Reads into `got` until `arrived(got)`, or the server closes (then `closed`, and `reset` if
// it was a reset), or 2 s pass (the harness then half-closes and the checks tell what is
// missing).
template <class Arrived>
void read_frames(int fd, Arrived arrived, std::string& got, bool& closed, bool& reset) {
  char buf[16384];
  closed = reset = false;
  while (!arrived(std::string_view(got))) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    reset = n < 0 && errno != EAGAIN && errno != EWOULDBLOCK;
    closed = n == 0 || reset;
    return;
  }
}

// Everything the server sends until it closes. `reset` is set when the close was a reset:
// a server that closes with our bytes still unread in its socket (after a framing error) makes
// the kernel send RST, which may discard replies not yet read here.
void read_to_eof(int fd, std::string& got, bool& reset) {
  char buf[16384];
  reset = false;
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      got.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) die("no EOF from the server within 2 s");
    reset = true;
    return;
  }
}

// The replies a v1 server owes for `stream`: request id -> count, in the model of
// docs/protocol.md ("A receiver validates the header in wire order ...").
struct expectation {
  std::map<std::uint64_t, int> ids;
  // Cancel frames naming a request: a coroutine call still running then sends no reply, so
  // each may remove one reply of that id (sync handlers have answered already).
  std::map<std::uint64_t, int> cancels;
  std::map<std::uint64_t, int> pings;  // each answered by one pong with the same id
  bool error_frame = false;  // one framing error at the end, with `error_id` and `error_status`
  std::uint64_t error_id = 0;
  rpc_errc error_status = rpc_errc::ok;
  bool any_error_status = false;  // the error frame may have any failure status (request id 0)
  // Two requests with one id: if the first is a coroutine call still running when the second
  // arrives, the server answers protocol_error with id 0 and closes ("Ids must be unique among
  // the client's calls in flight"); whether it still runs is timing, so such a stream may end
  // there, and only the replies' validity is checked.
  bool duplicate_ids = false;
  // Replies (and pongs, and the error frame) that must arrive before the stream is complete:
  // the harness reads this many frames before it half-closes, since the server cancels
  // coroutine calls still running when it reads our FIN.
  int frames_owed() const {
    int n = error_frame ? 1 : 0;
    for (const auto& [id, k] : ids) {
      const auto c = cancels.find(id);
      n += k - (c == cancels.end() ? 0 : c->second);
    }
    for (const auto& [id, k] : pings) n += k;
    return duplicate_ids ? 0 : n;
  }
};
// Whether `got` holds every frame `want` owes: frames_owed() of them, and among them each
// reply of a request no cancel names. (A cancel only may excuse a reply: one that could not
// reach its call, as for a sync handler, leaves the reply coming, so the count alone would
// let the harness half-close before a reply it owes.)
bool owed_arrived(std::string_view got, const expectation& want) {
  if (complete_frames(got) < want.frames_owed()) return false;
  if (want.duplicate_ids) return true;
  std::map<std::uint64_t, int> replies;
  protocol::frame_header h;
  while (got.size() >= protocol::header_size &&
         protocol::decode_header(got.data(), h, UINT32_MAX) == protocol::header_errc::ok &&
         got.size() >= h.frame_size()) {
    if (h.type == protocol::msg_type::response) ++replies[h.request_id];
    got.remove_prefix(h.frame_size());
  }
  for (const auto& [id, n] : want.ids) {
    if (want.cancels.count(id) == 0 && replies[id] < n) return false;
  }
  return true;
}

expectation expected_replies(std::string_view stream) {
  expectation e;
  while (stream.size() >= protocol::header_size) {
    protocol::frame_header h;
    const auto err = protocol::decode_header(stream.data(), h, max_frame);
    if (err == protocol::header_errc::too_large) {
      e.error_frame = true;
      e.error_id = h.request_id;
      e.error_status = rpc_errc::message_too_large;
      return e;
    }
    if (err != protocol::header_errc::ok || h.type == protocol::msg_type::response) {
      e.error_frame = true;
      e.error_status = rpc_errc::protocol_error;
      return e;
    }
    if (stream.size() < h.frame_size()) return e;
    if (h.type == protocol::msg_type::rdma_setup) {  // this server has no init_ibv()
      e.error_frame = true;
      e.error_status = rpc_errc::protocol_error;
      return e;
    }
    if (h.type == protocol::msg_type::request && h.request_id == 0) {
      // Rejected, and the connection closed: id 0 is the connection's, not a call's.
      e.error_frame = true;
      e.any_error_status = true;
      return e;
    }
    if (h.type == protocol::msg_type::request && ++e.ids[h.request_id] > 1) e.duplicate_ids = true;
    // relay ends only at the client's stream_end: without one in the stream, it is still
    // running at our FIN, which cancels it (no reply). Either way one reply may be missing.
    if (h.type == protocol::msg_type::request && h.function_id == protocol::function_id<relay>())
      ++e.cancels[h.request_id];
    if (h.type == protocol::msg_type::cancel && e.ids.count(h.request_id))
      ++e.cancels[h.request_id];
    // A ping with a must-understand flag bit (none is known for pings) is not answered.
    if (h.type == protocol::msg_type::ping && protocol::unknown_must_understand(h) == 0)
      ++e.pings[h.request_id];
    stream.remove_prefix(h.frame_size());
  }
  return e;
}

// `complete`: the connection ended with a FIN, so every reply must be there. After a reset
// only a prefix may have arrived (possibly cut inside a frame), and only that prefix is checked.
void check_replies(std::string_view got, const expectation& want, bool complete) {
  std::map<std::uint64_t, int> ids;
  std::map<std::uint64_t, int> pongs;
  bool saw_error_frame = false;
  bool saw_duplicate_error = false;
  while (!got.empty()) {
    if (!complete && got.size() < protocol::header_size) break;
    check(got.size() >= protocol::header_size, "reply stream ends inside a header");
    protocol::frame_header h;
    check(protocol::decode_header(got.data(), h, UINT32_MAX) == protocol::header_errc::ok,
          "reply header does not decode");
    if (h.type == protocol::msg_type::pong) {
      // It states the server's reactor count (io_threads = 1 here).
      check(h.reactors == 1 && h.function_id == 0 && h.flags == 0 && h.timeout_ms == 0 && h.payload_size() == 0 &&
                h.status == rpc_errc::ok,
            "pong with fields set");
      ++pongs[h.request_id];
      got.remove_prefix(h.frame_size());
      continue;
    }
    if (h.type == protocol::msg_type::stream_item || h.type == protocol::msg_type::stream_credit) {
      // A stream's item or a grant: for a request sent, before its response, fields clear.
      check(want.ids.contains(h.request_id), "stream frame for a request never sent");
      check(h.function_id == 0 && (h.flags & ~protocol::flag_compressed) == 0 &&
                h.status == rpc_errc::ok && h.attachment_length == 0,
            "stream frame with fields set");
      check(h.type == protocol::msg_type::stream_item ? h.payload_size() <= max_frame
                                                      : h.payload_size() == 0,
            "stream frame of a bad size");
      if (!complete && got.size() < h.frame_size()) break;
      check(got.size() >= h.frame_size(), "reply stream ends inside a frame");
      got.remove_prefix(h.frame_size());
      continue;
    }
    check(h.type == protocol::msg_type::response, "reply is neither a response nor a pong");
    // A request that said it accepts compression (flag_accepts_compressed) makes the server
    // say so on its replies, and compress the big ones.
    check(h.function_id == 0 && h.timeout_ms == 0 &&
              (h.flags & ~(protocol::flag_accepts_compressed | protocol::flag_compressed)) == 0,
          "response function id / flags / timeout not 0");
    check(h.payload_size() <= max_frame, "reply over the server's own limit");
    if (!complete && got.size() < h.frame_size()) break;
    check(got.size() >= h.frame_size(), "reply stream ends inside a frame");
    const std::string_view body = got.substr(protocol::header_size, h.body_length);
    if ((h.flags & protocol::flag_compressed) != 0) {
      check(h.status == rpc_errc::ok && h.attachment_length == 0,
            "a compressed reply that is an error or has an attachment");
      std::string inflated;
      check(protocol::inflate(body, inflated).empty() && inflated.size() <= max_frame,
            "a compressed reply that does not inflate within the limit");
    }
    const auto s = h.status;
    check(s == rpc_errc::ok || s == rpc_errc::timeout || s == rpc_errc::function_not_found ||
              s == rpc_errc::bad_request || s == rpc_errc::server_busy ||
              s == rpc_errc::message_too_large || s == rpc_errc::handler_error ||
              s == rpc_errc::protocol_error || s == rpc_errc::signature_mismatch ||
              s == rpc_errc::resource_exhausted,  // a metadata block over the server's limits
          "reply status the server never sends");
    if (s != rpc_errc::ok) {
      std::string message;
      check(corvid::codec::decode(body, message) == corvid::codec::decode_errc::ok,
            "error reply body is not one string");
      check(h.attachment_length == 0, "error reply with an attachment");
    }
    // The framing error's frame: protocol_error only ever comes from framing (handlers cannot
    // produce it); coroutine handlers' replies may still follow it.
    // With a reused id in the stream, a protocol_error with id 0 may be the server ending
    // the connection there, before any framing error later in the stream: both look alike,
    // and either ends the replies owed.
    if (want.duplicate_ids && h.request_id == 0 && s == rpc_errc::protocol_error) {
      saw_duplicate_error = true;
    } else if (want.error_frame && !saw_error_frame && h.request_id == want.error_id &&
               (want.any_error_status ? s != rpc_errc::ok : s == want.error_status)) {
      saw_error_frame = true;
    } else {
      check(s != rpc_errc::protocol_error, "protocol_error reply without a framing error");
      ++ids[h.request_id];
    }
    got.remove_prefix(h.frame_size());
  }
  for (const auto& [id, n] : ids) {
    const auto it = want.ids.find(id);
    check(it != want.ids.end() && n <= it->second, "a reply to a request never sent");
  }
  for (const auto& [id, n] : pongs) {
    const auto it = want.pings.find(id);
    check(it != want.pings.end() && n <= it->second, "a pong for a ping never sent");
  }
  // With a reused id the harness half-closes at once (frames_owed() is 0: whether the first
  // call still runs is timing), and the server cancels the calls still running when it reads
  // the FIN and discards their replies: so no count is owed, only validity.
  if (!complete || saw_duplicate_error || want.duplicate_ids) return;
  check(saw_error_frame == want.error_frame, "framing error frame missing");
  check(pongs == want.pings, "pongs missing for pings");
  for (const auto& [id, n] : want.ids) {
    const auto got_it = ids.find(id);
    const int replies = got_it == ids.end() ? 0 : got_it->second;
    const auto c = want.cancels.find(id);
    const int may_miss = c == want.cancels.end() ? 0 : c->second;
    check(replies <= n && replies >= n - may_miss, "replies missing for complete requests");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  cfg.max_frame_size = max_frame;
  cfg.stop_timeout = std::chrono::milliseconds(500);
  cfg.idle_timeout = std::chrono::seconds(1);  // armed and cancelled on every connection
  // Small, so claimed counts, big replies and calls in flight reach the limits.
  cfg.max_memory = corvid::memory_limit::bytes(4u << 20);
  cfg.max_queued_reply_bytes = 32u << 10;
  server = new corvid::rpc_server(cfg);  // never destroyed: lives for the whole session
  server->register_handler<echo, store, split, repeat, throws_later, count_pages, count_strings,
                           count_map, count_variants, touchy, touchy_co, big, nap, ticks,
                           relay>();
  server->register_handler<&ns::calc::add, &ns::calc::div>(&calculator);
  if (auto ec = server->async_start()) die(("server start failed: " + ec.message()).c_str());
  health_check();
  return 0;
}

// Input: byte 0 = options (bit 0: split the write, bit 1: pause 1 ms between the halves,
// bit 2: close without reading, bit 3: ... with a reset (SO_LINGER 0), bits 4-5: pause in ms
// before that close, bit 6: a late reader: a 4 KiB receive window and 20 ms before reading),
// byte 1 = split point (a fraction of the stream, /255), then the stream.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static unsigned runs = 0;
  if (size < 2) return -1;
  const std::uint8_t options = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::size_t cut = (options & 1) ? stream.size() * data[1] / 255 : stream.size();

  const int fd = connect_raw(options & 0x40);
  bool sent = send_all(fd, stream.substr(0, cut));
  if (sent && cut < stream.size()) {
    if (options & 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sent = send_all(fd, stream.substr(cut));
  }
  if (options & 4) {  // vanish: no reading, no reply checks
    std::this_thread::sleep_for(std::chrono::milliseconds((options >> 4) & 3));
    if (options & 8) {
      const linger abort_on_close{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
    }
    ::close(fd);
    if (++runs % health_every == 0) health_check();
    return 0;
  }
  const expectation want = expected_replies(stream);
  if (options & 0x40) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // The replies owed first, then our FIN (it cancels coroutine calls still running), then the
  // rest until the server closes.
  std::string got;
  bool closed = false;
  bool reset = false;
  read_frames(
      fd, [&](std::string_view g) { return owed_arrived(g, want); }, got, closed, reset);
  if (!closed) {
    ::shutdown(fd, SHUT_WR);
    read_to_eof(fd, got, reset);
  }
  ::close(fd);
  // A reset (or a refused send) is only acceptable after a framing error, where the server
  // closes with our remaining bytes unread; a well-formed stream must end in an orderly close.
  if (reset || !sent) check(want.error_frame, "connection reset without a framing error");
  check_replies(got, want, !reset);

  if (++runs % health_every == 0) health_check();
  return 0;
}
