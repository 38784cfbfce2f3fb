#pragma once
// asio's TLS layer with default visibility, for the reason src/runtime/asio_all.hpp gives.
#include "../runtime/asio_all.hpp"
#pragma GCC visibility push(default)
#include <asio/ssl/context.hpp>
#include <asio/ssl/error.hpp>
#pragma GCC visibility pop
