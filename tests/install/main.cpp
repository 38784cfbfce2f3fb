// Install check: an echo/add round trip through an installed corvid. Exits 0 only on success.
//   app            the round trip in one process; prints the library's version
//   app serve      serves echo and add with reflection on, prints "listening on PORT" and runs
//                  until stdin closes (for the `corvid` command's check)
#include <cstdint>
#include <iostream>
#include <string>
#include <string_view>

#include <corvid/corvid.hpp>

std::string_view echo(std::string_view s) { return s; }
corvid::task<int> add(int a, int b) { co_return a + b; }

corvid::task<int> run(std::uint16_t port) {
  corvid::rpc_client client;
  if (auto ec = co_await client.connect("127.0.0.1:" + std::to_string(port))) {
    std::cerr << "connect failed: " << ec.message() << '\n';
    co_return 1;
  }
  auto r = co_await client.call<echo>("hello");
  if (!r || *r != "hello") {
    std::cerr << "echo failed\n";
    co_return 2;
  }
  auto s = co_await client.call<add>(1, 2);
  if (!s || *s != 3) {
    std::cerr << "add failed\n";
    co_return 3;
  }
  co_return 0;
}

int serve() {
  corvid::server_config config;
  config.address = "127.0.0.1";
  config.io_threads = 1;
  config.reflection = true;
  corvid::rpc_server server(config);
  server.register_handler<echo, add>();
  if (auto ec = server.async_start()) {
    std::cerr << "async_start failed: " << ec.message() << '\n';
    return 4;
  }
  std::cout << "listening on " << server.port() << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  server.stop();
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "serve") return serve();
  std::cout << "corvid " << corvid::version() << '\n';
  corvid::rpc_server server(/*io threads*/ 1, /*port*/ 0);
  server.register_handler<echo, add>();
  if (auto ec = server.async_start()) {
    std::cerr << "async_start failed: " << ec.message() << '\n';
    return 4;
  }
  int rc = corvid::sync_wait(run(server.port()));
  server.stop();
  std::cout << (rc == 0 ? "install check: OK" : "install check: FAILED") << '\n';
  return rc;
}
