// The C++ server the Python client's tests (python/tests) call: a handler for every codec
// type, every server-side error, deadlines, cancellation, trace context, attachments, call
// metadata (and an interceptor that refuses calls on it) and the three kinds of stream.
//   python_peer_server [--tls] [--mtls] [--unix PATH] [--max-frame N] [--max-streams N]
//                      [--max-metadata-entries N]
//   python_peer_server --schema     prints describe_schema of its handlers (for corvid-stubgen)
// Reflection is on: corvid::reflection_service::describe answers the same schema.
// Serves on 127.0.0.1 (or PATH) and prints "port N" (with --tls/--mtls first
// "certs CA CLIENT_CERT CLIENT_KEY", files that live as long as the process), then serves
// until killed.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <variant>
#include <vector>

#include <corvid/corvid.hpp>
#include <corvid/schema/describe_schema.hpp>

#include "test_certs.hpp"

// Scalars and containers: each comes back as it went, so both directions of every codec
// type meet the C++ codec.
inline bool echo_bool(bool v) { return v; }
inline std::int8_t echo_i8(std::int8_t v) { return v; }
inline std::uint8_t echo_u8(std::uint8_t v) { return v; }
inline std::int16_t echo_i16(std::int16_t v) { return v; }
inline std::uint16_t echo_u16(std::uint16_t v) { return v; }
inline std::int32_t echo_i32(std::int32_t v) { return v; }
inline std::uint32_t echo_u32(std::uint32_t v) { return v; }
inline std::int64_t echo_i64(std::int64_t v) { return v; }
inline std::uint64_t echo_u64(std::uint64_t v) { return v; }
inline float echo_f32(float v) { return v; }
inline double echo_f64(double v) { return v; }
inline std::string echo(std::string s) { return s; }
inline std::vector<unsigned char> echo_blob(std::vector<unsigned char> b) { return b; }
inline std::vector<std::int32_t> echo_list(std::vector<std::int32_t> v) { return v; }
inline std::vector<std::string> echo_strings(std::vector<std::string> v) { return v; }
inline std::vector<bool> echo_bools(std::vector<bool> v) { return v; }
inline std::map<std::string, std::int64_t> echo_map(std::map<std::string, std::int64_t> m) {
  return m;
}
inline std::set<std::uint16_t> echo_set(std::set<std::uint16_t> s) { return s; }
inline std::optional<std::uint32_t> echo_opt(std::optional<std::uint32_t> v) { return v; }
inline std::tuple<std::uint8_t, std::string, bool> echo_tuple(
    std::tuple<std::uint8_t, std::string, bool> t) {
  return t;
}
inline std::variant<std::monostate, std::int32_t, std::string> echo_variant(
    std::variant<std::monostate, std::int32_t, std::string> v) {
  return v;
}
inline std::array<std::int8_t, 3> echo_array(std::array<std::int8_t, 3> a) { return a; }

// Computations, so that a client whose encoder and decoder shared a mistake would still fail.
inline corvid::task<std::int32_t> add(std::int32_t a, std::int32_t b) { co_return a + b; }
inline std::int64_t sum_list(std::vector<std::int32_t> v) {
  std::int64_t s = 0;
  for (const auto x : v) s += x;
  return s;
}
inline std::string describe_variant(std::variant<std::monostate, std::int32_t, std::string> v) {
  if (v.index() == 0) return "none";
  if (v.index() == 1) return "int " + std::to_string(std::get<1>(v));
  return "string " + std::get<2>(v);
}
inline std::string utf8_len(std::string s) { return std::to_string(s.size()); }
// A reply far larger than its request (for the client's max_frame_size).
inline std::string repeat(std::string s, std::uint32_t n) {
  std::string out;
  for (std::uint32_t i = 0; i < n; ++i) out += s;
  return out;
}

enum class color : std::uint8_t { red = 1, green = 2 };  // open: any u8 decodes
inline color echo_color(color c) { return c; }
enum class shape : std::uint8_t { circle = 0, square = 1 };  // closed
constexpr auto corvid_enum_values(shape) { return std::array{shape::circle, shape::square}; }
inline shape echo_shape(shape s) { return s; }
inline std::uint8_t shape_code(shape s) { return static_cast<std::uint8_t>(s); }
// Returns a value of the closed enum's type that is none of its enumerators: the Python
// client must refuse it (unknown_alternative, PROTOCOL_ERROR for a result).
inline std::uint8_t raw_shape(std::uint8_t v) { return v; }

struct point {
  std::int32_t x;
  double y;
  std::string tag;
  std::vector<std::int32_t> v;
};
inline point shift(point p, std::int32_t dx) {
  p.x += dx;
  p.v.push_back(dx);
  return p;
}

struct point3f {
  using codec_layout = corvid::codec::frozen;
  float x, y, z;
};
inline point3f scale3(point3f p, float k) { return {p.x * k, p.y * k, p.z * k}; }

namespace geo {
// Nested structs, in containers, optional and variant; a qualified struct name.
struct everything {
  bool b;
  std::int8_t i8;
  std::uint64_t u64;
  float f;
  std::string s;
  std::vector<point> points;
  std::map<std::string, point3f> named;
  std::optional<point> maybe;
  std::variant<std::monostate, std::int32_t, std::string> alt;
  std::set<std::int64_t> keys;
  std::tuple<std::int16_t, std::string> pair;
  color c;
};
inline everything echo_everything(everything e) { return e; }
// A fixed value, checked field by field in Python: decoding what C++ encoded.
inline everything make_sample() {
  return everything{true,
                    -7,
                    18446744073709551615ull,
                    1.5f,
                    "h\xc3\xa9llo",
                    {point{1, 0.5, "p", {2}}, point{-3, -2.25, "", {}}},
                    {{"a", point3f{1, 2, 3}}},
                    point{9, 9.5, "m", {1, 2, 3}},
                    std::string("alt"),
                    {-5, 0, 5},
                    {-2, "two"},
                    color::green};
}
// Checks a value Python encoded (the same as make_sample) and says which field differs.
inline std::string check_sample(everything e) {
  const everything want = make_sample();
  if (e.b != want.b) return "b";
  if (e.i8 != want.i8) return "i8";
  if (e.u64 != want.u64) return "u64";
  if (e.f != want.f) return "f";
  if (e.s != want.s) return "s";
  if (e.points.size() != 2 || e.points[0].x != 1 || e.points[0].y != 0.5 ||
      e.points[0].tag != "p" || e.points[0].v != std::vector<std::int32_t>{2} ||
      e.points[1].x != -3 || e.points[1].y != -2.25)
    return "points";
  if (e.named.size() != 1 || e.named["a"].x != 1 || e.named["a"].y != 2 || e.named["a"].z != 3)
    return "named";
  if (!e.maybe || e.maybe->x != 9 || e.maybe->v.size() != 3) return "maybe";
  if (e.alt != want.alt) return "alt";
  if (e.keys != want.keys) return "keys";
  if (e.pair != want.pair) return "pair";
  if (e.c != want.c) return "c";
  return "ok";
}
}  // namespace geo

// Evolution: this server has version 2 of `user`; the Python tests declare version 1.
struct user {
  std::uint32_t id;
  std::string name;
  std::uint8_t age = 18;
  std::optional<std::string> email;
};
inline std::uint32_t user_age(user u) { return u.age; }
inline user get_user(std::uint32_t id) { return user{id, "al", 30, std::string("al@x")}; }

namespace ns {
inline std::int32_t twice(std::int32_t v) { return 2 * v; }
}  // namespace ns

// Errors.
inline std::int32_t divide(std::int32_t a, std::int32_t b) {
  if (b == 0) throw std::domain_error("division by zero");
  return a / b;
}

// Attachments: the reply's attachment is the request's, reversed, and the body its length.
inline std::uint32_t attach(corvid::request_context& ctx, std::string key) {
  std::string a(ctx.request_attachment());
  std::reverse(a.begin(), a.end());
  ctx.set_response_attachment(key + a);
  return static_cast<std::uint32_t>(ctx.request_attachment().size());
}

// Deadlines and cancellation.
std::atomic<int> sleepers_running{0};
std::atomic<int> sleepers_cancelled{0};
inline corvid::task<bool> nap(corvid::request_context& ctx, std::uint32_t ms) {
  ++sleepers_running;
  const bool slept = co_await ctx.sleep_for(std::chrono::milliseconds(ms));
  --sleepers_running;
  if (!slept) ++sleepers_cancelled;
  co_return slept;
}
inline std::int32_t naps_running() { return sleepers_running.load(); }
inline std::int32_t naps_cancelled() { return sleepers_cancelled.load(); }
// The remaining budget the request's timeout gave, in ms; -1 without one.
inline std::int64_t deadline_ms(corvid::request_context& ctx) {
  const auto d = ctx.deadline();
  if (!d) return -1;
  return std::chrono::duration_cast<std::chrono::milliseconds>(*d -
                                                               std::chrono::steady_clock::now())
      .count();
}

// Trace context: "<traceparent of the server's span> <caller's span id>", or "" untraced.
inline std::string trace_of(corvid::request_context& ctx) {
  const corvid::trace_context* t = ctx.trace();
  if (t == nullptr) return "";
  static constexpr char hex[] = "0123456789abcdef";
  std::string parent;
  for (const auto b : ctx.parent_span_id()) {
    parent += hex[b >> 4];
    parent += hex[b & 15];
  }
  return t->traceparent() + " " + parent;
}

// Call metadata: the request's entries as "key=value" (in order), and the reply's metadata is
// each of them again under "echo-<key>", then "served-by: peer".
inline std::vector<std::string> metadata_of(corvid::request_context& ctx) {
  std::vector<std::string> out;
  corvid::metadata& reply = ctx.response_metadata();
  for (const auto e : ctx.metadata()) {
    out.push_back(std::string(e.key) + "=" + std::string(e.value));
    reply.add("echo-" + std::string(e.key), e.value);
  }
  reply.add("served-by", "peer");
  return out;
}
// Methods named guarded_* are refused by the server's interceptor (guard below) unless the
// call carries "authorization: Bearer let-me-in"; with "role: guest" too they are denied.
inline std::string guarded_echo(std::string s) { return s; }
inline corvid::stream<std::int32_t> guarded_count(std::int32_t n) {
  for (std::int32_t i = 1; i <= n; ++i) co_yield i;
}

// Streams.
inline corvid::stream<std::int32_t> count_to(std::int32_t n) {
  for (std::int32_t i = 1; i <= n; ++i) co_yield i;
}
inline corvid::task<std::uint64_t> upload(corvid::stream_reader<std::string> in) {
  std::uint64_t total = 0;
  while (auto chunk = co_await in.next()) total += chunk->size();
  co_return total;
}
inline corvid::stream<std::string> chat(corvid::stream_reader<std::string> in) {
  while (auto m = co_await in.next()) co_yield "re: " + *m;
}
inline corvid::stream<std::int32_t> fails_after(std::int32_t n) {
  for (std::int32_t i = 0; i < n; ++i) co_yield i;
  throw std::runtime_error("producer broke");
}
inline corvid::stream<std::string> blobs(std::uint32_t size, std::uint32_t count) {
  for (std::uint32_t i = 0; i < count; ++i)
    co_yield std::string(size, static_cast<char>('a' + i % 26));
}
std::atomic<int> endless_yielded{0};
std::atomic<int> endless_destroyed{0};
inline corvid::stream<std::string> endless(std::uint32_t size) {
  struct on_destroy {
    ~on_destroy() { ++endless_destroyed; }
  } guard;
  for (;;) {
    ++endless_yielded;
    co_yield std::string(size, 'x');
  }
}
inline std::int32_t endless_yields() { return endless_yielded.load(); }
inline std::int32_t endless_ends() { return endless_destroyed.load(); }

namespace {

corvid::call_verdict guard(const corvid::call_info& call) {
  if (!call.method.starts_with("guarded_")) return corvid::call_verdict::proceed();
  if (call.metadata.find("authorization") != std::optional<std::string_view>("Bearer let-me-in")) {
    return corvid::call_verdict::refuse_static(corvid::rpc_errc::unauthenticated,
                                               "a bearer token is required");
  }
  if (call.metadata.find("role") == std::optional<std::string_view>("guest")) {
    return corvid::call_verdict::refuse(corvid::rpc_errc::permission_denied,
                                        "guests may not call " + std::string(call.method));
  }
  return corvid::call_verdict::proceed();
}

void register_all(corvid::rpc_server& s) {
  s.register_handler<echo_bool, echo_i8, echo_u8, echo_i16, echo_u16, echo_i32, echo_u32, echo_i64,
                     echo_u64, echo_f32, echo_f64, echo, echo_blob, echo_list, echo_strings,
                     echo_bools, echo_map, echo_set, echo_opt, echo_tuple, echo_variant,
                     echo_array>();
  s.register_handler<add, sum_list, describe_variant, utf8_len, repeat, echo_color, echo_shape,
                     shape_code, raw_shape, shift, scale3, geo::echo_everything, geo::make_sample,
                     geo::check_sample, user_age, get_user, ns::twice, divide, attach, nap,
                     naps_running, naps_cancelled, deadline_ms, trace_of, metadata_of,
                     guarded_echo>();
  s.register_handler<guarded_count, count_to, upload, chat, fails_after, blobs, endless,
                     endless_yields, endless_ends>();
}

std::string schema() {
  return corvid::describe_schema<
      echo_bool, echo_i8, echo_u8, echo_i16, echo_u16, echo_i32, echo_u32, echo_i64, echo_u64,
      echo_f32, echo_f64, echo, echo_blob, echo_list, echo_strings, echo_bools, echo_map, echo_set,
      echo_opt, echo_tuple, echo_variant, echo_array, add, sum_list, describe_variant, utf8_len,
      repeat, echo_color, echo_shape, shape_code, raw_shape, shift, scale3, geo::echo_everything,
      geo::make_sample, geo::check_sample, user_age, get_user, ns::twice, divide, attach, nap,
      naps_running, naps_cancelled, deadline_ms, trace_of, metadata_of, guarded_echo, guarded_count,
      count_to, upload, chat, fails_after, blobs, endless, endless_yields, endless_ends>();
}

}  // namespace

int main(int argc, char** argv) {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  cfg.reflection = true;  // for `corvid list` / `describe` / `call` (python/corvid)
  bool tls = false;
  bool mtls = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--schema") {
      std::fputs(schema().c_str(), stdout);
      return 0;
    }
    if (a == "--tls") {
      tls = true;
    } else if (a == "--mtls") {
      tls = mtls = true;
    } else if (a == "--unix" && i + 1 < argc) {
      cfg.address = std::string("unix:") + argv[++i];
    } else if (a == "--max-frame" && i + 1 < argc) {
      cfg.max_frame_size = static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--max-streams" && i + 1 < argc) {
      cfg.max_streams_per_connection = std::strtoul(argv[++i], nullptr, 10);
    } else if (a == "--max-metadata-entries" && i + 1 < argc) {
      cfg.max_metadata_entries = std::strtoul(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr,
                   "usage: python_peer_server [--tls] [--mtls] [--unix PATH] [--max-frame N] "
                   "[--max-streams N] [--max-metadata-entries N]\n");
      return 2;
    }
  }
  corvid::rpc_server server(cfg);
  register_all(server);
  server.add_interceptor(guard);
  std::optional<corvid::test::test_certs> certs;
  if (tls) {
    certs.emplace();
    corvid::tls_config t{.certificate_chain_file = certs->server_cert,
                         .private_key_file = certs->server_key};
    if (mtls) {
      t.ca_file = certs->ca;
      t.require_client_certificate = true;
    }
    if (auto e = server.init_tls(std::move(t))) {
      std::fprintf(stderr, "init_tls: %s\n", e.message().c_str());
      return 1;
    }
    std::printf("certs %s %s %s\n", certs->ca.c_str(), certs->client_cert.c_str(),
                certs->client_key.c_str());
  }
  if (auto e = server.async_start()) {
    std::fprintf(stderr, "start: %s\n", e.message().c_str());
    return 1;
  }
  std::printf("port %u\n", server.port());
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}
