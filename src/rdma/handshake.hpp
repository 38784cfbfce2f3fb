#pragma once
// The RDMA connection handshake over the TCP connection (docs/protocol.md, "RDMA"), or over
// TLS on it: the client sends one rdma_setup frame with its queue pair's address, the server
// answers with one carrying its own (or an error status and message), then every RPC frame
// travels over the queue pair while the TCP connection stays open, idle, as the liveness
// signal (without TLS from then on: see byte_stream::switch_to_rdma).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "corvid/error.hpp"
#include "corvid/protocol/frame_header.hpp"

#include "rdma_stream.hpp"

namespace corvid::rdma {

inline constexpr std::uint32_t setup_version = 1;
// Largest setup frame body either side accepts.
inline constexpr std::uint32_t max_setup_body = 4096;

// The body of an rdma_setup frame, in both directions (codec-encoded).
struct setup_message {
  std::uint32_t version = setup_version;
  std::string provider;  // "ibverbs" or "soft": both sides must use the same
  std::uint32_t qp_num = 0;
  std::uint16_t lid = 0;
  std::array<std::uint8_t, 16> gid{};
  std::uint32_t psn = 0;
  std::uint64_t max_message = 0;  // the largest SEND the sender of this message can receive
};

std::string encode_setup(const setup_message& m);
// An error message, empty when `body` is a valid setup message of our version.
std::string decode_setup(std::string_view body, setup_message& m);
setup_message describe(const rdma_stream& s, const std::string& provider);

// `s` for an error message: at most 32 printable characters, then its length.
std::string quote_bounded(std::string_view s);

// A whole rdma_setup frame (header + body) with `status`; for errors `body` is the message.
std::string setup_frame(rpc_errc status, std::string_view body);

// Server: builds and connects the queue pair for a client's setup request. On success the
// reply body goes to `reply`; on failure the error is for the client (status + message).
// The connection is in setup until its first completion (rdma_stream::guard_setup); past
// ibv_config::max_connections_in_setup of them, or max_connections_in_setup_per_peer from
// `peer_key` (detail::peer_key), requests are refused with server_busy before anything is
// taken.
expected<std::shared_ptr<rdma_stream>, rpc_error> accept_setup(
    const std::shared_ptr<rdma_context>& ctx, asio::io_context& reactor, rdma_counters* counters,
    std::string_view request, std::string_view peer_key, std::string& reply);

// The queue pair address a setup message describes.
verbs::endpoint_info remote_of(const setup_message& m);

// The client's side runs over a connection's byte stream: src/client/rdma_client_handshake.hpp.

}  // namespace corvid::rdma
