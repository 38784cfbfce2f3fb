// The probe's side of the replaced global operator new (tests/support/replaced_new.cpp).
#include "allocation_probe.hpp"

#include "replaced_new.hpp"

namespace corvid::codec::test {
namespace {

bool g_armed = false;
probe_counts g_counts;

}  // namespace

void probe_arm() noexcept {
  g_counts = probe_counts{};
  g_armed = true;
}

probe_counts probe_disarm() noexcept {
  g_armed = false;
  return g_counts;
}

}  // namespace corvid::codec::test

bool corvid::test::on_operator_new(std::size_t size) noexcept {
  using namespace corvid::codec::test;
  if (!g_armed) return true;
  g_counts.bytes += size;
  ++g_counts.count;
  if (g_counts.bytes > probe_guard_bytes) g_counts.refused = true;
  return !g_counts.refused;
}
