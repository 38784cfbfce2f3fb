// What <corvid/corvid.hpp> brings into a user's translation unit: no asio sockets, resolvers
// or timers (the client connection and the sleep timers live in src/), which cost every user
// file compile time. Checked through asio's include guards, at compile time.
#include <gtest/gtest.h>

#include <corvid/corvid.hpp>

#if defined(ASIO_BASIC_SOCKET_HPP) || defined(ASIO_BASIC_STREAM_SOCKET_HPP) || \
    defined(ASIO_IP_TCP_HPP) || defined(ASIO_GENERIC_STREAM_PROTOCOL_HPP)
#error "a public corvid header includes an asio socket"
#endif
#if defined(ASIO_IP_BASIC_RESOLVER_HPP)
#error "a public corvid header includes asio's resolver"
#endif
#if defined(ASIO_STEADY_TIMER_HPP) || defined(ASIO_BASIC_WAITABLE_TIMER_HPP)
#error "a public corvid header includes an asio timer"
#endif

TEST(public_headers, include_no_asio_socket_resolver_or_timer) { SUCCEED(); }
