#include "json.hpp"

#include <cctype>

namespace corvid::schema {
namespace {

class parser {
 public:
  explicit parser(std::string_view text) : s_(text) {}

  json document() {
    json v = value();
    skip_space();
    if (i_ != s_.size()) fail("text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("JSON: " + what + " at byte " + std::to_string(i_));
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_])) != 0) ++i_;
  }
  bool eat(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }

  std::string string_body() {
    expect('"');
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] == '\\') {
        if (++i_ == s_.size()) break;
        const char e = s_[i_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += s_[i_];
      }
      ++i_;
    }
    if (i_ == s_.size()) fail("unterminated string");
    ++i_;
    return out;
  }

  json value() {
    skip_space();
    if (i_ == s_.size()) fail("unexpected end");
    json v;
    const char c = s_[i_];
    if (c == '{') {
      ++i_;
      v.t = json::type::object;
      if (eat('}')) return v;
      do {
        skip_space();
        std::string key = string_body();
        expect(':');
        v.members[std::move(key)] = value();
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++i_;
      v.t = json::type::array;
      if (eat(']')) return v;
      do {
        v.items.push_back(value());
      } while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.t = json::type::string;
      v.text = string_body();
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c)) != 0) {
      v.t = json::type::number;
      while (i_ < s_.size() &&
             (s_[i_] == '-' || s_[i_] == '.' || s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' ||
              std::isdigit(static_cast<unsigned char>(s_[i_])) != 0)) {
        v.text += s_[i_++];
      }
    } else {
      for (std::string_view word : {"true", "false", "null"}) {
        if (s_.substr(i_, word.size()) == word) {
          i_ += word.size();
          v.t = word == "null" ? json::type::null : json::type::boolean;
          v.text = word;
          return v;
        }
      }
      fail("unexpected character");
    }
    return v;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

const json& json::operator[](const std::string& key) const {
  static const json none;
  auto it = members.find(key);
  return it == members.end() ? none : it->second;
}

json parse_json(std::string_view text) { return parser(text).document(); }

}  // namespace corvid::schema
