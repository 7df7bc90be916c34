# check-profile.py PLAN.json PROFILE.txt: the table of `mpc run --profile`
# (runtime/train/Profile.h) has a block per device of the plan, in order;
# in both columns the step is the busy time plus the idle time; the sends
# and receives counted are the plan's; the top ops are at most five of the
# device's kernels' ops, by decreasing measured time; and a closing line
# counts the figures marked "!" (a ratio above 2 or below 1/2).
import json, re, sys
plan = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read().splitlines()
UNIT = {"us": 1e3, "ms": 1e6, "s": 1e9}
def ns(v, u): return float(v) * UNIT[u]
row = re.compile(r"^\s+(\S.*?)\s+([0-9.]+) (us|ms|s)\s+([0-9.]+) (us|ms|s)\s+(\S+)( !)?(.*)$")
blocks, cur = [], None
for line in text:
    if line.startswith("device "):
        cur = {"name": line.split()[1], "rows": [], "sends": None}
        blocks.append(cur)
    elif cur is not None and line.startswith("  sends "):
        cur["sends"] = line
    elif cur is not None and (m := row.match(line)):
        label = m.group(1).strip()
        measured, predicted = ns(m.group(2), m.group(3)), ns(m.group(4), m.group(5))
        ratio, mark = m.group(6), m.group(7) is not None
        if ratio != "-":
            r = float(ratio)
            assert mark == (r > 2 or r < 0.5), line
        cur["rows"].append((label, measured, predicted, mark))
assert [b["name"] for b in blocks] == [d["name"] for d in plan["devices"]], blocks
marks = 0
for b, dev in zip(blocks, plan["devices"]):
    rows = {label: (m, p) for label, m, p, _ in b["rows"]}
    marks += sum(mark for *_, mark in b["rows"])
    for col in (0, 1):
        step, busy, idle = rows["step"][col], rows["busy (kernels)"][col], rows["idle (the bubble)"][col]
        # Printed to 4 significant figures or 0.1 us.
        assert abs(step - (busy + idle)) <= 0.002 * step + 150, (b["name"], col, step, busy, idle)
    instrs = dev["instrs"]
    sends = sum(i["kind"] == "send" for i in instrs)
    recvs = sum(i["kind"] == "recv" for i in instrs)
    assert f" in {sends}, " in b["sends"] and b["sends"].split(", receives ")[1].split(" in ")[1].split(",")[0] == str(recvs), (b["sends"], sends, recvs)
    ops = {i["op"] for i in instrs if i["kind"] == "kernel"}
    top = [(label, m) for label, m, _, _ in b["rows"] if label.split(" x")[0] in ops and " x" in label]
    assert 1 <= len(top) <= 5, top
    assert [m for _, m in top] == sorted((m for _, m in top), reverse=True), top
last = text[-1]
if marks:
    assert last.startswith(f"profile: {marks} figure"), (marks, last)
else:
    assert last == "profile: every figure within 2x of the cost model", last
print(f"profile: {len(blocks)} devices, step = busy + idle in both columns, transfers and top ops agree")
