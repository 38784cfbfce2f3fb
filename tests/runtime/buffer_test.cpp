// byte_buffer (cursor, growth, compaction, shrinking) and outbound_queue (segments in queue
// order, rollback, clear), the write path every frame goes through.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <asio/buffer.hpp>
#include <gtest/gtest.h>

#include "corvid/detail/byte_buffer.hpp"
#include "corvid/detail/outbound_queue.hpp"

namespace corvid::detail {
namespace {

TEST(ByteBuffer, StartsEmptyAndReserves) {
  byte_buffer a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.capacity(), 0u);
  byte_buffer b(100);
  EXPECT_TRUE(b.empty());
  EXPECT_GE(b.capacity(), 100u);
  EXPECT_EQ(b.tail_room(), b.capacity());
}

TEST(ByteBuffer, ExtendAppendAndCommitAddBytesInOrder) {
  byte_buffer b;
  std::memcpy(b.extend(3), "abc", 3);
  b.append(std::string_view("def"));
  b.ensure_tail(2);
  std::memcpy(b.tail(), "gh", 2);
  EXPECT_EQ(b.view(), "abcdef") << "tail bytes are invisible until committed";
  b.commit(2);
  EXPECT_EQ(b.view(), "abcdefgh");
  EXPECT_EQ(b.size(), 8u);
}

TEST(ByteBuffer, GrowthPreservesContent) {
  byte_buffer b;
  std::string expect;
  for (int i = 0; i < 5000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    b.append(piece);
    expect += piece;
  }
  EXPECT_EQ(b.view(), expect);
  EXPECT_GE(b.capacity(), expect.size());
}

TEST(ByteBuffer, ConsumeAdvancesAndResetsWhenDrained) {
  byte_buffer b(64);
  b.append(std::string_view("hello world"));
  b.consume(6);
  EXPECT_EQ(b.view(), "world");
  EXPECT_EQ(b.tail_room(), b.capacity() - 11) << "consume alone does not move bytes";
  b.consume(5);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.tail_room(), b.capacity()) << "a drained buffer reuses its whole capacity";
}

TEST(ByteBuffer, CompactMovesUnreadBytesToFront) {
  byte_buffer b(32);
  b.append(std::string_view("0123456789"));
  const char* front = b.data();
  b.consume(4);
  b.compact();
  EXPECT_EQ(b.view(), "456789");
  EXPECT_EQ(b.data(), front);
  EXPECT_EQ(b.tail_room(), b.capacity() - 6);
}

TEST(ByteBuffer, EnsureTailPrefersCompactionOverGrowth) {
  byte_buffer b(64);
  b.append(std::string(60, 'a'));
  b.consume(50);  // 10 unread, 4 bytes tail room, 54 free overall
  const std::size_t cap = b.capacity();
  b.ensure_tail(4);
  EXPECT_EQ(b.capacity(), cap) << "enough room already";
  b.ensure_tail(40);
  EXPECT_EQ(b.capacity(), cap) << "compaction frees enough, no reallocation";
  EXPECT_GE(b.tail_room(), 40u);
  EXPECT_EQ(b.view(), std::string(10, 'a'));
  b.ensure_tail(1000);
  EXPECT_GE(b.tail_room(), 1000u);
  EXPECT_GT(b.capacity(), cap);
  EXPECT_EQ(b.view(), std::string(10, 'a'));
}

TEST(ByteBuffer, ShrinkToKeepsContentAndRespectsSize) {
  byte_buffer b;
  b.append(std::string(5000, 'z'));
  b.consume(4990);
  b.shrink_to(16);
  EXPECT_EQ(b.capacity(), 16u);
  EXPECT_EQ(b.view(), std::string(10, 'z'));
  b.shrink_to(4);  // would cut unread bytes: ignored
  EXPECT_EQ(b.capacity(), 16u);
  b.shrink_to(100);  // already smaller: ignored
  EXPECT_EQ(b.capacity(), 16u);
  EXPECT_EQ(b.view(), std::string(10, 'z'));
}

TEST(ByteBuffer, TruncateAndClear) {
  byte_buffer b;
  b.append(std::string_view("abcdef"));
  b.consume(1);
  b.truncate(3);
  EXPECT_EQ(b.view(), "bcd");
  b.append(std::string_view("X"));
  EXPECT_EQ(b.view(), "bcdX") << "appends continue right after the truncation point";
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_GT(b.capacity(), 0u) << "clear keeps the memory";
}

TEST(ByteBuffer, MoveTransfersStorage) {
  byte_buffer a;
  a.append(std::string_view("payload"));
  const char* storage = a.data();
  byte_buffer b(std::move(a));
  EXPECT_EQ(b.view(), "payload");
  EXPECT_EQ(b.data(), storage) << "moves must not copy";
  EXPECT_EQ(a.capacity(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_TRUE(a.empty());

  byte_buffer c;
  c.append(std::string_view("old"));
  c = std::move(b);
  EXPECT_EQ(c.view(), "payload");
  EXPECT_EQ(b.capacity(), 0u);          // NOLINT(bugprone-use-after-move)
  a.append(std::string_view("reuse"));  // a moved-from buffer is usable again
  EXPECT_EQ(a.view(), "reuse");
}

// What a gather write of `q` would send, buffer by buffer.
std::vector<asio::const_buffer> buffers(const outbound_queue& q) {
  std::vector<asio::const_buffer> iov;
  q.gather(iov);
  return iov;
}

std::vector<std::string> segments(outbound_queue& q) {
  std::vector<std::string> out;
  for (const asio::const_buffer& b : buffers(q)) {
    out.emplace_back(static_cast<const char*>(b.data()), b.size());
  }
  return out;
}

using strings = std::vector<std::string>;

TEST(OutboundQueue, ContiguousAppendsFormOneBuffer) {
  outbound_queue q;
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(buffers(q).empty());
  q.append("head");
  std::memcpy(q.extend(3), "mid", 3);
  q.append("");  // empty appends add nothing
  q.append("tail");
  EXPECT_EQ(segments(q), strings{"headmidtail"});
  EXPECT_EQ(q.size(), 11u);
}

TEST(OutboundQueue, OwnedPayloadsAreSeparateSegmentsInOrder) {
  outbound_queue q;
  std::string big(10000, 'B');
  const char* big_data = big.data();
  q.append("h1");
  q.append_owned(std::move(big));
  q.append_owned(std::string(100, 'C'));
  q.append_owned(std::string());  // empty: no segment
  q.append("h2");
  q.append(std::string(100000, 'g'));  // grows the contiguous buffer after owned segments
  EXPECT_EQ(segments(q), (strings{"h1", std::string(10000, 'B'), std::string(100, 'C'),
                                  "h2" + std::string(100000, 'g')}));
  EXPECT_EQ(buffers(q)[1].data(), big_data) << "owned payloads are not copied";
  EXPECT_EQ(q.size(), 2u + 10000u + 100u + 2u + 100000u);
}

TEST(OutboundQueue, MarkAtPatchesEarlierBytes) {
  outbound_queue q;
  q.append("xx");
  const std::size_t m = q.mark();
  q.append("????");
  q.append("body");
  std::memcpy(q.at(m), "LEN4", 4);
  EXPECT_EQ(segments(q), strings{"xxLEN4body"});
}

TEST(OutboundQueue, RollbackDiscardsAPartFrame) {
  outbound_queue q;
  q.append("frame1");
  const std::size_t m = q.mark();
  q.append("half-written");
  q.rollback(m);
  EXPECT_EQ(segments(q), strings{"frame1"});
  EXPECT_EQ(q.size(), 6u);
  q.append("frame2");
  EXPECT_EQ(segments(q), strings{"frame1frame2"});
}

TEST(OutboundQueue, RollbackAfterOwnedSegment) {
  outbound_queue q;
  q.append("a");
  q.append_owned(std::string(50, 'O'));
  const std::size_t m = q.mark();
  q.append("partial");
  q.rollback(m);  // the segment opened after the owned one disappears entirely
  EXPECT_EQ(segments(q), (strings{"a", std::string(50, 'O')}));
  EXPECT_EQ(q.size(), 51u);
  q.append("b");
  EXPECT_EQ(segments(q), (strings{"a", std::string(50, 'O'), "b"}));
  EXPECT_EQ(q.size(), 52u);
}

TEST(OutboundQueue, RollbackToStartEmptiesQueue) {
  outbound_queue q;
  const std::size_t m = q.mark();
  q.append("abc");
  q.rollback(m);
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(buffers(q).empty());
}

TEST(OutboundQueue, FramesCountAndClearResetsEverything) {
  outbound_queue q;
  q.append("f1");
  q.count_frame();
  q.append_owned(std::string(40, 'p'));
  q.count_frame();
  q.append("f3");
  q.count_frame();
  EXPECT_EQ(q.frames(), 3u);
  q.clear();
  EXPECT_EQ(q.frames(), 0u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_TRUE(buffers(q).empty());
  q.append("next");
  EXPECT_EQ(segments(q), strings{"next"}) << "offsets restart at zero after clear";
}

TEST(OutboundQueue, ClearShrinksHugeBufferButStaysUsable) {
  outbound_queue q;
  q.append(std::string(3 << 20, 'H'));
  q.clear(1024);
  EXPECT_TRUE(q.empty());
  q.append(std::string(2000, 'k'));
  EXPECT_EQ(segments(q), strings{std::string(2000, 'k')});
}

}  // namespace
}  // namespace corvid::detail
