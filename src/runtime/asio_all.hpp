#pragma once
// Every part of asio the library's sources use, with default visibility, for the reason
// corvid/detail/asio.hpp gives (which holds the parts the public headers need).
#include "asio_all.hpp"
#pragma GCC visibility push(default)
#include <asio/basic_socket_acceptor.hpp>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/connect.hpp>
#include <asio/execution_context.hpp>
#include <asio/generic/stream_protocol.hpp>
#include <asio/ip/address_v4.hpp>
#include <asio/ip/address_v6.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#pragma GCC visibility pop
