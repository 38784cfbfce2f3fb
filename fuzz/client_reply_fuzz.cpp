// Fuzzes corvid::rpc_client's handling of what a server sends back: reply framing (partial,
// pipelined, oversized, non-response frames, connection-level errors with request id 0),
// matching replies to pending calls by id (unknown, stale, duplicate ids), and decoding the
// result, error message and attachment. The "server" is this harness: a plain loopback
// listener. Per input it accepts the client's connection, reads the client's request(s),
// answers with the input bytes, and then closes its write side (or holds the connection open,
// so the calls' deadlines have to end them, or resets it). The input can also make the caller
// close or destroy its rpc_client while the reply is being processed on the client's reactor,
// racing the two.
//
// Input: byte 0 = options, byte 1 = split point (a fraction of the reply, /255), byte 2 = end
// options, then the reply.
//   bit 0: patch the real request ids into the reply's frames (at offset 8 of the first frame,
//          then of the frame after it, as the reply's own length fields place it), so the
//          fuzzer reaches result decoding without having to guess ids
//   bit 1: two pipelined calls instead of one
//   bit 2: hold the connection open after the reply (the calls' 3 ms deadline ends them)
//   bit 3: write the reply in two parts, 1 ms apart (the split point is byte 1)
//   bit 7: send a 16-byte request attachment from the caller's memory (zero-copy, pinned)
//   bits 4-6: which function (its result type) the call is for
// Byte 2 (how the connection ends):
//   bit 0: the fake server resets the connection (SO_LINGER 0) instead of a FIN / holding it
//   bit 1: the caller calls rpc_client::close() right after the reply is written
//   bit 2: the caller destroys its rpc_client right after the reply is written
//   bit 3: each call's coroutine, once resumed with its result, makes another call (no reply
//          comes for it; the connection's end or its 3 ms deadline ends it); not with bit 2
//   bits 4-5: the caller first waits 0-3 ms (bits 1-2 only)
// Checked: every call ends (value or error) within 5 s; nothing crashes or trips ASan/UBSan;
// and when the reply starts with one complete, valid response frame for a lone call (and byte 2
// is 0), the call ends exactly as docs/protocol.md says (the status, or the decoded value and
// attachment, or protocol_error for a body that does not decode as the result).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <poll.h>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>
#include <variant>
#include <vector>

#include "corvid/client/rpc_client.hpp"
#include "corvid/codec/codec.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/sync_wait.hpp"
#include "corvid/task.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

// The functions the client calls: only their signatures matter (they never run here).
struct record {
  std::uint32_t id;
  std::map<std::string, std::vector<std::uint8_t>> fields;
  std::optional<std::variant<std::int64_t, std::string>> extra;
  bool operator==(const record&) const = default;
};
std::string echo(std::string s) { return s; }
int add(int a, int b) { return a ^ b; }
void ping() {}
record lookup(std::string) { return {}; }
std::vector<std::string> list(std::uint8_t) { return {}; }
std::string_view view(std::string_view s) { return s; }  // arrives as std::string

namespace {

namespace protocol = corvid::protocol;
namespace codec = corvid::codec;
using corvid::rpc_errc;
using namespace std::chrono_literals;

constexpr std::uint32_t client_max_frame = 1u << 20;
int listener = -1;
std::uint16_t listen_port = 0;

void die(const char* what) {
  std::fprintf(stderr, "client_reply_fuzz: %s\n", what);
  std::abort();  // libFuzzer records the input and the stack
}
void check(bool ok, const char* what) {
  if (!ok) die(what);
}

// A coroutine that starts at once and is never awaited: drives one call from this thread.
struct fire_and_forget {
  struct promise_type {
    fire_and_forget get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }
  };
};

// One call's outcome, filled on the client's reactor thread.
template <class Result>
struct outcome {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::optional<Result> result;

  void set(Result r) {
    std::lock_guard lk(m);
    result.emplace(std::move(r));
    done = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock lk(m);
    if (!cv.wait_for(lk, 5s, [&] { return done; })) die("a call did not end within 5 s");
  }
};

template <auto F, bool WithAttachment>
using result_of = corvid::expected<
    std::conditional_t<WithAttachment, corvid::with_attachment<corvid::detail::client_result_t<F>>,
                       corvid::detail::client_result_t<F>>,
    corvid::rpc_error>;

template <auto F, bool WithAttachment, class... Args>
fire_and_forget start_call(corvid::rpc_client& client, corvid::call_options options, bool chain,
                           outcome<result_of<F, WithAttachment>>& out, Args... args) {
  std::optional<result_of<F, WithAttachment>> r;
  if constexpr (WithAttachment) {
    r.emplace(co_await client.call_with<F>(options, args...));
  } else {
    r.emplace(co_await client.call_for<F>(options.timeout, args...));
  }
  // Resumed on the client's reactor, maybe inside its reply dispatch: call again from there.
  if (chain) (void)co_await client.call_for<ping>(3ms);
  out.set(std::move(*r));
}

corvid::task<corvid::rpc_error> connect_client(corvid::rpc_client& c, std::string ep) {
  co_return co_await c.connect(ep);
}

bool read_exact(int fd, char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}
void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client closed first (e.g. after a framing error): fine
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::uint32_t le32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v |= std::uint32_t{static_cast<std::uint8_t>(s[at + i])} << (8 * i);
  return v;
}

// Checks how a lone call ended against the reply, when the reply starts with one complete,
// valid response frame carrying the call's id (else there is nothing simple to predict).
template <auto F, bool WithAttachment>
void check_against_first_frame(std::string_view reply, std::uint64_t id,
                               const result_of<F, WithAttachment>& got) {
  using R = corvid::detail::client_result_t<F>;
  protocol::frame_header h;
  if (reply.size() < protocol::header_size) return;
  if (protocol::decode_header(reply.data(), h, client_max_frame) != protocol::header_errc::ok) {
    return;
  }
  if (h.type != protocol::msg_type::response || h.request_id != id) return;
  if (reply.size() < h.frame_size()) return;
  if ((h.flags & protocol::must_understand_flags) != 0) {  // no such bit of a response is known
    check(!got.has_value() && got.error().code() == rpc_errc::protocol_error,
          "a reply with an unknown must-understand flag bit was accepted");
    return;
  }
  const std::string_view body = reply.substr(protocol::header_size, h.body_length);
  const std::string_view attachment =
      reply.substr(protocol::header_size + h.body_length, h.attachment_length);
  if (h.status != rpc_errc::ok) {
    check(!got.has_value() && got.error().code() == h.status, "error status not passed up");
    std::string message;
    if (codec::decode(body, message) == codec::decode_errc::ok && !message.empty()) {
      check(got.error().message() == message, "error message not passed up");
    }
    return;
  }
  if constexpr (std::is_void_v<R>) {
    if (body.empty()) {
      check(got.has_value(), "a void call's empty ok reply did not succeed");
      if constexpr (WithAttachment) check(got->attachment == attachment, "attachment differs");
    } else {
      check(!got.has_value() && got.error().code() == rpc_errc::protocol_error,
            "a void call's reply with a body was accepted");
    }
  } else {
    R want{};
    if (codec::decode(body, want) != codec::decode_errc::ok) {
      check(!got.has_value() && got.error().code() == rpc_errc::protocol_error,
            "an undecodable result was not a protocol_error");
      return;
    }
    check(got.has_value(), "a decodable ok reply failed");
    if constexpr (WithAttachment) {
      check(got->value == want, "decoded result differs");
      check(got->attachment == attachment, "reply attachment differs");
    } else {
      check(*got == want, "decoded result differs");
    }
  }
}

template <auto F, bool WithAttachment, class... Args>
void run(std::uint8_t options, std::uint8_t split, std::uint8_t end, std::string reply,
         Args... args) {
  const bool patch = options & 1;
  const int calls = (options & 2) ? 2 : 1;
  const bool hold = options & 4;
  const bool split_write = options & 8;
  const bool zero_copy = options & 128;

  corvid::client_config cfg;
  cfg.max_frame_size = client_max_frame;
  cfg.connect_timeout = 2s;
  cfg.request_timeout = 0ms;
  cfg.zero_copy_threshold = zero_copy ? 8 : 0;
  std::optional<corvid::rpc_client> client(std::in_place, cfg);
  if (auto ec =
          corvid::sync_wait(connect_client(*client, "127.0.0.1:" + std::to_string(listen_port)))) {
    die("client connect failed");
  }
  pollfd p{listener, POLLIN, 0};
  check(::poll(&p, 1, 2000) == 1, "no connection to accept within 2 s");
  const int fd = ::accept(listener, nullptr, nullptr);
  check(fd >= 0, "accept failed");
  timeval tv{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  // The caller's memory for a zero-copy attachment: must stay valid until the call ends.
  const std::string attachment(zero_copy ? 16 : 0, 'a');
  corvid::call_options call_opts{hold ? 3ms : 5000ms, attachment};
  std::vector<outcome<result_of<F, WithAttachment>>> out(calls);
  for (auto& o : out) start_call<F, WithAttachment>(*client, call_opts, (end & 8) != 0, o, args...);

  // Read the requests (the client must send them all), to learn their ids.
  // A call whose 3 ms deadline passed already may have sent its cancel frame in between.
  std::vector<std::uint64_t> ids;
  while (ids.size() < static_cast<std::size_t>(calls)) {
    char hdr[protocol::header_size];
    check(read_exact(fd, hdr, sizeof hdr), "request header not received");
    protocol::frame_header h;
    const bool valid = protocol::decode_header(hdr, h, UINT32_MAX) == protocol::header_errc::ok;
    if (valid && h.type == protocol::msg_type::cancel) {
      check(h.payload_size() == 0 && std::find(ids.begin(), ids.end(), h.request_id) != ids.end(),
            "the client cancelled a request it never sent");
      continue;
    }
    check(valid && h.type == protocol::msg_type::request && h.request_id != 0,
          "the client sent a bad request header");
    std::string payload(h.payload_size(), '\0');
    check(read_exact(fd, payload.data(), payload.size()), "request payload not received");
    ids.push_back(h.request_id);
  }

  if (patch) {
    std::uint64_t at = 0;
    for (std::uint64_t id : ids) {
      if (at + 16 > reply.size()) break;
      for (int i = 0; i < 8; ++i) reply[at + 8 + i] = static_cast<char>(id >> (8 * i));
      if (at + 28 > reply.size()) break;
      at += protocol::header_size + std::uint64_t{le32(reply, at + 20)} + le32(reply, at + 24);
    }
  }
  const std::size_t cut = split_write ? reply.size() * split / 255 : reply.size();
  write_all(fd, std::string_view(reply).substr(0, cut));
  if (cut < reply.size()) {
    std::this_thread::sleep_for(1ms);
    write_all(fd, std::string_view(reply).substr(cut));
  }
  if (end & 1) {
    const linger abort_on_close{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_on_close, sizeof abort_on_close);
    ::close(fd);
  } else if (!hold) {
    ::shutdown(fd, SHUT_WR);
  }
  if (end & 6) {
    std::this_thread::sleep_for(std::chrono::milliseconds((end >> 4) & 3));
    if (end & 2) client->close();
    if (end & 4) client.reset();  // pending calls end with connection_closed
  }

  for (auto& o : out) o.wait();
  if (calls == 1 && !hold && end == 0) {
    check_against_first_frame<F, WithAttachment>(reply, ids[0], *out[0].result);
  }
  if (!(end & 1)) ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 16) != 0) {
    die("cannot listen on 127.0.0.1");
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_port = ntohs(addr.sin_port);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return -1;
  const std::uint8_t options = data[0];
  const std::uint8_t split = data[1];
  std::uint8_t end = data[2] & 0x3f;  // the bits that mean something
  if (end & 4) end &= ~8;             // no chained call on a client being destroyed
  std::string reply(reinterpret_cast<const char*>(data) + 3, size - 3);
  switch ((options >> 4) & 7) {
    case 0:
      run<echo, false>(options, split, end, std::move(reply), std::string("hi"));
      break;
    case 1:
      run<add, false>(options, split, end, std::move(reply), 1, 2);
      break;
    case 2:
      run<ping, false>(options, split, end, std::move(reply));
      break;
    case 3:
      run<lookup, false>(options, split, end, std::move(reply), std::string("k"));
      break;
    case 4:
      run<list, false>(options, split, end, std::move(reply), std::uint8_t{3});
      break;
    case 5:
      run<view, false>(options, split, end, std::move(reply), std::string_view("v"));
      break;
    case 6:
      run<echo, true>(options, split, end, std::move(reply), std::string("att"));
      break;
    case 7:
      run<ping, true>(options, split, end, std::move(reply));
      break;
  }
  return 0;
}
