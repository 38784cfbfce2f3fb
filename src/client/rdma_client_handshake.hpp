#pragma once
// The client's side of the RDMA handshake (rdma/handshake.hpp, docs/protocol.md "RDMA"), run
// over the connection's byte stream. Here rather than in src/rdma: it drives a
// detail::byte_stream, and src/transport sits above src/rdma (byte_stream carries an RDMA
// stream), so src/rdma must not include it.
#include <functional>
#include <memory>

#include "corvid/error.hpp"

#include "../rdma/handshake.hpp"
#include "../transport/byte_stream.hpp"

namespace corvid::rdma {

// Client: runs the handshake on a connected stream, a socket or TLS on it (owned by the
// caller, who keeps it alive until `done` runs), and hands back a connected RDMA stream.
// `done` runs on the socket's reactor. Over TLS, a failure of TLS itself (the server's alert
// refusing our certificate arrives only now under TLS 1.3) is named as TLS's, not RDMA's.
void client_handshake(std::shared_ptr<rdma_context> ctx, detail::byte_stream& carrier,
                      rdma_counters* counters,
                      std::function<void(rpc_error, std::shared_ptr<rdma_stream>)> done);

}  // namespace corvid::rdma
