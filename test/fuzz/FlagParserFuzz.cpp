//===- test/fuzz/FlagParserFuzz.cpp - fuzz target for the driver's flags -===//
//
// The flags of `mpc run` and `mpc compile` (tools/mpc/Flags.h), parsed as
// the driver parses them, without running a command: any command line must
// end in parsed flags, a CLI11 parse error or a UserError; never a crash,
// another exception (a conversion's std::out_of_range), an internal error
// or a sanitizer report. Flags that parse hold only values their
// validators allow.
//
// The input is command lines, one a line, after the program name; words are
// separated by spaces or tabs, and '' is the empty word
// ("run p.bin --save ''"). The seed corpus, flag-corpus/, holds the flag
// sets of the lit tests.
//
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"
#include "support/Error.h"
#include "tools/mpc/Flags.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

[[noreturn]] void fail(const std::string &line, const char *what) {
  std::fprintf(stderr, "flags '%s' parsed to %s\n", line.c_str(), what);
  std::abort();
}

std::vector<std::string> splitWords(const std::string &line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t') {
      ++i;
      continue;
    }
    size_t end = line.find_first_of(" \t", i);
    if (end == std::string::npos) end = line.size();
    std::string word = line.substr(i, end - i);
    words.push_back(word == "''" ? "" : word);
    i = end;
  }
  return words;
}

void parseLine(const std::string &line) {
  std::vector<std::string> words = splitWords(line);
  words.insert(words.begin(), "mpc");
  std::vector<const char *> argv;
  for (const std::string &w : words) argv.push_back(w.c_str());

  CLI::App app{"mpc", "mpc"};
  app.require_subcommand(1);
  mpc::tool::RunArgs run;
  mpc::tool::CompileArgs compile;
  CLI::App *runCmd = mpc::tool::addRunFlags(app, run);
  CLI::App *compileCmd = mpc::tool::addCompileFlags(app, compile);
  try {
    mpc::tool::parseCommandLine(app, int(argv.size()), argv.data());
    if (runCmd->parsed()) {
      mpc::tool::finishRunFlags(*runCmd, run);
      const mpc::runtime::train::TrainOptions &t = run.train;
      if (t.steps < 0 || t.epochs < 0 || (t.steps > 0 && t.epochs > 0))
        fail(line, "a bad --steps or --epochs");
      if (t.saveEvery < 0 || t.logEvery < 1) fail(line, "a bad --save-every or --log-every");
    }
    if (compileCmd->parsed()) {
      mpc::compiler::CompileOptions o = mpc::tool::finishCompileFlags(compile);
      const mpc::passes::PassOptions &p = o.passes;
      if (p.lr && !(*p.lr > 0 && std::isfinite(*p.lr))) fail(line, "a bad --lr");
      if (p.microbatches && (*p.microbatches < 1 || *p.microbatches > mpc::ir::kMaxMicrobatches))
        fail(line, "a bad --microbatches");
      if (p.deviceMemory < 0) fail(line, "a bad --device-memory");
    }
  } catch (const CLI::ParseError &) {
  } catch (const mpc::UserError &) {
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    parseLine(text.substr(start, end - start));
    start = end + 1;
  }
  return 0;
}
