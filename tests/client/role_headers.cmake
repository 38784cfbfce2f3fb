# What a role header pulls into a user's translation unit, by the compiler's own account (-M):
# corvid/client.hpp none of the server's headers, corvid/server.hpp none of the client's
# connection, pool or balancer headers, and each at most a pinned number of corvid headers.
#   cmake -DCXX=<compiler> -DINCLUDE_DIRS=<dir;...> -DROLE=client|server
#         [-DALSO=<header>] -P role_headers.cmake
# INCLUDE_DIRS: corvid's include/ first, then asio's and Boost's. ALSO: a header the test
# translation unit includes too (the self-test adds a server header to the client's, and the
# check must fail).
#
# The limits are what the headers pull today; raise one only on purpose (a header that a
# role's programs need). Most of the client's count is fixed by what its templates instantiate
# in the user's file: the codec (14 headers), the client's own, and the send queue a call
# encodes into (detail/outbound_queue.hpp with byte_buffer.hpp and buffer_pool.hpp).
# The balancer's call policies add three: method_config.hpp, and the hedged call's templates
# and shared state (lb_hedged_call.hpp, hedge_race.hpp), which its call<F>() instantiates.
# Call metadata adds two: call_metadata.hpp (call_options carries it) and
# client/client_interceptor.hpp (client_config's interceptors run in every call<F>()).
# Compression adds one: compression.hpp (client_config and server_config carry its settings);
# on the server's side, server_config now names client_metrics by a declaration instead.
cmake_minimum_required(VERSION 3.25)

set(client_forbidden
    "^corvid/server/"
    "^corvid/detail/(handler_invoker|stream_invoker|blocking_invoker|blocking_job)\\.hpp$"
    "^corvid/detail/(reply_channel|reply_sink|call_budget|stream_port|stream_link)\\.hpp$")
set(client_max 60)
# Nor asio, which is about a fifth of a client file's preprocessed lines when pulled (io_context
# and its services): the reactors stay behind rpc_client's out-of-line functions, and the send
# queue a call encodes into names no asio type (outbound_queue::gather).
set(client_forbidden_external "/asio(/.*)?\\.hpp$")
set(server_forbidden
    "^corvid/client/(rpc_client|client_pool|pooled_call|load_balancer)\\.hpp$"
    "^corvid/client/(client_config|pool_config|lb_config|async_reply|call_state|stream_call)\\.hpp$"
    "^corvid/stream/stream_writer\\.hpp$" "^corvid/detail/request_encoder\\.hpp$")
# The server's 70: the caller's identity, call metadata, interceptors and the authorization
# policy (peer_identity, call_metadata, interceptor, authorization), which a server program
# uses to decide who may call what.
set(server_max 70)

if(NOT ROLE MATCHES "^(client|server)$" OR NOT CXX OR NOT INCLUDE_DIRS)
  message(FATAL_ERROR "usage: cmake -DCXX=... -DINCLUDE_DIRS=... -DROLE=client|server "
                      "[-DALSO=header] -P role_headers.cmake")
endif()
list(GET INCLUDE_DIRS 0 corvid_include)
cmake_path(NORMAL_PATH corvid_include)
string(REGEX REPLACE "/$" "" corvid_include "${corvid_include}")
set(header corvid/${ROLE}.hpp)

set(tu_text "#include <${header}>\n")
if(ALSO)
  string(APPEND tu_text "#include <${ALSO}>\n")
endif()
# One file per check: ctest -j may run them at once.
string(MAKE_C_IDENTIFIER "${ROLE}_${ALSO}" tu_name)
set(tu ${CMAKE_CURRENT_BINARY_DIR}/role_headers_${tu_name}.cpp)
file(WRITE ${tu} "${tu_text}")
set(flags -std=c++20)
foreach(dir IN LISTS INCLUDE_DIRS)
  list(APPEND flags -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${flags} -M ${tu} OUTPUT_VARIABLE deps ERROR_VARIABLE errors
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CXX} -M failed on ${header}:\n${errors}")
endif()

# "target: dep dep \" lines -> one list of the corvid headers, relative to include/.
string(REPLACE "\\\n" " " deps "${deps}")
string(REGEX REPLACE "[ \t\r\n]+" ";" deps "${deps}")
set(pulled "")
foreach(dep IN LISTS deps)
  cmake_path(NORMAL_PATH dep)
  string(FIND "${dep}" "${corvid_include}/corvid/" at)
  if(at EQUAL 0)
    cmake_path(RELATIVE_PATH dep BASE_DIRECTORY ${corvid_include} OUTPUT_VARIABLE rel)
    if(NOT rel STREQUAL header)
      list(APPEND pulled ${rel})
    endif()
  endif()
endforeach()
foreach(dep IN LISTS deps)
  foreach(pattern IN LISTS ${ROLE}_forbidden_external)
    if(dep MATCHES "${pattern}")
      string(APPEND failures_external "  ${header} pulls ${dep}, which a ${ROLE} program "
                                      "should not compile\n")
      break()
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES pulled)
list(SORT pulled)
list(LENGTH pulled count)

set(failures "${failures_external}")
foreach(rel IN LISTS pulled)
  foreach(pattern IN LISTS ${ROLE}_forbidden)
    if(rel MATCHES "${pattern}")
      string(APPEND failures "  ${header} pulls ${rel}, which is not for a ${ROLE} program\n")
    endif()
  endforeach()
endforeach()
if(count GREATER ${ROLE}_max)
  string(APPEND failures
         "  ${header} pulls ${count} corvid headers, more than its limit of ${${ROLE}_max}\n")
endif()

list(JOIN pulled "\n    " listing)
if(failures)
  message(FATAL_ERROR "role header check FAILED:\n${failures}  what it pulls:\n    ${listing}")
endif()
message(STATUS "${header} pulls ${count} corvid headers (limit ${${ROLE}_max}), none of "
               "the other role's:\n    ${listing}")
