# Prints, per device of `mpc dump --format=json`, the sorted names of the
# forward kernels it runs (backward and optimizer nodes left out), then the
# params with their devices.
import json
import sys

plan = json.load(open(sys.argv[1]))
for i, dev in enumerate(plan["devices"]):
    names = sorted({ins["node"] for ins in dev["instrs"] if ins.get("kind") == "kernel"
                    and ".grad" not in ins["node"] and ".update" not in ins["node"]
                    and not ins["node"].endswith(".sgd")})
    print("%s: %s" % (dev["name"], " ".join(names)))
print("params: " + " ".join(sorted("%s@%d" % (p["name"], p["device"]) for p in plan["params"])))
