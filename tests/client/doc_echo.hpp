#pragma once
// docs/protocol.md's example function, global because its name is part of the wire format:
// its id hashes "echo".
#include <string>

inline std::string echo(std::string s) { return s; }
