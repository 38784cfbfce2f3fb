#include "check.hpp"

#include <map>

namespace corvid::schema {
namespace {

std::string join(const json& list) {
  std::string out = "(";
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    if (i != 0) out += ", ";
    out += list.items[i].text;
  }
  return out + ")";
}

std::map<std::string, const json*> by_name(const json& list) {
  std::map<std::string, const json*> out;
  for (const json& e : list.items) out[e["name"].text] = &e;
  return out;
}

void check_function(const std::string& name, const json& o, const json& n,
                    std::vector<finding>& out) {
  if (join(o["params"]) != join(n["params"])) {
    out.push_back({true, "function " + name + ": parameters changed from " + join(o["params"]) +
                             " to " + join(n["params"]) +
                             " (callers of either version get signature_mismatch; add a new "
                             "function, or fields to an evolvable struct parameter)"});
  }
  if (o["result"].text != n["result"].text) {
    out.push_back({true, "function " + name + ": result changed from " + o["result"].text + " to " +
                             n["result"].text});
  }
}

void check_struct(const std::string& name, const json& o, const json& n,
                  std::vector<finding>& out) {
  const std::string& layout = o["layout"].text;
  if (layout != n["layout"].text) {
    out.push_back({true, "struct " + name + ": layout changed from " + layout + " to " +
                             n["layout"].text + " (the length prefix appears or disappears)"});
    return;
  }
  const auto& of = o["fields"].items;
  const auto& nf = n["fields"].items;
  const std::size_t common = of.size() < nf.size() ? of.size() : nf.size();
  for (std::size_t i = 0; i < common; ++i) {
    if (of[i].text != nf[i].text) {
      out.push_back({true, "struct " + name + ": field " + std::to_string(i + 1) +
                               " changed from " + of[i].text + " to " + nf[i].text +
                               " (retyped, or fields reordered or inserted before it)"});
    }
  }
  if (nf.size() < of.size()) {
    out.push_back({true, "struct " + name + ": " + std::to_string(of.size() - nf.size()) +
                             " field(s) removed from its end (keep retired fields)"});
  } else if (nf.size() > of.size()) {
    const bool frozen = layout == "frozen";
    out.push_back({frozen, "struct " + name + ": " + std::to_string(nf.size() - of.size()) +
                               " field(s) appended" +
                               (frozen ? " to a frozen struct (it has no length prefix)"
                                       : ": compatible, older peers skip them and newer "
                                         "ones default them")});
  }
}

}  // namespace

std::vector<finding> check(const json& old_schema, const json& new_schema) {
  std::vector<finding> out;
  const auto old_functions = by_name(old_schema["functions"]);
  const auto new_functions = by_name(new_schema["functions"]);
  for (const auto& [name, o] : old_functions) {
    auto it = new_functions.find(name);
    if (it == new_functions.end()) {
      out.push_back({true, "function " + name + " removed (old callers get function_not_found)"});
    } else {
      check_function(name, *o, *it->second, out);
    }
  }
  for (const auto& [name, n] : new_functions) {
    if (!old_functions.contains(name)) out.push_back({false, "function " + name + " added"});
  }
  const auto old_structs = by_name(old_schema["structs"]);
  const auto new_structs = by_name(new_schema["structs"]);
  for (const auto& [name, o] : old_structs) {
    auto it = new_structs.find(name);
    if (it == new_structs.end()) {
      out.push_back({true, "struct " + name +
                               " no longer used by any function, or renamed (a struct's name "
                               "is part of every signature that holds it)"});
    } else {
      check_struct(name, *o, *it->second, out);
    }
  }
  return out;
}

}  // namespace corvid::schema
