#pragma once
// corvid: C++20 coroutine RPC. One include for everything a user needs: the client's part
// (corvid/client.hpp) and the server's (corvid/server.hpp). A program that is only one of the
// two compiles less with its own.
#include "corvid/client.hpp"
#include "corvid/server.hpp"
