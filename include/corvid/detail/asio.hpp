#pragma once
// The parts of asio that corvid's public headers use, included with default visibility. The
// library is built with -fvisibility=hidden; asio is header-only, so without this its
// templates' statics (the per-thread call stack that tells dispatch() it runs on its reactor,
// the error categories that error_code comparisons rely on) would be hidden copies inside
// libcorvid.so, different from the ones a program that also uses asio gets. The library's
// sources include the rest of asio through src/runtime/asio_all.hpp; scripts/check-layers
// rejects any other #include <asio/...> under src/ and include/corvid. No sockets or timers
// here: they cost every user's file compile time (tests/client/public_headers_test.cpp).
#pragma GCC visibility push(default)
#include <asio/buffer.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#pragma GCC visibility pop
