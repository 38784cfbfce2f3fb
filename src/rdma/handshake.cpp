#include "handshake.hpp"

#include "corvid/codec/codec.hpp"

#include "../protocol/frames.hpp"

namespace corvid::rdma {

std::string encode_setup(const setup_message& m) {
  std::string out;
  codec::string_sink sink(out);
  codec::encode(sink, m);
  return out;
}

std::string decode_setup(std::string_view body, setup_message& m) {
  if (auto ec = codec::decode(body, m); ec != codec::decode_errc::ok) {
    return "malformed RDMA setup message (" + std::string(codec::to_string(ec)) + ")";
  }
  if (m.version != setup_version) {
    return "RDMA setup version " + std::to_string(m.version) + " not supported (this side speaks " +
           std::to_string(setup_version) + ")";
  }
  return {};
}

setup_message describe(const rdma_stream& s, const std::string& provider) {
  const verbs::endpoint_info info = s.local_info();
  setup_message m;
  m.provider = provider;
  m.qp_num = info.qp_num;
  m.lid = info.lid;
  m.gid = info.gid;
  m.psn = info.psn;
  m.max_message = s.max_recv_message();
  return m;
}

verbs::endpoint_info remote_of(const setup_message& m) {
  verbs::endpoint_info info;
  info.qp_num = m.qp_num;
  info.lid = m.lid;
  info.gid = m.gid;
  info.psn = m.psn;
  return info;
}

std::string setup_frame(rpc_errc status, std::string_view body) {
  std::string frame(protocol::header_size, '\0');
  std::string payload;
  if (status == rpc_errc::ok) {
    payload = body;
  } else {  // errors carry a codec string, like error responses
    codec::string_sink sink(payload);
    codec::encode(sink, body);
  }
  protocol::encode_header(
      protocol::make_rdma_setup(static_cast<std::uint32_t>(payload.size()), status), frame.data());
  return frame + payload;
}

std::string quote_bounded(std::string_view s) {
  constexpr std::size_t shown = 32;
  std::string out;
  for (const char c : s.substr(0, shown)) out += c >= 0x20 && c < 0x7f ? c : '?';
  if (s.size() > shown) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

expected<std::shared_ptr<rdma_stream>, rpc_error> accept_setup(
    const std::shared_ptr<rdma_context>& ctx, asio::io_context& reactor, rdma_counters* counters,
    std::string_view request, std::string_view peer_key, std::string& reply) {
  // A setup message is ~80 bytes; the frame limit lets far bigger ones through.
  if (request.size() > max_setup_body) {
    return unexpected(rpc_error(rpc_errc::protocol_error, "RDMA setup message of " +
                                                              std::to_string(request.size()) +
                                                              " bytes; the most accepted is " +
                                                              std::to_string(max_setup_body)));
  }
  setup_message peer;
  if (auto why = decode_setup(request, peer); !why.empty()) {
    return unexpected(rpc_error(rpc_errc::protocol_error, std::move(why)));
  }
  if (peer.provider != ctx->provider()) {
    // The client's string is quoted bounded: the refusal must not carry what it sent back
    // at whatever size it chose.
    return unexpected(rpc_error(rpc_errc::connect_failed, "RDMA provider mismatch: client uses '" +
                                                              quote_bounded(peer.provider) +
                                                              "', server uses '" + ctx->provider() +
                                                              "'"));
  }
  const ibv_config& cfg = ctx->config();
  auto ticket = ctx->setups().enter();
  if (!ticket) {
    return unexpected(rpc_error(
        rpc_errc::server_busy,
        std::to_string(ctx->setups().max_total()) +
            " RDMA connections are in setup, the most ibv_config::max_connections_in_setup "
            "allows; try again once they connected or timed out"));
  }
  if (!ticket->set_peer(std::string(peer_key))) {
    return unexpected(rpc_error(
        rpc_errc::server_busy,
        std::to_string(ctx->setups().max_per_peer()) + " RDMA connections from " +
            quote_bounded(peer_key) +
            " are in setup, the most ibv_config::max_connections_in_setup_per_peer allows; "
            "try again once they connected or timed out"));
  }
  auto stream = rdma_stream::create(ctx, reactor, counters);
  if (!stream) return unexpected(std::move(stream).error());
  if (auto e = (*stream)->connect(remote_of(peer), peer.max_message))
    return unexpected(std::move(e));
  (*stream)->guard_setup(std::move(ticket), cfg.setup_timeout);
  reply = encode_setup(describe(**stream, ctx->provider()));
  return std::move(*stream);
}

}  // namespace corvid::rdma
