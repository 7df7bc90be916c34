# mean-bubble.py TRACE.json STATS.txt: the devices' idle shares of a
# predicted trace, averaged, equal the bubble `mpc compile --stats` prints
# (1 - busy device time / (devices * step), on the same simulation).
import json, re, sys
trace = json.load(open(sys.argv[1]))
shares = list(trace["otherData"]["bubble"].values())
stats = open(sys.argv[2]).read()
m = re.search(r"bubble ([0-9.]+)% predicted by the cost model", stats)
assert m, stats
mean = 100 * sum(shares) / len(shares)
assert abs(mean - float(m.group(1))) < 0.06, (mean, m.group(1))
print("mean bubble equals --stats")
