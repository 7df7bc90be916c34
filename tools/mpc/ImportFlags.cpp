//===- tools/mpc/ImportFlags.cpp - the flags every importer takes ----------===//
#include "tools/mpc/ImportFlags.h"

#include "io/Safetensors.h"
#include "support/Error.h"
#include "support/FileIO.h"
#include "tools/mpc/NumericFlags.h"

#include <cstring>

namespace mpc::tool {

void addImportFlags(CLI::App &cmd, ImportFlagArgs &a, const ImportFlagHelp &help) {
  CLI::Option *input = cmd.add_option("--input", a.inputs, help.input);
  if (help.inputRequired) input->required();
  auto *loss = cmd.add_option("--loss", a.loss, help.loss)
                   ->check(CLI::IsMember({"softmax_cross_entropy", "mse"}));
  auto *inference = cmd.add_flag("--inference", a.inference, help.inference);
  loss->excludes(inference);
  cmd.add_option("--optimizer", a.optimizer,
                 "The model's optimizer: sgd (default), adam or adamw")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd.add_option("--lr", a.lr, "Learning rate (default: the optimizer's, sgd 0.01, adam 0.001)")
      ->check(nonNegativeNumber());
  cmd.add_option("--momentum", a.momentum, "SGD momentum (default 0)")
      ->check(nonNegativeNumber());
  cmd.add_option("--wd", a.wd, "Weight decay (default: the optimizer's; adamw 0.01)")
      ->check(nonNegativeNumber());
  cmd.add_option("--name", a.name, help.name);
}

std::vector<frontend::InputSpec> inputSpecs(const ImportFlagArgs &a) {
  std::vector<frontend::InputSpec> specs;
  for (const std::string &s : a.inputs) specs.push_back(frontend::parseInputSpec(s));
  return specs;
}

frontend::TrainingOptions trainingOptions(const ImportFlagArgs &a) {
  if (a.momentum && a.optimizer != "sgd")
    throw UserError("", "--momentum", "is an sgd setting; " + a.optimizer + " has beta1");
  frontend::TrainingOptions t;
  t.loss = a.loss;
  t.inference = a.inference;
  t.optimizer = a.optimizer;
  t.lr = a.lr;
  t.momentum = a.momentum;
  t.weightDecay = a.wd;
  return t;
}

void writeImportOutputs(const std::string &output, const std::string &modelJson,
                        const std::string &paramsOut,
                        const std::vector<frontend::FloatTensor> &tensors) {
  std::vector<io::NamedTensor> named;
  for (const frontend::FloatTensor &t : tensors) {
    io::NamedTensor n;
    n.name = t.name;
    n.shape = t.shape;
    n.data.resize(t.data.size() * 4);
    if (!t.data.empty()) std::memcpy(n.data.data(), t.data.data(), n.data.size());
    named.push_back(std::move(n));
  }
  writeFileAtomic(output, modelJson);
  if (!paramsOut.empty()) io::writeSafetensors(paramsOut, named, {{"format", "pt"}});
}

} // namespace mpc::tool
