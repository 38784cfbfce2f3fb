// The other process of the "killed mid-stream" tests (stream_ending_test.cpp), which kill it
// with SIGKILL:
//   stream_peer serve          serves the stream test handlers on 127.0.0.1 and prints "port N"
//   stream_peer upload PORT    writes to watched_upload on 127.0.0.1:PORT without end, and
//                              prints "writing" once its first item is written
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>

#include <corvid/corvid.hpp>

#include "stream_handlers.hpp"

namespace {

int serve() {
  corvid::server_config cfg;
  cfg.address = "127.0.0.1";
  cfg.io_threads = 1;
  corvid::rpc_server server(cfg);
  corvid_test::streams::register_all(server);
  if (auto e = server.async_start()) {
    std::fprintf(stderr, "start: %s\n", e.message().c_str());
    return 1;
  }
  std::printf("port %u\n", server.port());
  std::fflush(stdout);
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

corvid::task<int> upload_forever(corvid::rpc_client& client, std::string endpoint) {
  if (auto e = co_await client.connect(endpoint)) {
    std::fprintf(stderr, "connect: %s\n", e.message().c_str());
    co_return 1;
  }
  auto up = co_await client.open_stream<corvid_test::streams::watched_upload>();
  if (!up) {
    std::fprintf(stderr, "open_stream: %s\n", up.error().message().c_str());
    co_return 1;
  }
  const std::string chunk(4096, 'u');
  if (auto e = co_await up->write(chunk)) co_return 1;
  std::printf("writing\n");
  std::fflush(stdout);
  for (;;) {
    if (auto e = co_await up->write(chunk)) {
      std::fprintf(stderr, "write: %s\n", e.message().c_str());
      co_return 1;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc >= 2 ? argv[1] : "";
  if (mode == "serve") return serve();
  if (mode == "upload" && argc >= 3) {
    corvid::rpc_client client;
    return corvid::sync_wait(upload_forever(client, std::string("127.0.0.1:") + argv[2]));
  }
  std::fprintf(stderr, "usage: stream_peer serve | stream_peer upload PORT\n");
  return 2;
}
