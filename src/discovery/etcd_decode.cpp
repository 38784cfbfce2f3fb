#include "etcd_decode.hpp"

#include <array>
#include <charconv>
#include <limits>

#include <nlohmann/json.hpp>

namespace corvid::discovery {

using json = nlohmann::json;

namespace {

constexpr std::array<std::int8_t, 256> base64_values = [] {
  std::array<std::int8_t, 256> t{};
  t.fill(-1);
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i)
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  return t;
}();

const json* member(const json& j, const char* name) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(name);
  return it == j.end() ? nullptr : &*it;
}

bool bool_field(const json& j, const char* name) {
  const json* v = member(j, name);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

// A key-value of the gateway; nullopt when its key is not readable.
std::optional<etcd_kv> decode_kv(const json& kv) {
  if (!kv.is_object()) return std::nullopt;
  auto key = decode_base64(string_field(kv, "key"));
  if (!key || key->empty()) return std::nullopt;
  etcd_kv out;
  out.key = std::move(*key);
  // proto3 leaves an empty value out; a value that is not base64 reads as not JSON later.
  const json* v = member(kv, "value");
  if (v != nullptr) {
    if (!v->is_string()) {
      out.value_unreadable = true;
    } else if (auto value = decode_base64(v->get_ref<const std::string&>())) {
      out.value = std::move(*value);
    } else {
      out.value_unreadable = true;
    }
  }
  out.mod_revision = int_field(kv, "mod_revision");
  return out;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    std::uint32_t group = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && last && k >= 2) {
        ++pad;
        group <<= 6;
        continue;
      }
      const std::int8_t v = base64_values[static_cast<unsigned char>(c)];
      if (v < 0 || pad > 0) return std::nullopt;  // a bad character, or data after '='
      group = (group << 6) | static_cast<std::uint32_t>(v);
    }
    out += static_cast<char>((group >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((group >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(group & 0xff);
  }
  return out;
}

std::int64_t int_field(const json& j, const char* name) noexcept {
  const json* v = member(j, name);
  if (v == nullptr) return 0;
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    std::int64_t out = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() ? out : 0;
  }
  if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<std::int64_t>();
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    return u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
               ? static_cast<std::int64_t>(u)
               : 0;
  }
  return 0;
}

std::string string_field(const json& j, const char* name) {
  const json* v = member(j, name);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

std::string error_message(const json& answer) {
  std::string m = string_field(answer, "message");
  if (m.empty()) m = string_field(answer, "error");
  if (m.empty()) {
    if (const json* e = member(answer, "error"); e != nullptr && e->is_object()) {
      m = string_field(*e, "message");
    }
  }
  if (m.size() > 200) m.resize(200);
  return m;
}

expected<range_page, std::string> decode_range_answer(std::string_view body) {
  return decode_range_answer(json::parse(body, nullptr, false));
}

expected<range_page, std::string> decode_range_answer(const json& answer) {
  if (answer.is_discarded() || !answer.is_object()) {
    return unexpected(std::string("a range answer that is not a JSON object"));
  }
  range_page out;
  if (const json* h = member(answer, "header")) out.revision = int_field(*h, "revision");
  if (out.revision <= 0) return unexpected(std::string("a range answer without a revision"));
  out.more = bool_field(answer, "more");
  out.count = int_field(answer, "count");
  if (const json* kvs = member(answer, "kvs"); kvs != nullptr && kvs->is_array()) {
    out.kvs.reserve(kvs->size());
    for (const auto& kv : *kvs) {
      if (auto d = decode_kv(kv)) {
        out.kvs.push_back(std::move(*d));
      } else {
        ++out.unreadable;
      }
    }
  }
  return out;
}

watch_message decode_watch_message(std::string_view line) {
  watch_message out;
  const json message = json::parse(line, nullptr, false);
  if (message.is_discarded() || !message.is_object()) return out;
  const json* result = member(message, "result");
  if (result == nullptr || !result->is_object()) {
    out.what = watch_message::kind::ended;
    out.error = error_message(message);
    return out;
  }
  if (int_field(*result, "compact_revision") != 0) {
    out.what = watch_message::kind::compacted;
    return out;
  }
  if (bool_field(*result, "canceled")) {
    out.what = watch_message::kind::ended;
    out.error = string_field(*result, "cancel_reason");
    return out;
  }
  out.what = watch_message::kind::update;
  out.created = bool_field(*result, "created");
  if (const json* h = member(*result, "header")) out.revision = int_field(*h, "revision");
  if (const json* evs = member(*result, "events"); evs != nullptr && evs->is_array()) {
    out.events.reserve(evs->size());
    for (const auto& e : *evs) {
      const json* kv = member(e, "kv");
      std::optional<etcd_kv> d;
      if (kv != nullptr) d = decode_kv(*kv);
      if (!d) {
        ++out.unreadable;
        continue;
      }
      etcd_event ev;
      ev.deleted = string_field(e, "type") == "DELETE";
      ev.kv = std::move(*d);
      // The events' own revision: the header's may run ahead of them.
      out.revision = std::max(out.revision, ev.kv.mod_revision);
      out.events.push_back(std::move(ev));
    }
  }
  return out;
}

expected<lb_endpoint, rejection> decode_instance(std::string_view key, std::string_view value,
                                                 std::size_t max_value_bytes) {
  using metrics::discovery_reject;
  if (value.size() > max_value_bytes) {
    return unexpected(
        rejection{discovery_reject::too_large, "value of " + std::to_string(value.size()) +
                                                   " bytes, over max_registry_value_bytes (" +
                                                   std::to_string(max_value_bytes) + ")"});
  }
  const json j = json::parse(value, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return unexpected(rejection{discovery_reject::not_json, "value is not a JSON object"});
  }
  const json* address = member(j, "address");
  if (address == nullptr || !address->is_string()) {
    return unexpected(rejection{discovery_reject::bad_field, "no string \"address\""});
  }
  lb_endpoint e;
  e.address = address->get<std::string>();
  if (auto bad = check_address(e.address)) return unexpected(std::move(*bad));
  if (const json* id = member(j, "id")) {
    if (!id->is_string()) {
      return unexpected(rejection{discovery_reject::bad_field, "\"id\" is not a string"});
    }
    e.id = id->get<std::string>();
  }
  if (e.id.empty()) e.id = std::string(key);
  if (const json* w = member(j, "weight")) {
    if (!w->is_number_unsigned() ||
        w->get<std::uint64_t>() > std::numeric_limits<unsigned>::max()) {
      return unexpected(
          rejection{discovery_reject::bad_field, "\"weight\" is not an integer 0..4294967295"});
    }
    e.weight = std::max(1u, w->get<unsigned>());
  }
  return e;
}

}  // namespace corvid::discovery
