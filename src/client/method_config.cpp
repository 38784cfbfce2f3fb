// method_config: where a method's settings come from (its own entry, its namespaces', "*"),
// and the JSON form the C++ and Python clients share.
#include "corvid/client/method_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace corvid {

namespace {

enum class kind { method, name_space, any };

kind kind_of(std::string_view name) {
  if (name == "*") return kind::any;
  return name.ends_with("::") ? kind::name_space : kind::method;
}

// Methods first, then namespaces from the longest (the most specific), then "*".
bool before(std::string_view a, std::string_view b) {
  const kind ka = kind_of(a), kb = kind_of(b);
  if (ka != kb) return ka < kb;
  return ka == kind::name_space && a.size() > b.size();
}

template <class T>
void fill(std::optional<T>& into, const std::optional<T>& from) {
  if (!into && from) into = from;
}

using json = nlohmann::json;

// A whole number of milliseconds in [0, 1 day].
expected<std::chrono::milliseconds, std::string> millis(const json& v, std::string_view what) {
  constexpr std::int64_t day = 86'400'000;
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > day) {
    return unexpected("\"" + std::string(what) +
                      "\" must be a whole number of ms in [0, 86400000]");
  }
  return std::chrono::milliseconds(v.get<std::int64_t>());
}

expected<unsigned, std::string> count(const json& v, std::string_view what, unsigned lo,
                                      unsigned hi) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    return unexpected("\"" + std::string(what) + "\" must be a whole number in [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return static_cast<unsigned>(v.get<std::int64_t>());
}

expected<hedging_policy, std::string> parse_hedging(const json& h) {
  if (!h.is_object()) return unexpected(std::string("\"hedging\" must be an object"));
  hedging_policy p;
  for (const auto& [key, v] : h.items()) {
    if (key == "max_copies") {
      auto n = count(v, "max_copies", 1, 8);
      if (!n) return unexpected(n.error());
      p.max_copies = *n;
    } else if (key == "delay_ms") {
      auto d = millis(v, "delay_ms");
      if (!d) return unexpected(d.error());
      p.delay = *d;
    } else if (key == "delay_quantile") {
      if (!v.is_number() || !(v.get<double>() >= 0) || !(v.get<double>() < 1)) {
        return unexpected(std::string("\"delay_quantile\" must be a number in [0, 1)"));
      }
      p.delay_quantile = v.get<double>();
    } else {
      return unexpected("unknown hedging setting \"" + key + "\"");
    }
  }
  return p;
}

// One entry of "methods": its name and policy.
expected<std::pair<std::string, method_policy>, std::string> parse_entry(const json& e) {
  if (!e.is_object()) return unexpected(std::string("each entry of \"methods\" must be an object"));
  std::string name;
  method_policy p;
  for (const auto& [key, v] : e.items()) {
    if (key == "name") {
      if (!v.is_string() || v.get<std::string>().empty()) {
        return unexpected(std::string("\"name\" must be a non-empty string"));
      }
      name = v.get<std::string>();
    } else if (key == "timeout_ms") {
      auto d = millis(v, "timeout_ms");
      if (!d) return unexpected(d.error());
      if (d->count() == 0) return unexpected(std::string("\"timeout_ms\" must be at least 1"));
      p.timeout = *d;
    } else if (key == "idempotent") {
      if (!v.is_boolean()) return unexpected(std::string("\"idempotent\" must be true or false"));
      p.idempotent = v.get<bool>();
    } else if (key == "max_attempts") {
      auto n = count(v, "max_attempts", 1, 10);
      if (!n) return unexpected(n.error());
      p.max_attempts = *n;
    } else if (key == "compress") {
      if (!v.is_boolean()) return unexpected(std::string("\"compress\" must be true or false"));
      p.compress = v.get<bool>();
    } else if (key == "hedging") {
      auto h = parse_hedging(v);
      if (!h) return unexpected(h.error());
      p.hedging = *h;
    } else {
      return unexpected("unknown method setting \"" + key + "\"");
    }
  }
  if (name.empty()) return unexpected(std::string("an entry of \"methods\" has no \"name\""));
  return std::pair{std::move(name), std::move(p)};
}

}  // namespace

method_config& method_config::set(std::string name, method_policy policy) {
  std::erase_if(entries_, [&](const entry& e) { return e.name == name; });
  if (policy.timeout && policy.timeout->count() < 1) policy.timeout = std::chrono::milliseconds(1);
  entry e{std::move(name), 0, std::move(policy)};
  if (kind_of(e.name) == kind::method) e.id = protocol::fnv1a32(e.name);
  const auto at = std::find_if(entries_.begin(), entries_.end(),
                               [&](const entry& x) { return before(e.name, x.name); });
  entries_.insert(at, std::move(e));
  return *this;
}

bool method_config::uses_delay_quantile() const noexcept {
  return std::any_of(entries_.begin(), entries_.end(), [](const entry& e) {
    return e.policy.hedging && e.policy.hedging->delay_quantile > 0;
  });
}

method_policy method_config::resolve(std::uint32_t id, std::string_view name) const {
  method_policy out;
  for (const auto& e : entries_) {
    switch (kind_of(e.name)) {
      case kind::method:
        if (e.id != id || e.name != name) continue;
        break;
      case kind::name_space:
        if (!name.starts_with(e.name)) continue;
        break;
      case kind::any:
        break;
    }
    fill(out.timeout, e.policy.timeout);
    fill(out.idempotent, e.policy.idempotent);
    fill(out.max_attempts, e.policy.max_attempts);
    fill(out.hedging, e.policy.hedging);
    fill(out.compress, e.policy.compress);
  }
  return out;
}

expected<method_config, std::string> method_config::parse(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return unexpected(std::string("not valid JSON"));
  if (!doc.is_object()) return unexpected(std::string("the document must be a JSON object"));
  method_config out;
  for (const auto& [key, v] : doc.items()) {
    if (key != "methods") return unexpected("unknown top-level key \"" + key + "\"");
    if (!v.is_array()) return unexpected(std::string("\"methods\" must be an array"));
    if (v.size() > 10'000)
      return unexpected(std::string("\"methods\" has more than 10000 entries"));
    for (const auto& e : v) {
      auto parsed = parse_entry(e);
      if (!parsed) return unexpected(parsed.error());
      out.set(std::move(parsed->first), std::move(parsed->second));
    }
  }
  return out;
}

}  // namespace corvid
