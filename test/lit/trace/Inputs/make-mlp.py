# make-mlp.py DIR: a 4-layer tanh MLP of width 384 over two devices
# (mlp.json) and a batch of 512 (mx.npy, my.npy).
import json, sys
import numpy as np
w, b = 384, 512
rng = np.random.default_rng(1)
np.save(sys.argv[1] + "/mx.npy", rng.standard_normal((b, w)).astype("<f4"))
np.save(sys.argv[1] + "/my.npy", rng.standard_normal((b, w)).astype("<f4"))
params, nodes, x = {}, [], "x"
for l in range(4):
    dev = "cpu:%d" % (l // 2)
    params["w%d" % l] = {"shape": [w, w], "init": {"xavier": {"magnitude": 1.0}}, "device": dev}
    nodes += [{"name": "h%d" % l, "op": "matmul", "inputs": [x, "w%d" % l], "device": dev},
              {"name": "a%d" % l, "op": "tanh", "inputs": ["h%d" % l], "device": dev}]
    x = "a%d" % l
nodes.append({"name": "loss", "op": "mse_loss", "inputs": [x, "y"], "device": "cpu:1"})
json.dump({"mpc": 1, "name": "mlp", "inputs": {"x": {"shape": [b, w]}, "y": {"shape": [b, w]}},
           "params": params, "nodes": nodes, "loss": "loss"}, open(sys.argv[1] + "/mlp.json", "w"))
