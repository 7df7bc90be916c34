//===- test/unit/support/FileIOTest.cpp - atomic writes, bounded reads ---===//
#include "support/Error.h"
#include "support/FileIO.h"
#include "support/StringUtil.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

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

TEST(FileIO, StaleTemporariesOfDeadProcessesAreRemoved) {
  fs::path d = tempDir();
  std::string path = (d / "ckpt.safetensors").string();
  // A PID above the kernel's limit (pid_max <= 2^22) belongs to no process;
  // our own PID's name is ours to reuse; another file's temporary is left alone.
  std::string dead = mpc::atomicTempName(path, 99999999);
  std::string other = mpc::atomicTempName((d / "other.bin").string(), 99999999);
  std::string live = mpc::atomicTempName(path, long(::getppid()));
  for (const std::string &p : {dead, other, live}) std::ofstream(p) << "partial";
  mpc::writeFileAtomic(path, std::string("new"));
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(live)); // its process may be between its link and its rename
  EXPECT_EQ(mpc::readFileText(path), "new");
  fs::remove_all(d);
}

TEST(StringUtil, EscapeForMessageKeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(mpc::escapeForMessage("plain text"), "plain text");
  EXPECT_EQ(mpc::escapeForMessage("w\xc3\xa9ight"), "w\xc3\xa9ight"); // UTF-8 e-acute kept
  EXPECT_EQ(mpc::escapeForMessage("kerne\xa1"), "kerne\\xa1");
  EXPECT_EQ(mpc::escapeForMessage(std::string("a\0b\x1b[31m\x7f", 9)), "a\\x00b\\x1b[31m\\x7f");
  EXPECT_EQ(mpc::escapeForMessage("\xc0\xaf"), "\\xc0\\xaf");     // overlong '/'
  EXPECT_EQ(mpc::escapeForMessage("\xed\xa0\x80"), "\\xed\\xa0\\x80"); // surrogate
  EXPECT_EQ(mpc::escapeForMessage("line\nnext"), "line\nnext");
  mpc::UserError e("f\xff.json", "/nodes/0", "bad \x01");
  EXPECT_STREQ(e.what(), "f\\xff.json: error: /nodes/0: bad \\x01");
}

TEST(StringUtil, QuoteNameKeepsUserTextOnOneLineAndShort) {
  EXPECT_EQ(mpc::quoteName("fc1"), "'fc1'");
  EXPECT_EQ(mpc::quoteName("NHWC", ""), "NHWC");
  EXPECT_EQ(mpc::quoteName("a\nb\x1b"), "'a\\x0ab\\x1b'");
  EXPECT_EQ(mpc::quoteName("x", "\""), "\"x\"");
  std::string limit(mpc::kMaxQuotedChars, 'a');
  EXPECT_EQ(mpc::quoteName(limit), "'" + limit + "'");
  EXPECT_EQ(mpc::quoteName(std::string(26000, 'a')), "'" + limit + "...' (26000 characters)");
  // Cut between characters, never inside a UTF-8 sequence; a character is
  // what the message shows as one.
  std::string accents;
  for (size_t i = 0; i < mpc::kMaxQuotedChars + 1; ++i) accents += "\xc3\xa9";
  EXPECT_EQ(mpc::quoteName(accents),
            "'" + accents.substr(0, 2 * mpc::kMaxQuotedChars) + "...' (201 characters)");
  // A location or file name stays on the diagnostic's first line.
  mpc::UserError e("a\nb.json", "/nodes/0/attrs/k\ney", "bad");
  EXPECT_STREQ(e.what(), "a\\x0ab.json: error: /nodes/0/attrs/k\\x0aey: bad");
}

} // namespace
