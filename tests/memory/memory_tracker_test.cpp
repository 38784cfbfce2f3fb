#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <corvid/memory/memory_tracker.hpp>

namespace {

using corvid::memory_tracker;
using corvid::unlimited_memory;

TEST(memory_tracker, charges_every_ancestor_and_releases) {
  memory_tracker root("root", 1000);
  memory_tracker server("server", unlimited_memory, &root);
  memory_tracker conn("conn", 300, &server);
  ASSERT_TRUE(conn.try_reserve(100));
  EXPECT_EQ(conn.current(), 100u);
  EXPECT_EQ(server.current(), 100u);
  EXPECT_EQ(root.current(), 100u);
  conn.release(60);
  EXPECT_EQ(conn.current(), 40u);
  EXPECT_EQ(root.current(), 40u);
  EXPECT_EQ(root.peak(), 100u);
  EXPECT_EQ(conn.peak(), 100u);
}

TEST(memory_tracker, fails_without_side_effects_when_an_ancestor_is_full) {
  memory_tracker root("root", 1000);
  memory_tracker a("a", unlimited_memory, &root);
  memory_tracker b("b", 800, &root);
  memory_tracker leaf("leaf", unlimited_memory, &b);
  ASSERT_TRUE(a.try_reserve(500));
  // The leaf and b have room; the root does not.
  EXPECT_FALSE(leaf.try_reserve(600));
  EXPECT_EQ(leaf.current(), 0u);
  EXPECT_EQ(leaf.peak(), 0u);
  EXPECT_EQ(b.current(), 0u);
  EXPECT_EQ(b.peak(), 0u);
  EXPECT_EQ(root.current(), 500u);
  EXPECT_EQ(root.peak(), 500u);
  // The middle node's own limit stops it too.
  a.release(500);
  EXPECT_FALSE(leaf.try_reserve(801));
  EXPECT_TRUE(leaf.try_reserve(800));
  EXPECT_EQ(root.current(), 800u);
  EXPECT_FALSE(leaf.try_reserve(1));
  EXPECT_TRUE(leaf.over_limit());
  EXPECT_FALSE(a.over_limit());
  EXPECT_EQ(a.available(), 200u);
  leaf.release(800);
}

TEST(memory_tracker, exact_fit_and_huge_requests) {
  memory_tracker root("root", 100);
  EXPECT_TRUE(root.try_reserve(100));
  EXPECT_FALSE(root.try_reserve(1));
  root.release(100);
  EXPECT_FALSE(root.try_reserve(unlimited_memory));  // no overflow past the limit
  EXPECT_EQ(root.current(), 0u);
}

TEST(memory_tracker, forced_reserve_can_pass_the_limit) {
  memory_tracker root("root", 100);
  memory_tracker leaf("leaf", unlimited_memory, &root);
  leaf.reserve(150);
  EXPECT_EQ(root.current(), 150u);
  EXPECT_EQ(root.peak(), 150u);
  EXPECT_TRUE(root.over_limit());
  EXPECT_EQ(leaf.available(), 0u);
  EXPECT_FALSE(leaf.try_reserve(1));
  leaf.release(150);
}

TEST(memory_tracker, destroying_a_child_returns_what_it_still_holds) {
  memory_tracker root("root", 1000);
  {
    memory_tracker conn("conn", unlimited_memory, &root);
    ASSERT_TRUE(conn.try_reserve(400));
  }
  EXPECT_EQ(root.current(), 0u);
  EXPECT_EQ(root.peak(), 400u);
  EXPECT_TRUE(root.snapshot().children.empty());
}

TEST(memory_tracker, snapshot_is_a_tree_in_creation_order) {
  memory_tracker root("server", 4096);
  memory_tracker reads("read_buffers", 2048, &root);
  memory_tracker calls("in_flight", unlimited_memory, &root);
  memory_tracker c1("conn 1", unlimited_memory, &reads);
  memory_tracker c2("conn 2", unlimited_memory, &reads);
  ASSERT_TRUE(c2.try_reserve(10));
  ASSERT_TRUE(calls.try_reserve(5));
  const corvid::memory_usage u = root.snapshot();
  EXPECT_EQ(u.name, "server");
  EXPECT_EQ(u.current, 15u);
  EXPECT_EQ(u.limit, 4096u);
  ASSERT_EQ(u.children.size(), 2u);
  EXPECT_EQ(u.children[0].name, "read_buffers");
  EXPECT_EQ(u.children[1].name, "in_flight");
  ASSERT_NE(u.find("read_buffers/conn 2"), nullptr);
  EXPECT_EQ(u.find("read_buffers/conn 2")->current, 10u);
  EXPECT_EQ(u.find("read_buffers")->children[0].name, "conn 1");
  EXPECT_EQ(u.find("nope"), nullptr);
  EXPECT_NE(u.to_string().find("conn 2: current 10 peak 10"), std::string::npos);
  c2.release(10);
  calls.release(5);
}

TEST(memory_tracker, process_root_is_unlimited_by_default) {
  auto& p = memory_tracker::process();
  EXPECT_EQ(p.name(), "process");
  EXPECT_EQ(p.parent(), nullptr);
  memory_tracker child("test", 10, &p);
  const std::size_t before = p.current();
  ASSERT_TRUE(child.try_reserve(10));
  EXPECT_GE(p.current(), before + 10);  // other tests' trackers may charge it too
  child.release(10);
}

// Many threads reserve and release against a shared limited parent: the limit is never
// passed, and everything balances to zero. Run under TSan in CI.
TEST(memory_tracker, concurrent_reservations_never_pass_the_limit) {
  constexpr std::size_t limit = 24 * 1024;
  memory_tracker root("root", limit);
  memory_tracker server("server", limit / 2, &root);
  constexpr int threads = 4;
  std::vector<std::unique_ptr<memory_tracker>> leaves;
  for (int i = 0; i < threads; ++i) {
    leaves.push_back(std::make_unique<memory_tracker>("conn " + std::to_string(i), unlimited_memory,
                                                      i % 2 == 0 ? &server : &root));
  }
  std::atomic<bool> over{false};
  std::atomic<std::uint64_t> failures{0};
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      memory_tracker& mine = *leaves[static_cast<std::size_t>(i)];
      std::vector<std::size_t> held;
      for (int round = 0; round < 20000; ++round) {
        const std::size_t n = 512 + static_cast<std::size_t>((round * 7919 + i) % 4096);
        if (mine.try_reserve(n)) {
          held.push_back(n);
        } else {
          failures.fetch_add(1, std::memory_order_relaxed);
        }
        if (root.current() > limit || server.current() > limit / 2) over = true;
        if (held.size() > 12 || (!held.empty() && round % 3 == 0)) {
          mine.release(held.back());
          held.pop_back();
        }
        // A snapshot from another thread while the tree changes.
        if (i == 0 && round % 1000 == 0) (void)root.snapshot();
      }
      for (std::size_t n : held) mine.release(n);
    });
  }
  for (auto& t : pool) t.join();
  EXPECT_FALSE(over.load());
  EXPECT_GT(failures.load(), 0u);  // the limit was actually reached
  EXPECT_EQ(root.current(), 0u);
  EXPECT_EQ(server.current(), 0u);
  EXPECT_LE(root.peak(), limit);
  EXPECT_LE(server.peak(), limit / 2);
  for (auto& l : leaves) EXPECT_EQ(l->current(), 0u);
}

// Trackers created and destroyed on several threads under one parent while another thread
// takes snapshots (connections come and go while server.memory() is read).
TEST(memory_tracker, children_come_and_go_concurrently) {
  memory_tracker root("root");
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) (void)root.snapshot();
  });
  std::vector<std::thread> pool;
  for (int i = 0; i < 3; ++i) {
    pool.emplace_back([&] {
      for (int round = 0; round < 2000; ++round) {
        memory_tracker conn("conn", unlimited_memory, &root);
        memory_tracker reads("reads", unlimited_memory, &conn);
        ASSERT_TRUE(reads.try_reserve(64));
      }
    });
  }
  for (auto& t : pool) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(root.current(), 0u);
  EXPECT_TRUE(root.snapshot().children.empty());
}

}  // namespace
