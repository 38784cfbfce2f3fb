#pragma once
// CORVID_API marks what libcorvid.so exports: the classes and functions declared under
// include/corvid whose code lives in the library. The library is compiled with
// -fvisibility=hidden, so everything else (src/) stays private to it, cannot clash with a
// program's own symbols, and costs nothing at load time. In the static library the mark
// changes nothing.
#define CORVID_API __attribute__((visibility("default")))
