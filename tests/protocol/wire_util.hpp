#pragma once
// Shared by the protocol tests: hex helpers (tests/support/hex.hpp), frame builders, the reader for
// the hex vectors in docs/protocol.md, and the functions the doc's examples call.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>

#include "corvid/codec/codec.hpp"
#include "corvid/detail/function_traits.hpp"
#include "corvid/error.hpp"
#include "corvid/protocol/frame_header.hpp"
#include "corvid/protocol/function_id.hpp"
#include "corvid/protocol/signature.hpp"
#include "corvid/server/request_context.hpp"

#include "hex.hpp"

// The doc's example functions. Global and in `ns`, because their names are part of the wire
// format: function ids hash "echo", "store", "ns::calc::add".
inline std::string echo(std::string s) { return s; }
inline void store(corvid::request_context& ctx, std::string key) {
  // Throwing turns a wrong decode into a handler_error reply, which fails the byte comparison.
  if (key != "k1" || ctx.request_attachment() != "\xde\xad\xbe\xef") {
    throw std::runtime_error("store: unexpected key or attachment");
  }
}
namespace ns {
struct calc {
  int add(int a, int b) const { return a + b; }
  int div(int a, int b) const {
    if (b == 0) throw std::domain_error("division by zero");
    return a / b;
  }
  int mod(int a, int b) const { return a % b; }  // never registered: the function_not_found case
};
}  // namespace ns

namespace corvid::protocol::test {

// The first request id the corvid client uses on a connection: generation 1, slot 0.
inline constexpr std::uint64_t first_id = std::uint64_t{1} << 32;

// hex() and unhex() are the shared ones (tests/support/hex.hpp).
using corvid::test::hex;
using corvid::test::unhex;

// Header + body (each value codec-encoded in turn) + attachment, lengths filled in.
template <class... Body>
std::string frame(frame_header h, std::string_view attachment, const Body&... body) {
  std::string out(header_size, '\0');
  codec::string_sink sink(out);
  (codec::encode(sink, body), ...);
  h.body_length = static_cast<std::uint32_t>(out.size() - header_size);
  h.attachment_length = static_cast<std::uint32_t>(attachment.size());
  encode_header(h, out.data());
  out += attachment;
  return out;
}

// A request to F: the body is the argument tuple, typed as the server decodes it.
template <auto F, class... Args>
std::string request(std::uint64_t id, std::string_view attachment, Args&&... args) {
  frame_header h{.type = msg_type::request,
                 .signature = signature_v<F>,
                 .request_id = id,
                 .function_id = function_id<F>()};
  return frame(h, attachment, corvid::detail::decoded_args_t<F>{std::forward<Args>(args)...});
}

// A response: status ok with the encoded value (none for void), or an error with its message.
template <class... Value>
std::string response(std::uint64_t id, const Value&... value) {
  return frame({.type = msg_type::response, .request_id = id}, {}, value...);
}
inline std::string error_response(std::uint64_t id, rpc_errc status, const std::string& message) {
  return frame({.type = msg_type::response, .status = status, .request_id = id}, {}, message);
}

// Every "```hex <name>" block of docs/protocol.md, by name. A line's bytes are the text before
// its first double space (the rest is commentary). Throws if a block is malformed.
std::map<std::string, std::string> doc_vectors();

}  // namespace corvid::protocol::test
