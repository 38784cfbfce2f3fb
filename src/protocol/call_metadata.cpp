// Call metadata: the owning list, the view of a checked block, and the block's encoding.
#include "corvid/call_metadata.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include "corvid/detail/handler_invoker.hpp"  // append_metadata, exported
#include "corvid/detail/outbound_queue.hpp"

#include "metadata_block.hpp"

namespace corvid {

namespace {

std::uint32_t load_u32(const char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;  // little-endian hosts only (as the frame header)
}
std::uint16_t load_u16(const char* p) noexcept {
  std::uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
void store_u32(char* p, std::uint32_t v) noexcept { std::memcpy(p, &v, 4); }
void store_u16(char* p, std::uint16_t v) noexcept { std::memcpy(p, &v, 2); }

// The bytes a key may hold, by value: one load per byte (a server checks every key of every
// request that carries metadata).
constexpr std::array<bool, 256> key_bytes = [] {
  std::array<bool, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
  t['-'] = t['_'] = t['.'] = true;
  return t;
}();

}  // namespace

bool is_metadata_key(std::string_view key) noexcept {
  if (key.empty() || key.size() > 255) return false;
  for (const char c : key)
    if (!key_bytes[static_cast<unsigned char>(c)]) return false;
  return true;
}

metadata::metadata(std::initializer_list<std::pair<std::string_view, std::string_view>> entries) {
  for (const auto& [k, v] : entries) add(k, v);
}

metadata& metadata::add(std::string_view key, std::string_view value) {
  if (!is_metadata_key(key)) {
    throw std::invalid_argument("metadata key \"" + std::string(key.substr(0, 64)) +
                                "\" is not 1-255 bytes of a-z 0-9 - _ .");
  }
  // The block counts entries in 16 bits and values' lengths in 32.
  if (entries_.size() == 0xFFFF) throw std::length_error("metadata of more than 65535 entries");
  if (value.size() > 0xFFFF'FFFFu) throw std::length_error("a metadata value over 4 GiB");
  entries_.emplace_back(key, value);
  return *this;
}

std::optional<std::string_view> metadata::find(std::string_view key) const noexcept {
  for (const auto& [k, v] : entries_)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

std::size_t metadata::erase(std::string_view key) noexcept {
  return std::erase_if(entries_, [&](const auto& e) { return e.first == key; });
}

std::size_t metadata::wire_size() const noexcept { return protocol::metadata_wire_size(*this); }

std::optional<std::string_view> metadata_view::find(std::string_view key) const noexcept {
  for (metadata_entry e : *this)
    if (e.key == key) return e.value;
  return std::nullopt;
}

metadata metadata_view::to_metadata() const {
  metadata md;
  for (metadata_entry e : *this) md.add(e.key, e.value);
  return md;
}

metadata_view::iterator metadata_view::begin() const noexcept {
  return count_ == 0 ? iterator{} : iterator(block_.data(), count_);
}

// The block was checked when it arrived, so each entry is where its lengths say.
metadata_entry metadata_view::iterator::operator*() const noexcept {
  const auto klen = static_cast<unsigned char>(at_[0]);
  const std::uint32_t vlen = load_u32(at_ + 1 + klen);
  return {std::string_view(at_ + 1, klen), std::string_view(at_ + 1 + klen + 4, vlen)};
}

metadata_view::iterator& metadata_view::iterator::operator++() noexcept {
  const auto klen = static_cast<unsigned char>(at_[0]);
  at_ += 1 + klen + 4 + load_u32(at_ + 1 + klen);
  if (--left_ == 0) at_ = nullptr;
  return *this;
}

namespace protocol {

metadata_read read_metadata(std::string_view body, const metadata_limits& limits) {
  metadata_read r;
  auto fail = [&r](rpc_errc code, std::string why) {
    r.code = code;
    r.message = std::move(why);
    return std::move(r);
  };
  if (body.size() < metadata_head_size) {
    return fail(rpc_errc::bad_request,
                "the metadata flag is set but the body is shorter than a metadata block head (6 "
                "bytes)");
  }
  const std::uint32_t entry_bytes = load_u32(body.data());
  const std::uint16_t count = load_u16(body.data() + 4);
  // The limits first, from the head alone: a block that claims too much is refused before
  // anything else about it is believed.
  if (std::size_t{entry_bytes} + metadata_head_size > limits.max_bytes) {
    return fail(rpc_errc::resource_exhausted,
                "call metadata of " +
                    std::to_string(std::size_t{entry_bytes} + metadata_head_size) +
                    " bytes exceeds the limit of " + std::to_string(limits.max_bytes));
  }
  if (count > limits.max_entries) {
    return fail(rpc_errc::resource_exhausted, "call metadata of " + std::to_string(count) +
                                                  " entries exceeds the limit of " +
                                                  std::to_string(limits.max_entries));
  }
  if (entry_bytes > body.size() - metadata_head_size) {
    return fail(rpc_errc::bad_request, "the metadata block says " + std::to_string(entry_bytes) +
                                           " bytes but the body has " +
                                           std::to_string(body.size() - metadata_head_size));
  }
  const char* p = body.data() + metadata_head_size;
  const char* const end = p + entry_bytes;
  for (std::size_t i = 0; i < count; ++i) {
    if (end - p < 1)
      return fail(rpc_errc::bad_request, "metadata entry " + std::to_string(i) + " is cut off");
    const auto klen = static_cast<unsigned char>(*p);
    if (static_cast<std::size_t>(end - p) < 1u + klen + 4u)
      return fail(rpc_errc::bad_request, "metadata entry " + std::to_string(i) + " is cut off");
    if (!is_metadata_key(std::string_view(p + 1, klen)))
      return fail(rpc_errc::bad_request, "metadata entry " + std::to_string(i) +
                                             ": its key is not 1-255 bytes of a-z 0-9 - _ .");
    const std::uint32_t vlen = load_u32(p + 1 + klen);
    p += 1 + klen + 4;
    if (static_cast<std::size_t>(end - p) < vlen)
      return fail(rpc_errc::bad_request, "metadata entry " + std::to_string(i) + " is cut off");
    p += vlen;
  }
  if (p != end) {
    return fail(rpc_errc::bad_request, "the metadata block's " + std::to_string(count) +
                                           " entries do not fill its " +
                                           std::to_string(entry_bytes) + " bytes");
  }
  r.entries = metadata_view(std::string_view(body.data() + metadata_head_size, entry_bytes), count);
  r.consumed = metadata_head_size + entry_bytes;
  return r;
}

std::size_t metadata_wire_size(const metadata& md) noexcept {
  std::size_t n = metadata_head_size;
  for (metadata_entry e : md) n += 1 + e.key.size() + 4 + e.value.size();
  return n;
}

void encode_metadata(const metadata& md, char* out) noexcept {
  store_u32(out, static_cast<std::uint32_t>(metadata_wire_size(md) - metadata_head_size));
  store_u16(out + 4, static_cast<std::uint16_t>(md.size()));
  char* p = out + metadata_head_size;
  for (metadata_entry e : md) {
    *p++ = static_cast<char>(e.key.size());
    std::memcpy(p, e.key.data(), e.key.size());
    p += e.key.size();
    store_u32(p, static_cast<std::uint32_t>(e.value.size()));
    p += 4;
    if (!e.value.empty()) std::memcpy(p, e.value.data(), e.value.size());
    p += e.value.size();
  }
}

}  // namespace protocol

namespace detail {
void append_metadata(outbound_queue& out, const metadata& md) {
  protocol::encode_metadata(md, out.extend(md.wire_size()));
}
}  // namespace detail

}  // namespace corvid
