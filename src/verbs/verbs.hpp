#pragma once
// corvid::verbs — the thin internal verbs interface the RDMA transport is written against.
//
// It follows the ibverbs object model one to one, so the ibverbs provider is a mapping and the
// transport's code reads like verbs code:
//
//   device ── protection_domain ── memory_region      (registered bytes: lkey / rkey)
//         │                    └── queue_pair (RC)    (post_send / post_recv, connect)
//         └── completion_queue                        (poll, request_notify, pollable fd)
//
// Providers (open_device's options.provider):
//   "ibverbs"  libibverbs on a real NIC (src/verbs/ib/); compiled when libibverbs-dev exists.
//   "soft"     softverbs, corvid's user-space emulation over Unix sockets (src/verbs/soft/,
//              docs/softverbs.md); runs anywhere, across processes of one host.
//   ""         $CORVID_VERBS_PROVIDER if set, else "ibverbs". Never a silent fall-back: if the
//              chosen provider has no device, open_device fails with rpc_errc::no_rdma_device.
//
// Contract, common to both providers (the soft provider enforces what it can):
// - Lifetimes: destroy children before parents — queue pairs before the completion queues and
//   protection domain they use, memory regions before their protection domain, everything
//   before the device. Destructors never fail.
// - Threads: a device and a protection domain (reg_mr, create_qp) may be used from any thread.
//   A completion queue and the queue pairs that complete into it are externally synchronized:
//   drive them from one thread at a time (corvid: the connection's reactor). softverbs makes
//   progress only inside the calls on those objects, so this is where its work happens.
// - Only SEND / SEND-with-immediate over reliable-connected queue pairs. No RDMA READ/WRITE,
//   atomics, SRQ, UD or memory windows (the transport needs none of them).
// - A send's bytes may be read by the provider at any time until its completion is polled
//   (inline sends: copied during post_send, the buffer is free when post_send returns).
//   A receive's buffer belongs to the provider until its completion is polled.
// - Errors of a posted work request (bad lkey, out-of-bounds sge, receive too small, RNR
//   retries exhausted, peer gone) arrive as a work_completion with a non-success status; the
//   queue pair is then in the error state and every other outstanding request completes with
//   wr_flush_err. post_* itself fails (returns an error) only for requests that cannot be
//   queued: queue full, too many sges, inline too long, queue pair not yet connected.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "corvid/error.hpp"
#include "corvid/expected.hpp"

namespace corvid::verbs {

template <class T>
using result = expected<T, rpc_error>;

// --- work requests and completions ------------------------------------------------------

// One scatter/gather element: `length` bytes at `addr`, inside the memory region `lkey`.
// (addr is an integer, as in ibverbs, so the same type serves sends and receives.)
struct sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;

  static sge of(const void* p, std::size_t n, std::uint32_t lkey) {
    return {reinterpret_cast<std::uint64_t>(p), static_cast<std::uint32_t>(n), lkey};
  }
};

// A SEND (or SEND with immediate when `imm` is set). The payload is the concatenation of
// sg_list; it lands in the peer's oldest posted receive. The span only needs to live for the
// duration of post_send.
struct send_wr {
  std::uint64_t wr_id = 0;
  std::span<const sge> sg_list;
  // Unsignaled sends produce no completion on success (errors always complete). Their send
  // queue slots are freed when a later signaled send completes, so never post more than the
  // send queue depth unsignaled in a row.
  bool signaled = true;
  // Copy the payload into the work request: lkeys are ignored and the buffer is reusable when
  // post_send returns. Total length must be <= the queue pair's max_inline_data.
  bool inline_data = false;
  std::optional<std::uint32_t> imm;
};

// A receive buffer (scatter list) for the peer's next SEND.
struct recv_wr {
  std::uint64_t wr_id = 0;
  std::span<const sge> sg_list;
};

enum class wc_status : std::uint8_t {
  success,
  loc_len_err,        // receive: the incoming message is larger than the posted buffers
  loc_qp_op_err,      // local queue pair operation error
  loc_prot_err,       // an sge is outside its memory region, or its lkey is unknown
  loc_access_err,     // the memory region lacks the access the request needs
  wr_flush_err,       // flushed: the queue pair was (or went) in the error state
  rem_inv_req_err,    // send: the peer rejected it (e.g. its receive was too small)
  rem_access_err,     // send: the peer's memory protection rejected it
  rem_op_err,         // send: the peer could not complete it
  retry_exc_err,      // send: the peer did not answer (gone, not connected) within the retries
  rnr_retry_exc_err,  // send: the peer had no receive posted through all RNR retries
  general_err,        // anything else (the provider's message is in the log)
};
std::string_view to_string(wc_status s) noexcept;

enum class wc_opcode : std::uint8_t { send, recv };

struct work_completion {
  std::uint64_t wr_id = 0;
  wc_status status = wc_status::success;
  wc_opcode opcode = wc_opcode::send;  // only meaningful when status == success
  std::uint32_t byte_len = 0;          // recv: the bytes received
  std::uint32_t qp_num = 0;            // the queue pair the request was posted on
  std::optional<std::uint32_t> imm;    // recv: the sender's immediate data
  std::uint32_t vendor_err = 0;
};

// --- objects ------------------------------------------------------------------------------

// What one side tells the other (over the TCP side channel) to connect an RC queue pair.
// Opaque to the transport: send all fields, hand the peer's to queue_pair::connect.
// (softverbs encodes its rendezvous address in gid; see docs/softverbs.md.)
struct endpoint_info {
  std::uint32_t qp_num = 0;
  std::uint16_t lid = 0;
  std::array<std::uint8_t, 16> gid{};
  std::uint32_t psn = 0;  // 24 bits
};

struct connect_options {
  // RNR retries when the peer has no receive posted: 0..7, 7 = infinite (ibverbs encoding).
  std::uint8_t rnr_retry = 7;
  // This side's minimum RNR NAK timer, the back-off the *peer's* sender waits between RNR
  // retries: 0..31 in the ibverbs encoding (1 = 0.01 ms, 12 = 0.64 ms, 31 = 491.52 ms,
  // 0 = 655.36 ms); see rnr_timer_duration.
  std::uint8_t min_rnr_timer = 12;
  // Transport retries and ACK timeout (4.096 us * 2^timeout) before retry_exc_err: how long
  // a send waits for a peer that does not answer.
  std::uint8_t retry_cnt = 7;
  std::uint8_t timeout = 14;  // ~67 ms per try
};

// The RNR back-off in microseconds for an ibverbs min_rnr_timer code (0..31).
std::uint32_t rnr_timer_us(std::uint8_t code) noexcept;

enum class qp_state : std::uint8_t { reset, init, rtr, rts, error };

struct qp_caps {
  std::uint32_t max_send_wr = 16;
  std::uint32_t max_recv_wr = 16;
  std::uint32_t max_send_sge = 1;
  std::uint32_t max_recv_sge = 1;
  std::uint32_t max_inline_data = 0;  // <= device_attr::max_inline_data
};

class completion_queue;

struct qp_init {
  completion_queue* send_cq = nullptr;
  completion_queue* recv_cq = nullptr;  // may equal send_cq
  qp_caps caps;
};

class queue_pair {
 public:
  virtual ~queue_pair() = default;
  virtual std::uint32_t qp_num() const noexcept = 0;
  virtual qp_state state() const noexcept = 0;
  // This side's address for the peer (qp_num, port lid, gid at the device's gid index, psn).
  virtual endpoint_info local_info() const = 0;
  // INIT -> RTR -> RTS against the peer's endpoint_info. Does not wait for the peer: sends
  // posted before the peer is connected wait (up to the retry budget) for it. Bad remote info
  // is an error return (softverbs: connect_failed when no such queue pair is reachable).
  virtual rpc_error connect(const endpoint_info& remote, const connect_options& options) = 0;
  // Send queue: allowed in RTS (and in error, where requests complete with wr_flush_err).
  virtual rpc_error post_send(const send_wr& wr) = 0;
  // Receive queue: allowed from INIT on, so receives can be posted before connect.
  virtual rpc_error post_recv(const recv_wr& wr) = 0;
  // Moves the queue pair to the error state: outstanding requests complete with wr_flush_err.
  virtual void set_error() = 0;
  // Queue pair caps as granted (max_inline_data may be larger than asked).
  virtual const qp_caps& caps() const noexcept = 0;
  // "Receiver not ready" events at this side: the peer's SENDs that found no receive posted
  // here (on hardware, each is an RNR NAK this side sends and the peer's queue pair retries
  // after the back-off). Shows whether receives ran out, which a successful transfer hides.
  // nullopt when the provider does not count them (ibverbs: per port only, see device).
  virtual std::optional<std::uint64_t> rnr_naks() const noexcept { return std::nullopt; }
};

// Completion queue with its own completion channel, i.e. a file descriptor to wait on:
//
//   cq.request_notify();                 // arm
//   while (n = cq.poll(wcs)) handle(n);  // drain what arrived before arming
//   wait until cq.event_fd() is readable (poll(2), asio stream_descriptor::async_wait)
//   cq.consume_events();                 // make the fd not readable again, then repeat
//
// The fd becomes readable after request_notify() when a completion arrives (and, with
// softverbs, also when provider work is pending: a spurious wake-up polls nothing). It stays
// readable until consume_events(). The fd belongs to the queue: do not close it (an asio
// descriptor wrapping it must release() it before the queue is destroyed).
class completion_queue {
 public:
  virtual ~completion_queue() = default;
  virtual int event_fd() const noexcept = 0;
  // Arms the notification for the next completion (ibv_req_notify_cq, solicited_only = 0).
  virtual rpc_error request_notify() = 0;
  // Reads and acknowledges every pending event on event_fd (never blocks).
  virtual void consume_events() = 0;
  // Up to out.size() completions, oldest first; 0 when none. Never blocks. softverbs makes
  // its progress (socket I/O, timers) here.
  virtual result<std::size_t> poll(std::span<work_completion> out) = 0;
};

enum access_flag : std::uint32_t {
  access_local_write = 1,  // required for receive buffers
  access_remote_write = 2,
  access_remote_read = 4,
};

// Registered memory: the bytes [addr, addr + length) pinned for the device.
class memory_region {
 public:
  virtual ~memory_region() = default;
  virtual std::uint32_t lkey() const noexcept = 0;
  virtual std::uint32_t rkey() const noexcept = 0;
  virtual std::byte* addr() const noexcept = 0;
  virtual std::size_t length() const noexcept = 0;
  sge slice(std::size_t offset, std::size_t n) const { return sge::of(addr() + offset, n, lkey()); }
};

class protection_domain {
 public:
  virtual ~protection_domain() = default;
  // Registers [p, p + n) with `access` flags (access_local_write for receive buffers).
  virtual result<std::unique_ptr<memory_region>> reg_mr(void* p, std::size_t n,
                                                        std::uint32_t access) = 0;
  // An RC queue pair in the INIT state.
  virtual result<std::unique_ptr<queue_pair>> create_qp(const qp_init& init) = 0;
};

struct device_attr {
  std::string provider;  // "ibverbs" or "soft"
  std::string name;      // e.g. "mlx5_0", "softverbs0"
  std::uint32_t max_qp_wr = 0;
  std::uint32_t max_sge = 0;
  std::uint32_t max_cqe = 0;
  std::uint32_t max_inline_data = 0;  // largest inline send an RC queue pair accepts (probed)
  std::uint64_t max_mr_size = 0;
  std::uint32_t mtu = 0;               // active path MTU in bytes
  std::uint16_t lid = 0;               // of the opened port (0 on RoCE)
  std::array<std::uint8_t, 16> gid{};  // at the opened gid index
};

class device {
 public:
  virtual ~device() = default;
  virtual const device_attr& attr() const noexcept = 0;
  virtual result<std::unique_ptr<protection_domain>> alloc_pd() = 0;
  // A completion queue of at least `cqe` entries with its own event fd. Size it for every
  // request that can be outstanding on the queue pairs using it (send + recv depth): a
  // hardware queue that overruns breaks its queue pairs.
  virtual result<std::unique_ptr<completion_queue>> create_cq(std::uint32_t cqe) = 0;
  // queue_pair::rnr_naks summed over every queue pair created on this device, including
  // destroyed ones; readable from any thread. nullopt when the provider does not count them.
  // ibverbs: the opened port's hw_counters send_rnr_err + rcvd_rnr_err (RNR NAKs it sent and
  // received, since the device appeared, for every process), where the driver exports them.
  virtual std::optional<std::uint64_t> rnr_naks() const noexcept { return std::nullopt; }
};

struct device_options {
  std::string provider;     // "ibverbs", "soft", or "" = $CORVID_VERBS_PROVIDER else "ibverbs"
  std::string device_name;  // "" = the first device
  std::uint8_t port = 1;
  std::uint8_t gid_index = 0;
};

// Opens a device. Errors: no_rdma_device (provider has no device / not compiled in, with the
// reason in the message), invalid_argument (unknown provider, port or gid index).
result<std::unique_ptr<device>> open_device(const device_options& options);

// The provider open_device would use for `requested` ("" resolves through the environment).
std::string resolve_provider(std::string_view requested);

}  // namespace corvid::verbs
