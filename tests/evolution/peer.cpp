// A build of the inventory service (inventory.hpp) at one schema version, as server or client:
//   schema_peer serve                       listens on an ephemeral port until SIGTERM
//   schema_peer call <host:port> <version>  calls a server of that version and checks what
//                                           this version must see; exits 0 when it all holds
//   schema_peer describe                    prints this version's describe_schema
// tests/evolution/CMakeLists.txt builds it once per version and runs every pairing.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <string>

#include <corvid/corvid.hpp>
#include <corvid/schema/describe_schema.hpp>

#include "inventory.hpp"

namespace inventory {

std::vector<item> find(query q) {
  std::vector<item> out;
  for (std::uint32_t sku = 1; sku <= 2; ++sku) {
#if CORVID_SCHEMA_VERSION >= 2
    // limit is 10 (its default) when the caller's query has no such field.
    out.push_back({sku, q.prefix + "-" + std::to_string(q.limit), 40 + sku, "from v2"});
#else
    out.push_back({sku, q.prefix + "-v1"});
#endif
  }
  return out;
}

#if CORVID_SCHEMA_VERSION >= 3
std::uint64_t price(std::uint64_t sku) { return sku * 100; }
#else
std::uint32_t price(std::uint32_t sku) { return sku * 100; }
#endif

}  // namespace inventory

namespace {

constexpr int version = CORVID_SCHEMA_VERSION;
int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "v%d client: FAILED: %s\n", version, what.c_str());
  }
}

int serve() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  corvid::rpc_server server(1, 0);
  server.register_handler<inventory::find, inventory::price>();
  if (auto ec = server.async_start()) {
    std::fprintf(stderr, "schema_peer: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening on %u\n", server.port());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop, &signal);
  server.stop();
  return 0;
}

corvid::task<void> check_find(corvid::rpc_client& client, int server_version) {
  inventory::query q{"p"};
#if CORVID_SCHEMA_VERSION >= 2
  q.limit = 3;
#endif
  auto r = co_await client.call<inventory::find>(q);
  if (!r) {
    expect(false, "find: " + r.error().message());
    co_return;
  }
  expect(r->size() == 2, "find returns 2 items");
  if (r->size() != 2) co_return;
  const inventory::item& it = (*r)[1];
  expect(it.sku == 2, "sku");
  // The server reads the caller's limit, or its default when the caller's query has none.
  const std::string name = server_version == 1 ? "p-v1" : version >= 2 ? "p-3" : "p-10";
  expect(it.name == name, "name is " + name + ", got " + it.name);
#if CORVID_SCHEMA_VERSION >= 2
  if (server_version >= 2) {
    expect(it.stock == 42 && it.note == "from v2", "a v2 server's stock and note");
  } else {  // fields a v1 server does not send take their defaults
    expect(it.stock == 7 && it.note == "v2 default", "defaults for a v1 server's item");
  }
#endif
}

corvid::task<void> check_price(corvid::rpc_client& client, int server_version) {
  auto r = co_await client.call<inventory::price>(3);
  const bool breaking = (version >= 3) != (server_version >= 3);
  if (!breaking) {
    expect(r && *r == 300, "price(3) == 300");
    co_return;
  }
  expect(!r, "a changed parameter list must fail");
  if (r) co_return;
  expect(r.error().code() == corvid::rpc_errc::signature_mismatch,
         "signature_mismatch, got " + std::string(corvid::to_string(r.error().code())));
  const std::string m = r.error().message();
  expect(m.find("inventory::price") != std::string::npos, "the message names the function: " + m);
  char mine[16];
  std::snprintf(mine, sizeof mine, "0x%04x",
                static_cast<unsigned>(corvid::protocol::signature_v<inventory::price>));
  expect(m.find(std::string("caller's signature fingerprint is ") + mine) != std::string::npos,
         "the message names the caller's fingerprint " + std::string(mine) + ": " + m);
  std::printf("price: %s\n", m.c_str());
}

corvid::task<int> call(std::string endpoint, int server_version) {
  corvid::rpc_client client;
  if (auto ec = co_await client.connect(endpoint)) {
    std::fprintf(stderr, "connect: %s\n", ec.message().c_str());
    co_return 1;
  }
  co_await check_find(client, server_version);
  co_await check_price(client, server_version);
  // The connection is still usable after a mismatch.
  co_await check_find(client, server_version);
  std::printf("v%d client -> v%d server: %d failed\n", version, server_version, failures);
  co_return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve") return serve();
  if (mode == "describe") {
    std::fputs(corvid::describe_schema<inventory::find, inventory::price>().c_str(), stdout);
    return 0;
  }
  if (mode == "call" && argc == 4) return corvid::sync_wait(call(argv[2], std::atoi(argv[3])));
  std::fprintf(stderr, "usage: schema_peer serve | call <host:port> <version> | describe\n");
  return 2;
}
