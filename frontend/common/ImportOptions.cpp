//===- frontend/common/ImportOptions.cpp - what every importer is asked ----===//
#include "frontend/common/ImportOptions.h"

#include "support/Error.h"
#include "support/StringUtil.h"

#include <cctype>

namespace mpc::frontend {

using json = nlohmann::ordered_json;

InputSpec parseInputSpec(const std::string &text) {
  auto bad = [&](const std::string &why) -> InputSpec {
    throw UserError("", "--input " + text, why + "; expected NAME=D0,D1,...[:i32]");
  };
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return bad("missing NAME=");
  InputSpec s;
  s.name = text.substr(0, eq);
  std::string dims = text.substr(eq + 1);
  if (size_t colon = dims.find(':'); colon != std::string::npos) {
    std::string dt = dims.substr(colon + 1);
    if (dt == "i32") s.i32 = true;
    else if (dt != "f32") return bad("unknown dtype " + quoteName(dt) + " (f32 or i32)");
    dims = dims.substr(0, colon);
  }
  if (dims.empty()) return bad("no dimensions");
  size_t start = 0;
  while (true) {
    size_t comma = dims.find(',', start);
    std::string d =
        dims.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos)
      return bad("bad dimension " + quoteName(d));
    if (d.size() > 18) return bad("dimension " + quoteName(d) + " is too large");
    int64_t v = std::stoll(d);
    if (v <= 0) return bad("dimensions must be positive integers, got " + quoteName(d));
    s.shape.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return s;
}

json optimizerJson(const TrainingOptions &t) {
  json s = json::object();
  if (t.lr) s["lr"] = *t.lr;
  if (t.momentum) s["momentum"] = *t.momentum;
  if (t.weightDecay) s["weight_decay"] = *t.weightDecay;
  return json{{t.optimizer, s}};
}

std::string modelNameFromFile(const std::string &file, const std::vector<std::string> &suffixes) {
  std::string base = file.substr(file.find_last_of('/') + 1);
  for (const std::string &suffix : suffixes)
    if (base.size() > suffix.size() &&
        base.compare(base.size() - suffix.size(), std::string::npos, suffix) == 0) {
      base.resize(base.size() - suffix.size());
      break;
    }
  std::string out;
  for (char ch : base)
    out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'
               ? ch
               : '_';
  return out.empty() ? "model" : out;
}

std::string writeModelText(const ModelParts &m) {
  auto section = [](const json &obj) {
    std::string s = "{";
    size_t k = 0;
    for (auto it = obj.begin(); it != obj.end(); ++it, ++k)
      s += std::string(k ? "," : "") + "\n    " + json(it.key()).dump() + ": " + it->dump();
    return s + (obj.empty() ? "}" : "\n  }");
  };
  std::string s = "{\n  \"mpc\": 1,\n  \"name\": " + json(m.name).dump() + ",\n";
  s += "  \"inputs\": " + section(m.inputs) + ",\n";
  s += "  \"params\": " + section(m.params) + ",\n";
  s += "  \"nodes\": [";
  for (size_t i = 0; i < m.nodes.size(); ++i) s += (i ? ",\n    " : "\n    ") + m.nodes[i].dump();
  s += m.nodes.empty() ? "],\n" : "\n  ],\n";
  if (m.loss) s += "  \"loss\": " + json(*m.loss).dump() + ",\n";
  s += "  \"outputs\": " + json(m.outputs).dump();
  if (m.optimizer) s += ",\n  \"optimizer\": " + m.optimizer->dump();
  return s + "\n}\n";
}

} // namespace mpc::frontend
