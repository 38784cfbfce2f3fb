// Fuzzes one registry value as an etcd:// client reads it (decode_instance,
// src/discovery/etcd_decode.cpp): the input is the value, decoded under the default bound
// (4096 bytes) and under one just below its size. Besides not crashing and throwing nothing
// (an exception aborts), it checks that an accepted value gives an address check_address
// accepts, an id (the key when the value has none) and a weight of at least 1; that a
// rejection has a reason and words; and that "too large" is exactly a value over the bound.
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

void decode_under(std::string_view value, std::size_t max) {
  auto e = decode_instance("/services/echo/k", value, max);
  if (e) {
    check(value.size() <= max);
    check(!check_address(e->address));
    check(e->weight >= 1);
    check(!e->id.empty());
    return;
  }
  check((e.error().reason == corvid::metrics::discovery_reject::too_large) == (value.size() > max));
  check(!e.error().detail.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  decode_under(value, 4096);
  if (size > 0) decode_under(value, size - 1);
  return 0;
}
