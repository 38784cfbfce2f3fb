#pragma once
// describe_schema<F...>(): the wire schema of handlers as stable JSON text, for
// `corvid-schema check OLD.json NEW.json` (tools/corvid-schema), which tells a compatible
// change (fields appended to evolvable structs, functions added) from a breaking one:
//
//   std::cout << corvid::describe_schema<inventory::find, inventory::price>();
//
// Types appear in the canonical form of signature fingerprints (protocol/signature.hpp):
// "u32", "bytes", "[T]", "?T", "struct ns::name", ... Every struct reachable from a parameter
// or result is listed once with its layout and its fields' types in order (field names are
// not available to the library, so fields are compared by position). Functions and structs
// are sorted by name, so the text only changes when the schema does.
#include <array>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include <boost/pfr.hpp>

#include "corvid/codec/traits.hpp"
#include "corvid/detail/function_traits.hpp"
#include "corvid/protocol/function_id.hpp"
#include "corvid/protocol/signature.hpp"

namespace corvid {
namespace detail {

struct schema_text {
  std::string s;
  void add(std::string_view v) { s += v; }
  void add_number(std::size_t n) { s += std::to_string(n); }
};

template <class T>
std::string canonical_type() {
  schema_text t;
  protocol::detail::add_type<T>(t);
  return std::move(t.s);
}

struct schema_struct {
  bool frozen = false;
  std::vector<std::string> fields;
};
using schema_structs = std::map<std::string, schema_struct>;

template <class T>
void collect_structs(schema_structs& out);

template <class... Ts>
void collect_each(schema_structs& out) {
  (collect_structs<std::remove_cvref_t<Ts>>(out), ...);
}

// Every aggregate reachable from T, with its fields, into out.
template <class T>
void collect_structs(schema_structs& out) {
  using codec::detail::kind;
  constexpr kind k = codec::detail::kind_v<T>;
  if constexpr (stream_of<T>::value) {
    collect_structs<std::remove_cvref_t<typename stream_of<T>::item>>(out);
  } else if constexpr (reader_of<T>::value) {
    collect_structs<std::remove_cvref_t<typename reader_of<T>::item>>(out);
  } else if constexpr (k == kind::span || k == kind::vector || k == kind::array || k == kind::set ||
                       k == kind::optional) {
    collect_structs<typename T::value_type>(out);
  } else if constexpr (k == kind::map) {
    collect_each<typename T::key_type, typename T::mapped_type>(out);
  } else if constexpr (k == kind::variant) {
    [&]<class... A>(std::variant<A...>*) {
      collect_each<A...>(out);
    }(static_cast<T*>(nullptr));
  } else if constexpr (k == kind::tuple) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      collect_each<std::tuple_element_t<I, T>...>(out);
    }(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (k == kind::aggregate) {
    const std::string name(protocol::detail::type_name<T>());
    if (out.contains(name)) return;
    schema_struct& s = out[name];
    s.frozen = !codec::detail::is_evolvable_v<T>;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (s.fields.push_back(canonical_type<boost::pfr::tuple_element_t<I, T>>()), ...);
      collect_each<boost::pfr::tuple_element_t<I, T>...>(out);
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
  }
}

// A JSON string literal (type names hold no control characters; quotes are escaped anyway).
inline std::string json_string(std::string_view v) {
  std::string out = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

inline std::string json_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += ", ";
    out += json_string(items[i]);
  }
  return out + "]";
}

// What the describers of a set of functions fill in: each function's JSON object by name (a
// stable order) and every struct they reach.
struct schema {
  std::map<std::string, std::string> functions;
  schema_structs structs;
};

template <auto F>
void describe_function(schema& out) {
  // The fingerprint's parameters: a trailing stream_reader<U> is listed as "stream U" (a
  // client needs it to call the function; the request body does not carry it).
  using params = schema_params_t<F>;
  using result = typename function_traits<decltype(F)>::result_type;
  std::vector<std::string> list;
  [&]<class... P>(std::tuple<P...>*) {
    (list.push_back(canonical_type<std::remove_cvref_t<P>>()), ...);
    collect_each<P...>(out.structs);
  }(static_cast<params*>(nullptr));
  if constexpr (!std::is_void_v<result>) {
    collect_structs<std::remove_cvref_t<result>>(out.structs);
  }
  char signature[8];
  std::snprintf(signature, sizeof signature, "0x%04x",
                static_cast<unsigned>(protocol::signature_v<F>));
  out.functions[std::string(protocol::function_name<F>())] =
      "{\"name\": " + json_string(protocol::function_name<F>()) +
      ", \"signature\": " + json_string(signature) + ", \"params\": " + json_list(list) +
      ", \"result\": " + json_string(canonical_type<std::remove_cvref_t<result>>()) + "}";
}

// &describe_function<F>: what rpc_server records per registered handler for reflection
// (server/reflection.hpp), so the schema of handlers known only at run time can be written.
using describe_fn = void (*)(schema&);

// The schema of the functions `describers` describe, as JSON: describe_schema<F...>() and the
// reflection method both write it here.
inline std::string render_schema(std::span<const describe_fn> describers) {
  schema all;
  for (const describe_fn describe : describers) describe(all);
  std::string out = "{\n  \"corvid_schema\": 1,\n  \"functions\": [";
  const char* sep = "\n    ";
  for (const auto& [name, text] : all.functions) {
    out += sep + text;
    sep = ",\n    ";
  }
  out += "\n  ],\n  \"structs\": [";
  sep = "\n    ";
  for (const auto& [name, s] : all.structs) {
    out += sep;
    out += "{\"name\": " + json_string(name) +
           ", \"layout\": " + (s.frozen ? "\"frozen\"" : "\"evolvable\"") +
           ", \"fields\": " + json_list(s.fields) + "}";
    sep = ",\n    ";
  }
  return out + "\n  ]\n}\n";
}

}  // namespace detail

// The schema of handlers F... as JSON (format: docs/codec.md, "Checking a change").
template <auto... F>
std::string describe_schema() {
  static constexpr std::array<detail::describe_fn, sizeof...(F)> describers{
      &detail::describe_function<F>...};
  return detail::render_schema(describers);
}

}  // namespace corvid
