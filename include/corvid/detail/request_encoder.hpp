#pragma once
// How rpc_client hands a call's arguments to its connection, which is compiled once, not per
// call signature: the caller's encoding lambda behind a pointer, with one entry point for each
// place the connection encodes into (its send queue, or a parked request's own buffer).
namespace corvid::codec {
class string_sink;
}

namespace corvid::detail {

class outbound_queue;

struct request_encoder {
  void* args;  // the caller's state, alive for the duration of the submit
  void (*to_queue)(void* args, outbound_queue& out);
  void (*to_string)(void* args, codec::string_sink& out);
};

// The encoder for `encode`, a callable taking either destination (`auto& out`); it must
// outlive the submit.
template <class Encode>
request_encoder encoder_for(Encode& encode) noexcept {
  return {&encode, [](void* e, outbound_queue& out) { (*static_cast<Encode*>(e))(out); },
          [](void* e, codec::string_sink& out) {
            (*static_cast<Encode*>(e))(out);
          }};
}

}  // namespace corvid::detail
