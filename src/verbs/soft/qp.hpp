#pragma once
// A softverbs reliable-connected queue pair. Two connected queue pairs share one Unix stream
// socket: the one with the smaller (gid, qp_num) connects to the other's abstract listening
// socket (bound at creation, so connect() never waits for the peer) and both say hello
// (wire.hpp). A SEND is one data frame; the receiver places it into its oldest posted receive
// and acks it; the send completes when the ack arrives — as on RC hardware, a completed send
// is in the peer's memory. With no receive posted the receiver parks the message and lets
// the sender "retry" for rnr_retry x min_rnr_timer (7 = forever) before NAKing it.
//
// No thread: progress() runs from the completion queues' poll()/consume_events() when one of
// our fds is ready, and post_send/post_recv do their part at once.
#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "../verbs.hpp"
#include "context.hpp"
#include "cq.hpp"
#include "unique_fd.hpp"
#include "wire.hpp"
#include <sys/uio.h>

namespace corvid::verbs::soft {

class soft_qp final : public queue_pair {
 public:
  static result<std::unique_ptr<soft_qp>> create(std::shared_ptr<context> ctx, const qp_init& init);
  ~soft_qp() override;

  std::uint32_t qp_num() const noexcept override { return qpn_; }
  qp_state state() const noexcept override { return state_; }
  endpoint_info local_info() const override;
  rpc_error connect(const endpoint_info& remote, const connect_options& options) override;
  rpc_error post_send(const send_wr& wr) override;
  rpc_error post_recv(const recv_wr& wr) override;
  void set_error() override { fail(std::nullopt, std::nullopt); }
  const qp_caps& caps() const noexcept override { return caps_; }
  std::optional<std::uint64_t> rnr_naks() const noexcept override { return rnr_naks_; }

  // Called by a completion queue when one of our fds is ready.
  void progress();

 private:
  using clock = std::chrono::steady_clock;
  struct send_entry {
    std::uint64_t wr_id;
    std::uint32_t seq;
    std::uint32_t length;
    bool signaled;
  };
  struct recv_entry {
    std::uint64_t wr_id;
    std::vector<sge> sges;
    std::uint64_t capacity;
  };
  struct parked_message {
    std::uint32_t seq;
    std::optional<std::uint32_t> imm;
    std::vector<std::byte> data;  // what arrived of it so far
    bool complete;                // all of its bytes arrived
  };
  enum class sink : std::uint8_t { hello, recv, park, discard };

  soft_qp(std::shared_ptr<context> ctx, const qp_init& init, std::uint32_t qpn);

  // --- verbs semantics (qp.cpp)
  void on_hello(const wire::hello& h);
  void on_ack(std::uint32_t seq);
  void on_nak(wire::nak_kind kind, std::uint32_t seq);
  // Starts a data frame: picks the receive it lands in (or parks / rejects it).
  void on_data_header(const wire::frame_header& h);
  void on_data_complete();
  void deliver_parked();
  // Counts n more parked bytes; past the device's max_parked_bytes fails the queue pair,
  // NAKing the peer's SEND `seq` as RNR retries exceeded, and returns false.
  bool charge_parked(std::size_t n, std::uint32_t seq);
  wc_status check_recv(const recv_entry& r, std::uint64_t length) const;
  void complete_send(const send_entry& e, wc_status status);
  void complete_recv(const recv_entry& r, wc_status status, std::uint32_t length,
                     std::optional<std::uint32_t> imm);
  // When the sender's RNR retries for a message parked now run out (max = never).
  clock::time_point rnr_deadline() const;
  // Moves to the error state: the head send completes with `head` (else wr_flush_err), all
  // other requests with wr_flush_err; `nak` (for the peer's data frame `nak_seq`) is the
  // last word to the peer before the socket closes.
  void fail(std::optional<wc_status> head, std::optional<wire::nak_kind> nak,
            std::uint32_t nak_seq = 0);
  void arm_timer();
  void on_timer();
  // Active side, peer silent: whether its connect() has run (its probe is in our backlog).
  bool peer_reached_rtr();

  // --- the socket (qp_io.cpp)
  void on_listener();
  void read_socket();
  void consume();
  void on_header();
  void body_bytes(const std::byte* p, std::size_t n);
  void body_done();
  bool read_body_direct();
  void protocol_violation();
  void write_failed();
  void peer_lost();
  void reject_caller();
  // Whether the caller on `fd` is the process the peer's gid names (SO_PEERCRED): anyone in
  // the network namespace may call a rendezvous socket, only the peer may take the link.
  bool from_peer_process(int fd) const;
  void append_frame(const wire::frame_header& h, const void* body, std::size_t n);
  void append_frame(const wire::frame_header& h, std::span<const iovec> body, std::size_t skip);
  void send_frame(const wire::frame_header& h, std::span<const iovec> body);
  void send_ack();
  wire::hello make_hello() const;
  void send_hello();
  bool can_write() const noexcept { return sock_ && (active_ || peer_up_); }
  void flush();
  void close_socket();
  void truncate_unsent();
  void update_interest();
  void watch(int fd, std::uint32_t events);
  void unwatch(int fd);

  std::shared_ptr<context> ctx_;
  soft_cq* send_cq_;
  soft_cq* recv_cq_;
  qp_caps caps_;
  std::uint32_t qpn_;
  std::uint32_t psn_;
  qp_state state_ = qp_state::init;

  endpoint_info remote_{};
  connect_options options_{};
  bool active_ = false;
  bool peer_up_ = false;
  std::uint8_t peer_rnr_retry_ = 0;

  unique_fd listener_;
  unique_fd sock_;
  unique_fd probe_;  // passive side: our call to the peer's listener, saying we reached RTR
  unique_fd timer_;
  std::uint32_t sock_events_ = 0;
  bool listener_watched_ = false;

  // Requester side.
  std::deque<send_entry> sq_;
  std::size_t retained_unsignaled_ = 0;  // acked unsignaled sends still holding a slot
  std::uint32_t next_seq_;
  clock::time_point connect_deadline_ = clock::time_point::max();

  // Responder side.
  std::deque<recv_entry> rq_;
  std::deque<parked_message> parked_;
  std::size_t parked_bytes_ = 0;  // arrived bytes + bookkeeping (max_parked_bytes)
  clock::time_point rnr_deadline_ = clock::time_point::max();
  std::uint32_t expected_seq_ = 0;
  std::optional<std::uint32_t> last_placed_;
  bool ack_pending_ = false;
  std::uint64_t rnr_naks_ = 0;  // data frames that found no receive posted

  // Outgoing bytes the socket did not take yet, and where each frame in them ends (so an
  // error can drop the frames not started without cutting one in half).
  std::vector<std::byte> out_;
  std::size_t out_off_ = 0;
  std::deque<std::size_t> frame_ends_;
  // Where the frame containing out_[out_off_] starts; npos: it started before out_ (partly
  // written straight to the socket).
  std::size_t frame_start_ = 0;

  // Incoming frame being parsed.
  bool reading_ = false;  // inside read_socket()
  std::vector<std::byte> stage_;
  std::size_t stage_begin_ = 0;
  std::size_t stage_end_ = 0;
  wire::frame_header hdr_{};
  std::size_t hdr_have_ = 0;
  bool in_body_ = false;
  std::size_t body_left_ = 0;
  sink sink_ = sink::discard;
  wire::hello hello_in_{};
  std::size_t body_pos_ = 0;  // bytes of the body consumed so far
  std::vector<iovec> dest_;   // recv: the receive's sges, trimmed to the message length
};

}  // namespace corvid::verbs::soft
