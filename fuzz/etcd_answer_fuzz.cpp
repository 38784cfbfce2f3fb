// Fuzzes what an etcd:// client reads from etcd's JSON gateway (src/discovery/etcd_decode.cpp):
// byte 0 picks a range answer (the rest is one /v3/kv/range body) or a watch stream (the rest
// is /v3/watch's stream, one message per line); every value read is then decoded as a
// registry value. Besides not crashing and throwing nothing (an exception aborts), it checks
// what the etcd source relies on: a range page has a revision and only keys that are not
// empty; a watch update's revision is at least each event's; an instance decoded from a value
// has an address check_address accepts and a weight of at least 1, and a value is "too large"
// exactly when it is over the bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "discovery/etcd_decode.hpp"

namespace {

using namespace corvid::discovery;

void check(bool ok) {
  if (!ok) std::abort();  // libFuzzer records the input and the stack
}

void check_value(const etcd_kv& kv) {
  check(!kv.key.empty());
  constexpr std::size_t max = 64;  // small, so the fuzzer reaches both sides of it
  auto e = decode_instance(kv.key, kv.value, max);
  if (e) {
    check(!check_address(e->address));
    check(e->weight >= 1);
    check(!e->id.empty());
  } else {
    check((e.error().reason == corvid::metrics::discovery_reject::too_large) ==
          (kv.value.size() > max));
    check(!e.error().detail.empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto page = decode_range_answer(in);
    if (page) {
      check(page->revision > 0);
      for (const auto& kv : page->kvs) check_value(kv);
    } else {
      check(!page.error().empty());
    }
    return 0;
  }
  std::size_t start = 0;
  while (start <= in.size()) {
    const auto nl = in.find('\n', start);
    const auto line = in.substr(start, nl == std::string_view::npos ? in.npos : nl - start);
    const watch_message m = decode_watch_message(line);
    if (m.what != watch_message::kind::update) check(m.events.empty());
    for (const auto& ev : m.events) {
      check(m.revision >= ev.kv.mod_revision);
      check_value(ev.kv);
    }
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return 0;
}
