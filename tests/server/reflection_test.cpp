// server_config::reflection: the built-in corvid::reflection_service::describe answers
// describe_schema<F...>() of the handlers the user registered, and is an ordinary call.
#include <corvid/schema/describe_schema.hpp>
#include <corvid/server/reflection.hpp>

#include "server_test_support.hpp"

namespace corvid_server_test {
namespace {

constexpr auto describe = &corvid::reflection_service::describe;

struct point {
  std::int32_t x = 0;
  std::int32_t y = 0;
};
struct sample {
  using codec_layout = corvid::codec::frozen;
  std::uint16_t id = 0;
  std::vector<point> path;
};

int add(int a, int b) { return a + b; }
corvid::task<std::string> greet(corvid::request_context&, std::string who) {
  co_return "hi " + who;
}
corvid::stream<point> walk(point from, std::uint32_t steps) {
  for (std::uint32_t i = 0; i < steps; ++i) co_yield point{from.x + 1, from.y};
}
corvid::task<std::size_t> upload(corvid::stream_reader<sample> in) {
  std::size_t n = 0;
  while (co_await in.next()) ++n;
  co_return n;
}
std::uint64_t query(std::string q) { return q.size(); }  // registered as blocking

struct calc {
  double scale(double v) const { return v * factor; }
  std::optional<sample> find(std::uint16_t id) { return sample{id, {}}; }
  double factor = 2;
};

std::string expected_schema() {
  return corvid::describe_schema<add, greet, walk, upload, query, &calc::scale, &calc::find>();
}

std::unique_ptr<corvid::rpc_server> started(corvid::server_config cfg, calc& object) {
  auto s = std::make_unique<corvid::rpc_server>(std::move(cfg));
  s->register_handler<add, greet, walk, upload>();
  s->register_handler<&calc::scale>(&object);
  s->register_blocking_handler<query>();
  s->register_blocking_handler<&calc::find>(&object);
  if (auto ec = s->async_start()) throw std::runtime_error(ec.message());
  return s;
}

corvid::server_config with_reflection() {
  auto cfg = loopback_config();
  cfg.reflection = true;
  return cfg;
}

TEST(reflection, OffByDefaultTheMethodIsUnknown) {
  calc object;
  auto s = started(loopback_config(), object);
  corvid::rpc_client c;
  connect(c, *s);
  const auto r = call<describe>(c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::function_not_found) << r.error().message();
  EXPECT_EQ(call<add>(c, 1, 2).value_or(0), 3);
}

TEST(reflection, AnswersDescribeSchemaOfTheUsersHandlers) {
  static_assert(corvid::protocol::function_name<describe>() ==
                "corvid::reflection_service::describe");
  calc object;
  auto s = started(with_reflection(), object);
  corvid::rpc_client c;
  connect(c, *s);
  const auto r = call<describe>(c);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(*r, expected_schema());
  // The built-in methods are served but not listed.
  EXPECT_EQ(r->find("corvid::health_service"), std::string::npos);
  EXPECT_EQ(r->find("corvid::reflection_service"), std::string::npos);
  EXPECT_TRUE(call<&corvid::health_service::check>(c).has_value());
  // Registration is closed once started, so the list cannot change under a caller.
  EXPECT_THROW(s->register_handler<query>(), std::logic_error);
  EXPECT_EQ(call<describe>(c).value_or(""), *r);
}

TEST(reflection, IsAnOrdinaryCallForLimitsAndMetrics) {
  calc object;
  auto cfg = with_reflection();
  cfg.max_frame_size = 256;  // the schema is over 1 KiB
  auto s = started(cfg, object);
  corvid::rpc_client c;
  connect(c, *s);
  const auto r = call<describe>(c);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), corvid::rpc_errc::message_too_large) << r.error().message();
  EXPECT_NE(r.error().message().find("exceeds max_frame_size 256"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(call<add>(c, 2, 3).value_or(0), 5);  // that call failed alone
  const std::string counted =
      "corvid_server_calls_total{method=\"corvid::reflection_service::describe\"} 1";
  EXPECT_TRUE(eventually([&] { return s->metrics_text().find(counted) != std::string::npos; }))
      << s->metrics_text();
}

TEST(reflection, TakesAMethodLimitLikeAnyHandler) {
  corvid::rpc_server s(with_reflection());
  s.register_handler<add>();
  EXPECT_NO_THROW(s.set_method_limit<describe>(1));
  EXPECT_EQ(s.method_refusals<describe>(), 0u);
}

}  // namespace
}  // namespace corvid_server_test
