// corvid::version(): the VERSION file's text, which CMake also gave the SONAME and the
// packages (an edit of the file reconfigures the build: CMAKE_CONFIGURE_DEPENDS).
#include "corvid/version.hpp"

#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

TEST(version, is_the_version_files) {
  std::ifstream file(CORVID_VERSION_FILE);
  std::string expected;
  ASSERT_TRUE(std::getline(file, expected)) << CORVID_VERSION_FILE;
  EXPECT_EQ(corvid::version(), expected);
  EXPECT_TRUE(std::regex_match(std::string(corvid::version()), std::regex(R"(\d+\.\d+\.\d+)")))
      << corvid::version();
}
