#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/ (committed; rerun after changing a
harness's input format): frames from docs/protocol.md's hex vectors, values encoded as
docs/codec.md describes, and a few malformed inputs. The fuzzers only read these seeds;
scripts/fuzz runs on a copy of them.
    fuzz/make_corpus.py
"""
import pathlib
import re
import shutil
import struct

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"


# --- docs/protocol.md vectors ---------------------------------------------------------
def doc_vectors():
    text = (ROOT / "docs" / "protocol.md").read_text()
    vectors = {}
    for m in re.finditer(r"```hex (\w+)\n(.*?)```", text, re.S):
        data = bytearray()
        for line in m.group(2).splitlines():
            hexpart = line.split("  ")[0]
            data += bytes.fromhex(hexpart)
        vectors[m.group(1)] = bytes(data)
    return vectors


# --- codec (docs/codec.md) ------------------------------------------------------------
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def s(text):  # std::string / string_view
    b = text.encode() if isinstance(text, str) else text
    return varint(len(b)) + b


def vec(items):  # items already encoded
    return varint(len(items)) + b"".join(items)


def u8(v): return struct.pack("<B", v)
def u16(v): return struct.pack("<H", v)
def i16(v): return struct.pack("<h", v)
def u32(v): return struct.pack("<I", v)
def i32(v): return struct.pack("<i", v)
def i64(v): return struct.pack("<q", v)
def u64(v): return struct.pack("<Q", v)
def f32(v): return struct.pack("<f", v)
def f64(v): return struct.pack("<d", v)
def boolean(v): return b"\x01" if v else b"\x00"
def none(): return b"\x00"
def some(x): return b"\x01" + x


def evolvable(fields):  # an evolvable struct: its byte length, then its fields
    return varint(len(fields)) + fields


def leaf_fields(id_, name, values, note, color):
    return (u32(id_) + s(name) + vec([i16(v) for v in values]) +
            (some(s(note)) if note is not None else none()) + u8(color))


def leaf(*args): return evolvable(leaf_fields(*args))


def leaf_v1(id_, name, values):  # leaf as an older build wrote it: no note, no color
    return evolvable(u32(id_) + s(name) + vec([i16(v) for v in values]))


def padded(tag, value): return u8(tag) + u64(value)  # frozen: no length


def message_fields():
    head = leaf(7, "head", [1, -2], "n", 1)
    items = vec([leaf(1, "a", [], None, 2), leaf(2, "", [32767], "x", 1)])
    choice = varint(3) + leaf(9, "c", [3], None, 2)
    tags = some(vec([s("t1"), s("")]))
    flags = boolean(True) + boolean(False) + vec([b"\x01", b"\x00", b"\x01"])
    pixels = vec([b"\x01\x02\x03", b"\xff\x00\x7f"])
    pair = padded(1, 2) + padded(255, 2**64 - 1)
    return head + items + choice + tags + flags + pixels + pair


def message(): return evolvable(message_fields())


def message_v1():  # an older build's message: three fields, older leaves
    return evolvable(leaf_v1(7, "head", [1, -2]) + vec([leaf_v1(1, "a", [])]) +
                  varint(3) + leaf_v1(9, "c", [3]))


def message_v3():  # a newer build's: unknown trailing bytes in the message and its head
    head = evolvable(leaf_fields(7, "head", [1, -2], "n", 1) + s("new field"))
    rest = message_fields()[len(leaf(7, "head", [1, -2], "n", 1)):]
    return evolvable(head + rest + u64(99))


def registry():
    by_name = vec([s("a") + leaf(1, "a", [1], None, 1), s("b") + leaf(2, "b", [], "nb", 2)])
    ids = vec([u16(1), u16(300)])
    shards = vec([vec([i32(-1) + some(s("m")), i32(5) + none()]), vec([])])
    extra = some(varint(1) + vec([u64(1), u64(2**40)]))
    return evolvable(by_name + ids + shards + extra)


def sample():
    return evolvable(f32(1.5) + f64(-2.5) + vec([f64(0.0), bytes.fromhex("010000000000f87f")]) +
                  some(varint(1) + s("label")))


def codec_seeds():
    seeds = {
        "message": (0, message()),
        "message_variant_string": (0, evolvable(message_fields().replace(
            varint(3) + leaf(9, "c", [3], None, 2), varint(2) + s("str")))),
        "message_older": (0, message_v1()),
        "message_newer": (0, message_v3()),
        "message_empty_body": (0, evolvable(b"")),
        "registry": (1, registry()),
        "registry_unsorted_keys": (1, evolvable(vec([s("b") + leaf(2, "b", [], None, 1),
                                                  s("a") + leaf(1, "a", [], None, 1)]) +
                                          vec([u16(9), u16(3)]) + vec([]) + none())),
        "string_view": (2, s("hello")),
        "string_view_300": (2, s("a" * 300)),
        "vector_string": (3, vec([s("a"), s("")])),
        "map_int_bytes": (4, vec([i32(1) + vec([b"\x01", b"\x02"]), i32(-7) + vec([])])),
        "optional_variant_none": (5, none()),
        "optional_variant_int": (5, some(varint(1) + i64(-5))),
        "optional_variant_bools": (5, some(varint(3) + vec([b"\x01", b"\x00"]))),
        "tuple": (6, u8(7) + s("ab") + boolean(True) + some(i32(3))),
        "array_u16": (7, u16(1) + u16(2) + u16(3) + u16(65535)),
        "array_optional_string": (8, some(s("x")) + none() + some(s(""))),
        "sample_floats": (9, sample()),
        "pair_views": (10, s("key") + s(b"\x00\xff\x10")),
        "unordered_map": (11, vec([s("x") + i32(1), s("y") + i32(2)])),
        "vector_variant": (12, vec([varint(0) + boolean(True), varint(1) + u8(2),
                                    varint(2) + s("sv")])),
        "vector_leaf": (13, vec([leaf(3, "l", [4, 5], "note", 2)])),
        "tuple_bulk": (14, vec([b"\x01\x02\x03"]) + vec([padded(1, 5)]) + vec([s("a"), s("b")])),
        "nested_vectors": (15, vec([vec([s("a") + boolean(True)]), vec([])])),
        # Malformed: each must be rejected (docs/codec.md, "Decoding untrusted input").
        "bad_nonminimal_varint": (2, b"\x80\x00"),
        "bad_varint_overflow": (3, b"\xff\xff\xff\xff\x1f"),
        "bad_count_too_big": (3, b"\xff\xff\xff\xff\x0f" + b"\x00" * 5),
        "bad_bool": (6, u8(7) + s("ab") + b"\x02" + none()),
        "bad_variant_index": (5, some(varint(4))),
        "bad_duplicate_key": (4, vec([i32(1) + vec([]), i32(1) + vec([])])),
        "bad_truncated": (0, message()[:-3]),
        "bad_struct_length": (13, vec([b"\x7f" + leaf_fields(3, "l", [], None, 1)])),
        "bad_cut_field": (13, vec([evolvable(u32(3) + b"\x05ab")])),
        # Under a decode_budget of (selector >> 4) * 256 bytes: small on the wire, big in memory
        # (64 empty strings are 2 KiB of std::string), or fitting only just.
        "budget_empty_strings": (3 | 0x10, vec([s("")] * 64)),
        "budget_nested_vectors": (15 | 0x30, vec([vec([s("a" * 40) + boolean(True)])] * 8)),
        "budget_registry": (1 | 0x40, registry()),
        "budget_unordered_map": (11 | 0x20, vec([s("k%d" % i) + i32(i) for i in range(9)])),
        "budget_message": (0 | 0xF0, message()),
    }
    return {name: bytes([sel]) + data for name, (sel, data) in seeds.items()}


# --- frames -------------------------------------------------------------------------
def fnv1a(name):
    h = 0x811C9DC5
    for c in name.encode():
        h = ((h ^ c) * 0x01000193) & 0xFFFFFFFF
    return h


FIRST_ID = 1 << 32


def frame(type_, request_id, function_id, body=b"", attachment=b"", status=0):
    return (b"CV" + bytes([2, type_, 0, status]) + b"\x00\x00" +
            struct.pack("<QIIII", request_id, function_id, len(body), len(attachment), 0) +
            body + attachment)


def request(name, body=b"", attachment=b"", request_id=FIRST_ID):
    return frame(1, request_id, fnv1a(name), body, attachment)


def stream_frame(type_, request_id, body=b"", credit=0):  # 7 item, 8 end, 9 credit
    return (b"CV" + bytes([2, type_, 0, 0]) + b"\x00\x00" +
            struct.pack("<QIIII", request_id, 0, len(body), 0, credit) + body)


def response(body=b"", attachment=b"", request_id=FIRST_ID, status=0):
    return frame(2, request_id, 0, body, attachment, status)


def flagged(frame_bytes, flags):
    """A frame with these flags, as version 3 when one is must-understand."""
    return (frame_bytes[:2] + bytes([3 if flags & 0x0F else 2, frame_bytes[3], flags]) +
            frame_bytes[5:])


def zstd_raw(data):
    """One zstd frame (RFC 8878) holding `data` as a raw block: single segment, its content
    size stated in 4 bytes. Valid for any decoder, and needs no zstd library here."""
    return (b"\x28\xb5\x2f\xfd" + bytes([0xA0]) + u32(len(data)) +
            (1 | (len(data) << 3)).to_bytes(3, "little") + data)


def zstd_rle(byte, n):
    """A zstd frame of `n` copies of `byte` (an RLE block, n <= 128 KiB): a few bytes that
    inflate to n."""
    return (b"\x28\xb5\x2f\xfd" + bytes([0xA0]) + u32(n) +
            (1 | (1 << 1) | (n << 3)).to_bytes(3, "little") + bytes([byte]))


def compressed(body, attachment=b"", declared=None, zframe=None):
    """A compressed payload (docs/protocol.md, "Compression"): the declared lengths, then
    the zstd frame."""
    body_len, att_len = declared if declared is not None else (len(body), len(attachment))
    return u32(body_len) + u32(att_len) + (zframe if zframe is not None else
                                           zstd_raw(body + attachment))


def frame_header_seeds(v):
    seeds = {name: data[:32] for name, data in v.items()}
    seeds["limit_boundary"] = v["echo_request"][:32] + u32(6)  # bytes 32..35: one more limit
    seeds["lengths_wrap"] = v["echo_request"][:20] + b"\xff" * 8 + b"\x00" * 4
    seeds["bad_magic_http"] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\r\n\r\n"
    seeds["bad_version"] = b"CV\x01" + v["echo_request"][3:32]
    seeds["bad_type"] = b"CV\x02\x03" + v["echo_request"][4:32]
    seeds["reserved_set"] = v["echo_request"][:6] + b"\xff\xff" + v["echo_request"][8:28] + b"\xff" * 4
    return seeds


def server_stream_seeds(v):
    # Byte 0: options (bit 0 split, bit 1 pause, bit 2 close without reading, bit 3 reset,
    # bits 4-5 ms before that close), byte 1: split point; then the stream.
    whole, split = b"\x00\x00", b"\x03\x80"
    pipelined = (v["echo_request"] + v["add_request"] + v["store_request"] +
                 request("ns::calc::div", i32(1) + i32(0), request_id=FIRST_ID + 4))
    seeds = {
        "echo_request": whole + v["echo_request"],
        "store_request": whole + v["store_request"],
        "store_owned_attachment": whole + request("store", s("k12"), b"\x01\x02\x03"),
        "add_request_split": split + v["add_request"],
        "too_large_request": whole + v["too_large_request"],
        "pipelined": whole + pipelined,
        "pipelined_split": split + pipelined,
        "div_by_zero": whole + request("ns::calc::div", i32(1) + i32(0)),
        "coroutine_split": whole + request("split", s("a,b,,c") + u8(1)),
        "repeat": whole + request("repeat", s("ab") + u8(3)),
        "repeat_over_limit": whole + request("repeat", s("z" * 200) + u8(50)) +
        request("echo", s("after"), request_id=FIRST_ID + 1),
        "coroutine_throws": whole + request("throws_later", u8(2)),
        "coroutines_then_bad_magic": whole + request("split", s("x,y") + u8(3)) +
        request("throws_later", u8(1), request_id=FIRST_ID + 1) + b"GET / HTTP/1.1\r\n\r\n" + b"\x00" * 14,
        "coroutines_then_vanish": b"\x04\x00" + request("split", s("a,b") + u8(3)) +
        request("throws_later", u8(3), request_id=FIRST_ID + 1),
        "coroutines_then_reset": b"\x1c\x00" + request("split", s("a,b") + u8(3)) +
        request("echo", s("e" * 3000), request_id=FIRST_ID + 1),
        "unknown_function": whole + request("ns::calc::mod", i32(1) + i32(2)),
        "bad_arguments": whole + request("echo", b""),
        "http": whole + b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
        "response_frame": whole + v["echo_response"],
        "partial_body": whole + v["echo_request"][:35],
        "partial_header": whole + v["echo_request"][:20],
        "request_then_too_large": whole + v["echo_request"] + v["too_large_request"],
        # Bigger than the server's first 4 KiB read: partial frames across reads, the read
        # room doubling, the buffer growing for a frame and shrinking back.
        "echo_5k_split": split + request("echo", s("e" * 5000)),
        "pipelined_100_echoes": whole + b"".join(
            request("echo", s("x" * 8), request_id=FIRST_ID + i) for i in range(100)),
        # Issue 11 (hostile peers). Counts a few KiB on the wire claim tens of MiB decoded:
        # 8000 empty optionals of 4097 bytes, 8100 empty strings, 1600 map entries, 8000
        # variants of 4098 bytes.
        "claimed_pages": whole + request("count_pages", varint(8000) + b"\x00" * 8000) +
        request("echo", s("after"), request_id=FIRST_ID + 1),
        "claimed_strings": whole + request("count_strings", varint(8100) + b"\x00" * 8100),
        "claimed_variants": whole + request("count_variants", varint(8000) + b"\x00" * 8000),
        "claimed_map": whole + request(
            "count_map", varint(1600) + b"".join(u32(k) + varint(0) for k in range(1600))),
        # A decode that throws (the key 666 poisons the comparison), then a call that must
        # still be answered on the same connection.
        "decode_throws_sync": whole + request("touchy", varint(2) + evolvable(i32(1)) +
                                              evolvable(i32(666))) +
        request("echo", s("next"), request_id=FIRST_ID + 1),
        "decode_throws_coroutine": whole + request("touchy_co", varint(2) + evolvable(i32(666)) +
                                                   evolvable(i32(1))) +
        request("echo", s("next"), request_id=FIRST_ID + 1),
        # 100 replies of 8000 bytes for 36-byte requests: read late (bit 6), or never.
        "big_replies_late_reader": b"\x40\x00" + b"".join(
            request("big", u32(8000), request_id=FIRST_ID + i) for i in range(100)),
        "big_replies_vanish": b"\x0c\x00" + b"".join(
            request("big", u32(8000), request_id=FIRST_ID + i) for i in range(100)),
        # Cancels for calls still running, one for an id never sent, and a ping after them.
        "cancel_running": whole + b"".join(
            request("nap", u16(40), request_id=FIRST_ID + i) for i in range(3)) +
        frame(3, FIRST_ID, 0) + frame(3, FIRST_ID + 2, 0) + frame(3, 99, 0) + frame(4, 7, 0),
        # Request id 0: rejected, and the connection closes (docs/protocol.md, "Request ids").
        "request_id_zero": whole + request("echo", s("zero"), request_id=0) +
        request("echo", s("never"), request_id=FIRST_ID),
        # The same id twice while the first call still runs, then a cancel for it.
        "duplicate_running_id": whole + request("nap", u16(30)) + request("nap", u16(30)) +
        request("echo", s("x"), request_id=FIRST_ID + 1) + frame(3, FIRST_ID, 0),
        # Streams: ticks(n) yields n % 8 items then ends; relay echoes items until the end.
        "stream_ticks": whole + request("ticks", u8(5)),
        "stream_relay_closed": whole + request("relay") +
        stream_frame(7, FIRST_ID, s("ab")) + stream_frame(7, FIRST_ID, s("cd")) +
        stream_frame(8, FIRST_ID),
        "stream_relay_open": whole + request("relay") + stream_frame(7, FIRST_ID, s("x")) +
        frame(4, 9, 0),
        "stream_interleaved": split + request("ticks", u8(7)) +
        request("relay", request_id=FIRST_ID + 1) + stream_frame(9, FIRST_ID, credit=64) +
        stream_frame(7, FIRST_ID + 1, s("y")) + v["echo_request"][:8] + u64(FIRST_ID + 2) +
        v["echo_request"][16:] + frame(3, FIRST_ID + 1, 0) + stream_frame(7, 99, s("lost")) +
        stream_frame(8, FIRST_ID + 5) + stream_frame(9, FIRST_ID + 7, credit=1 << 31),
        "stream_bad_item": whole + request("relay") + stream_frame(7, FIRST_ID, b"\xff\xff") +
        stream_frame(8, FIRST_ID),
        # Compression: an honest request, one asking for compressed replies (big ones come
        # compressed), lies both ways, a declared size over the limit, a compressed item.
        "compressed_echo": whole + flagged(request("echo", compressed(s("e" * 200))), 0x04) +
        flagged(request("big", u32(6000), request_id=FIRST_ID + 1), 0x10) +
        flagged(request("echo", s("plain"), request_id=FIRST_ID + 2), 0x14),
        "compressed_lies": whole + flagged(request(
            "echo", compressed(b"", declared=(100, 0), zframe=zstd_rle(0x7a, 100000))), 0x04) +
        flagged(request("echo", compressed(s("abc"), declared=(50, 0)),
                        request_id=FIRST_ID + 1), 0x04) +
        flagged(request("echo", compressed(s("x"), declared=(1 << 20, 0)),
                        request_id=FIRST_ID + 2), 0x04) +
        request("echo", s("after"), request_id=FIRST_ID + 3),
        "compressed_item": whole + flagged(request("relay"), 0x10) +
        flagged(stream_frame(7, FIRST_ID, compressed(s("i" * 300))), 0x04) +
        stream_frame(8, FIRST_ID),
    }
    return seeds


def client_reply_seeds(v):
    # Byte 0: options (bit 0 patch ids, bit 1 two calls, bit 2 hold, bit 3 split,
    # bits 4-6 function: 0 echo, 1 add, 2 ping, 3 lookup, 4 list, 5 view, 6 echo+attachment,
    # 7 ping+attachment; bit 7 zero-copy attachment), byte 1: split point, byte 2: how it ends
    # (bit 0 reset, bit 1 client close(), bit 2 client destroyed, bit 3 chained call,
    # bits 4-5 ms before those);
    # then the reply.
    def opts(fn, patch=True, two=False, hold=False, split=False, end=0):
        return bytes([(fn << 4) | patch | (two << 1) | (hold << 2) | (split << 3), 0x80, end])

    record = evolvable(u32(5) + vec([s("f") + vec([b"\x01"])]) + some(varint(1) + s("e")))
    seeds = {
        "echo_response": opts(0) + v["echo_response"],
        "echo_response_split": opts(0, split=True) + v["echo_response"],
        "add_response": opts(1) + v["add_response"],
        "store_response_void": opts(2) + v["store_response"],
        "not_found": opts(1) + v["not_found_response"],
        "handler_error": opts(1) + v["handler_error_response"],
        "bad_request": opts(0) + v["bad_request_response"],
        "too_large": opts(0) + v["too_large_response"],
        "protocol_error_id0": opts(0, patch=False) + v["protocol_error_response"],
        "lookup_record": opts(3) + response(record),
        "list": opts(4) + response(vec([s("a"), s("bc")])),
        "view": opts(5) + response(s("v")),
        "echo_with_attachment": opts(6) + response(s("att"), b"\xde\xad"),
        "ping_with_attachment": opts(7) + response(b"", b"xyz"),
        "two_calls": opts(1, two=True) + response(i32(3)) + response(i32(4)),
        "two_calls_reordered_hold": opts(1, two=True, hold=True) + response(i32(3)) + response(i32(4)),
        "late_id": opts(1, patch=False) + response(i32(3), request_id=FIRST_ID + 99),
        "garbage": opts(1) + b"\x7f" * 64,
        "request_frame": opts(0, patch=False) + v["echo_request"],
        "over_client_limit": opts(0) + response(b"")[:20] + b"\x7f\x7f\x7f\x7f" + b"\x00" * 8,
        "undecodable_result": opts(1) + response(b"x"),
        "unknown_status": opts(1) + response(s("why"), status=200),
        "partial": opts(0, hold=True) + v["echo_response"][:30],
        "reset_after_reply": opts(1, two=True, end=1) + response(i32(3)),
        "close_racing_reply": opts(3, two=True, split=True, end=0x12) + response(record) +
        response(record),
        "destroy_racing_reply": opts(0, end=0x04) + v["echo_response"],
        "chained_call": opts(1, two=True, end=0x08) + response(i32(3)) + response(i32(4)),
        "chained_call_hold": opts(2, hold=True, end=0x08) + response(b""),
        "zero_copy_attachment": bytes([0x80 | (6 << 4) | 1, 0, 0]) + response(s("att"), b"z"),
        # Bigger than the client's first 4 KiB read: the read buffer grows for the frame.
        "echo_5k_split": opts(0, split=True) + response(s("r" * 5000)),
    }
    return seeds


# --- softverbs (src/verbs/soft/wire.hpp; input layout in fuzz/softverbs_fuzz.cpp) -----------
SV_PSN = 0x100  # the harness's psn: the first data seq it sends


def sv_frame(type_, seq=0, arg=0, body=b"", flags=0, length=None):
    n = len(body) if length is None else length
    return struct.pack("<BBHIII", type_, flags, 0, seq, arg, n) + body


def sv_data(seq, payload, imm=None):
    return sv_frame(2, seq, imm or 0, payload, flags=1 if imm is not None else 0)


def sv_ack(rel):  # seq relative to the queue pair's first send (the harness adds its psn)
    return sv_frame(3, rel)


def sv_nak(rel, kind):
    return sv_frame(4, rel, kind)


def sv_head(passive=False, no_hello=False, sends=0, split=None, rnr=3, late=False, recvs=2,
            size=2, two_sges=False, hold=False):
    """rnr: index into (0, 1, 3, 7); size: index into (0, 16, 100, 4096, 20000, 64, 1, 300)."""
    o = (passive | no_hello << 1 | sends << 2 | (split is not None) << 4 | rnr << 5 | late << 7)
    r = recvs | size << 3 | two_sges << 6 | hold << 7
    return bytes([o, r, split or 0])


def softverbs_seeds():
    hello = sv_frame(1, body=struct.pack("<IIII16s16sB3x", 0x31565343, 1, 2, SV_PSN,
                                         b"corv" + bytes(12), b"corv" + bytes(12), 7))
    p = SV_PSN
    return {
        "one_message": sv_head() + sv_data(p, b"hello"),
        "two_messages_imm": sv_head() + sv_data(p, b"a" * 40) + sv_data(p + 1, b"b", imm=9),
        "zero_length": sv_head(size=0, recvs=1) + sv_data(p, b""),
        "two_sges": sv_head(two_sges=True) + sv_data(p, bytes(range(80))),
        "acks": sv_head(sends=2) + sv_ack(0) + sv_ack(1),
        "cumulative_ack": sv_head(sends=3) + sv_ack(1) + sv_data(p, b"x"),
        "nak_rnr": sv_head(sends=1) + sv_nak(0, 1),
        "nak_invalid_second": sv_head(sends=2) + sv_ack(0) + sv_nak(1, 2),
        "nak_remote_op": sv_head(sends=2, recvs=0) + sv_nak(0, 3),
        "too_long": sv_head(size=1) + sv_data(p, b"y" * 100),
        "rnr_parked_then_posted": sv_head(recvs=0, rnr=1, late=True) + sv_data(p, b"z" * 32),
        "rnr_forever_parked": sv_head(recvs=0, rnr=3, late=True) + sv_data(p, b"q" * 10)
        + sv_data(p + 1, b"r" * 5),
        "rnr_zero": sv_head(recvs=0, rnr=0) + sv_data(p, b"w"),
        "rnr_timeout": sv_head(recvs=0, rnr=1, hold=True) + sv_data(p, b"t" * 8),
        # A parked message declaring 1 GiB with 10 bytes sent: must not allocate the 1 GiB
        # (scripts/fuzz runs this target with -malloc_limit_mb=256).
        "parked_declares_1g": sv_head(recvs=0) + sv_frame(2, p, length=1 << 30) + b"0123456789",
        "parked_behind_parked": sv_head(recvs=0, rnr=2, late=True, hold=True)
        + sv_data(p, b"1" * 8) + sv_data(p + 1, b"2" * 9),
        "passive_never_hello": sv_head(passive=True, no_hello=True, sends=1, hold=True),
        "active_never_hello": sv_head(no_hello=True, sends=2, hold=True),
        "direct_read": sv_head(size=4, recvs=1) + sv_data(p, bytes(20000)),
        "split_mid_body": sv_head(size=3, split=100) + sv_data(p, b"s" * 4096) + sv_ack(0),
        "passive_message": sv_head(passive=True, sends=1) + sv_data(p, b"hi") + sv_ack(0),
        "passive_bad_hello": sv_head(passive=True, no_hello=True, sends=1) + hello,
        "active_bad_hello": sv_head(no_hello=True) + hello + sv_data(p, b"x"),
        "data_before_hello": sv_head(no_hello=True) + sv_data(p, b"x"),
        "bad_seq": sv_head() + sv_data(p + 5, b"x"),
        "unknown_type": sv_head() + sv_frame(9, p),
        "ack_with_body": sv_head(sends=1) + sv_frame(3, 0, body=b"abcd"),
        "second_hello": sv_head() + hello,
        "truncated_header": sv_head() + sv_data(p, b"x")[:7],
        "truncated_body": sv_head(sends=1) + sv_data(p, b"x" * 50)[:30],
    }


def client_hello():
    """A ClientHello as an OpenSSL client sends it (Python's ssl module is OpenSSL), captured
    from a memory BIO: TLS 1.2 and 1.3 offered, SNI localhost. Its random bytes differ per
    run, so rerunning this script rewrites these seeds."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    conn = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    try:
        conn.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def tls_stream_seeds(v):
    # Byte 0: mode (bit 0: a TLS session; raw: bit 1 the plaintext-accepting server, bit 2
    # keep our write side open), bytes 1-3: cut points (/255), then the bytes sent.
    hello = client_hello()
    raw_tls, raw_mixed = b"\x00\x80\x00\x00", b"\x02\x80\x00\x00"
    raw_open = b"\x04\x40\x00\x00"
    session, session_cut = b"\x01\x00\x00\x00", b"\x01\x10\x40\xc0"
    ping = frame(4, 7, 0)
    pipelined = (v["echo_request"] + request("echo", s("second"), request_id=FIRST_ID + 1) +
                 ping + frame(3, FIRST_ID, 0))
    edited = bytearray(hello)
    edited[9:11] = b"\x7f\x7f"  # the ClientHello's legacy_version
    return {
        "raw_client_hello": raw_tls + hello,
        "raw_client_hello_mixed": raw_mixed + hello,
        "raw_client_hello_truncated": raw_tls + hello[:60],
        "raw_client_hello_open": raw_open + hello[:120],
        "raw_client_hello_bad_version": raw_tls + bytes(edited),
        "raw_record_length_huge": raw_tls + b"\x16\x03\x01\xff\xff" + hello[5:],
        "raw_plaintext_refused": raw_tls + v["echo_request"],
        "raw_plaintext_served": raw_mixed + v["echo_request"],
        "raw_plaintext_partial_open": b"\x06\x40\x00\x00" + v["echo_request"][:20],
        "raw_http": raw_tls + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "session_echo": session + v["echo_request"],
        "session_echo_split": session_cut + v["echo_request"],
        "session_pipelined": session_cut + pipelined,
        "session_too_large": session + v["echo_request"] + v["too_large_request"],
        "session_bad_header": session + v["echo_request"] + b"CV\x01" + v["echo_request"][3:],
        "session_response_frame": session + v["echo_response"],
        "session_partial": session + v["echo_request"][:35],
    }


def write(target, seeds):
    d = OUT / target
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for name, data in seeds.items():
        (d / name).write_bytes(data)
    print(f"{target}: {len(seeds)} seeds, {sum(map(len, seeds.values()))} bytes")


def main():
    v = doc_vectors()
    write("frame_header", frame_header_seeds(v))
    write("codec", codec_seeds())
    write("server_stream", server_stream_seeds(v))
    write("client_reply", client_reply_seeds(v))
    write("softverbs", softverbs_seeds())
    write("tls_stream", tls_stream_seeds(v))


if __name__ == "__main__":
    main()
