//===- test/unit/support/FileIOTest.cpp - atomic writes, bounded reads ---===//
#include "support/Error.h"
#include "support/FileIO.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

fs::path tempDir() {
  fs::path d = fs::temp_directory_path() /
               ("mpc-fileio-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(FileIO, AtomicWriteReplacesContentAndLeavesNoTemporary) {
  fs::path d = tempDir();
  std::string path = (d / "out.bin").string();
  mpc::writeFileAtomic(path, std::string("first"));
  mpc::writeFileAtomic(path, std::string("second"));
  EXPECT_EQ(mpc::readFileText(path), "second");
  int files = 0;
  for ([[maybe_unused]] const auto &e : fs::directory_iterator(d)) ++files;
  EXPECT_EQ(files, 1);
  fs::remove_all(d);
}

TEST(FileIO, FailedWriteLeavesTargetUntouched) {
  fs::path d = tempDir();
  std::string path = (d / "missing-folder" / "out.bin").string();
  EXPECT_THROW(mpc::writeFileAtomic(path, std::string("x")), mpc::UserError);
  EXPECT_FALSE(fs::exists(path));
  fs::remove_all(d);
}

TEST(FileIO, ReadErrorsNameTheFile) {
  try {
    mpc::readFileBytes("/nonexistent/file.json");
    FAIL() << "no error";
  } catch (const mpc::UserError &e) {
    EXPECT_EQ(e.file(), "/nonexistent/file.json");
    EXPECT_NE(std::string(e.what()).find("cannot open file"), std::string::npos);
  }
}

TEST(FileIO, ReadRejectsFilesOverTheLimitAndDirectories) {
  fs::path d = tempDir();
  std::string path = (d / "big").string();
  mpc::writeFileAtomic(path, std::string(100, 'a'));
  EXPECT_THROW(mpc::readFileBytes(path, 99), mpc::UserError);
  EXPECT_EQ(mpc::readFileBytes(path, 100).size(), 100u);
  EXPECT_THROW(mpc::readFileBytes(d.string()), mpc::UserError);
  fs::remove_all(d);
}

TEST(Error, FormatDropsEmptyParts) {
  EXPECT_EQ(mpc::UserError("m.json", "/nodes/1", "bad").what(),
            std::string("m.json: error: /nodes/1: bad"));
  EXPECT_EQ(mpc::UserError("bad").what(), std::string("error: bad"));
}

} // namespace
