#pragma once
// corvid::codec: the compact little-endian binary encoding of RPC arguments and results.
// Wire format: docs/codec.md.
//
//   std::string buf;
//   codec::string_sink sink(buf);
//   codec::encode(sink, point{1, 2.5, "a", {7}});
//   point p;
//   if (auto ec = codec::decode(buf, p); ec != codec::decode_errc::ok) ... to_string(ec) ...
#include "corvid/codec/bulk.hpp"
#include "corvid/codec/concepts.hpp"
#include "corvid/codec/decode.hpp"
#include "corvid/codec/decode_budget.hpp"
#include "corvid/codec/encode.hpp"
#include "corvid/codec/enum_values.hpp"
#include "corvid/codec/errc.hpp"
#include "corvid/codec/layout.hpp"
#include "corvid/codec/reader.hpp"
#include "corvid/codec/sink.hpp"
#include "corvid/codec/size.hpp"
#include "corvid/codec/traits.hpp"
#include "corvid/codec/varint.hpp"
