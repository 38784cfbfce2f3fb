#pragma once
// RDMA settings for rpc_server::init_ibv() / rpc_client::init_ibv(). The defaults:
// 256 KiB registered chunks, 8 pre-posted receives and a send window of 2 per
// connection, so one connection holds (8 + 2) x 256 KiB = 2.5 MiB of registered memory.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace corvid {

struct ibv_config {
  // Verbs provider: "ibverbs" (a real NIC), "soft" (corvid's user-space emulation over a
  // local socket, for machines without one), or "" = $CORVID_VERBS_PROVIDER, else "ibverbs".
  std::string provider;
  // Device to open, e.g. "mlx5_0"; "" = the first device found.
  std::string device_name;
  std::uint8_t port = 1;       // the device's port number (1-based, as ibv_devinfo shows it)
  std::uint8_t gid_index = 0;  // RoCE: the GID table entry to address the peer with
  // Size of each registered chunk, and so the largest single RDMA message. Frames larger
  // than this are cut into chunk-sized sends, so copying and transfer overlap.
  std::size_t chunk_size = 256 * 1024;
  // Receives kept posted per connection; each completion is replenished at once so the
  // peer does not run into "receiver not ready" (RNR).
  std::size_t recv_buffers = 8;
  // Sends in flight per connection. A write completes for the caller once posted; while
  // the window is full, later frames queue and leave merged in one send.
  std::size_t send_window = 2;
  // Sends of at most this many bytes go inline (no DMA read of registered memory) when the
  // device supports it; 0 disables inline sends.
  std::size_t inline_threshold = 256;
  // Registered memory the shared chunk pool may hold (the watermark). A connection that
  // needs chunks past it is refused with a clear error; existing connections carry on.
  std::size_t pool_watermark = std::size_t{1} << 30;
  // Free chunks unused for this long are deregistered and returned to the system.
  std::chrono::milliseconds idle_chunk_release{30000};
  // RNR retries the queue pair makes when the peer has no receive posted; 7 = retry forever
  // (the verbs encoding). With 0, the first RNR fails the connection.
  std::uint8_t rnr_retry = 7;
  // Minimum RNR back-off the receiver asks for, in the verbs encoding (12 = 0.64 ms).
  std::uint8_t min_rnr_timer = 12;
  // How long a send waits for the peer's acknowledgement before it is sent again, in the
  // verbs encoding: 4.096 us x 2^ack_timeout, 0..31 (0 = wait forever). 14 (about 67 ms, as
  // perftest uses) suits a NIC, where ACKs come back in microseconds. Soft-RoCE on a busy
  // host can take longer than that to acknowledge, and every timeout resends the whole
  // message: there 18 (about 1.07 s) avoids retransmission storms under load.
  std::uint8_t ack_timeout = 14;
  // Resends after an ACK timeout before the connection fails, 0..7.
  std::uint8_t retry_count = 7;

  // Server side: bounds on connections in RDMA setup, i.e. accepted (queue pair and chunks
  // taken, answer sent) but with no completion yet. A corvid client sends an empty SEND as
  // soon as its queue pair is connected, so a working connection leaves setup within a
  // round trip; a peer that never connects its queue pair must not hold registered memory.
  // No completion within setup_timeout: the connection is closed and its chunks go back.
  std::chrono::milliseconds setup_timeout{10000};
  // At most this many connections in setup at once; further rdma_setup requests are
  // refused with server_busy until some connect or time out.
  std::size_t max_connections_in_setup = 64;
  // At most this many of them from one peer address (the handshake's TCP peer, without the
  // port; an IPv6 /64 counts as one), so one host cannot take every place: the one past it
  // is refused with server_busy before any chunk is taken.
  std::size_t max_connections_in_setup_per_peer = 8;
};

}  // namespace corvid
