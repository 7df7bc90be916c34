//===- test/unit/frontend/AttrParseTest.cpp - MXNet attribute strings ----===//
#include "frontend/mxnet/AttrParse.h"
#include "support/Error.h"

#include <gtest/gtest.h>

namespace mx = mpc::frontend::mxnet;

TEST(AttrParse, ReadsPythonAndDmlcSpellings) {
  EXPECT_EQ(mx::parseIntAttr("12"), 12);
  EXPECT_EQ(mx::parseIntAttr(" -3 "), -3);
  EXPECT_EQ(mx::parseIntAttr("7L"), 7);
  EXPECT_DOUBLE_EQ(mx::parseFloatAttr("1e-3"), 0.001);
  EXPECT_TRUE(mx::parseBoolAttr("True"));
  EXPECT_TRUE(mx::parseBoolAttr("1"));
  EXPECT_FALSE(mx::parseBoolAttr("false"));
  EXPECT_EQ(mx::parseTupleAttr("(5, 5)"), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(mx::parseTupleAttr("(3L, 3L)"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(mx::parseTupleAttr("(5,)"), (std::vector<int64_t>{5}));
  EXPECT_EQ(mx::parseTupleAttr("[2,2]"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(mx::parseTupleAttr("()"), (std::vector<int64_t>{}));
  EXPECT_EQ(mx::parseTupleAttr("4"), (std::vector<int64_t>{4}));
  EXPECT_TRUE(mx::isNoneAttr("None"));
}

TEST(AttrParse, RejectsPartialReads) {
  EXPECT_THROW(mx::parseIntAttr("3x"), mpc::RuleError);
  EXPECT_THROW(mx::parseIntAttr(""), mpc::RuleError);
  EXPECT_THROW(mx::parseFloatAttr("0.5.1"), mpc::RuleError);
  EXPECT_THROW(mx::parseFloatAttr("inf"), mpc::RuleError);
  EXPECT_THROW(mx::parseBoolAttr("yes"), mpc::RuleError);
  EXPECT_THROW(mx::parseTupleAttr("(1, 2"), mpc::RuleError);
  EXPECT_THROW(mx::parseTupleAttr("(1,,2)"), mpc::RuleError);
  EXPECT_THROW(mx::parseTupleAttr("(a, b)"), mpc::RuleError);
}
