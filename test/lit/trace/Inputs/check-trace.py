# check-trace.py PLAN.json TRACE.json[,TRACE.json...] STEPS [overlap]: each
# trace of `mpc run --trace` or `mpc compile --trace-predicted`
# (plan/TraceEvents.h) holds
# every instruction of every device once per step, slices of one track that
# never overlap, flows that pair up inside their slices, and per device an
# idle share (otherData.bubble) that the slices give: 1 - kernel time / the
# steps' windows (a step's window ends where the next step's begins, when
# that is earlier: `mpc run` overlaps steps). With "overlap": two devices
# computed at the same time in at least one of the traces (on a machine
# busy with other work the OS may run the threads in turn in any one run).
import json, sys
plan = json.load(open(sys.argv[1]))
steps = int(sys.argv[3])
devices = [d["name"] for d in plan["devices"]]
overlap = len(sys.argv) > 4


def check(trace):
    """Asserts one trace's rules; returns its report lines and whether two
    devices computed at the same time."""
    lines = []
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert [names[i] for i in range(len(devices))] == devices, (names, devices)
    slices = [e for e in events if e["ph"] == "X"]
    for d, dev in enumerate(plan["devices"]):
        n = len(dev["instrs"])
        for s in range(1, steps + 1):
            got = sorted(e["args"]["instr"] for e in slices if e["pid"] == d and e["args"]["step"] == s)
            assert got == list(range(n)), (dev["name"], s, len(got), n)
        # One track: its slices never overlap (a device runs one at a time).
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if e["pid"] == d)
        for (a0, a1), (b0, b1) in zip(mine, mine[1:]):
            assert b0 >= a1 - 1e-3, (dev["name"], a0, a1, b0)
    lines.append(f"trace: {len(devices)} devices, {steps} steps, every instruction once per step")
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys(), (len(starts), len(ends))

    def within(ev):
        return any(x["pid"] == ev["pid"] and x["ts"] <= ev["ts"] <= x["ts"] + x["dur"] for x in slices)
    assert all(within(e) for e in list(starts.values()) + list(ends.values()))
    lines.append(f"flows: {len(starts)} paired")
    # The bubble, recomputed from the slices.
    windows = {}
    for e in slices:
        w = windows.setdefault(e["args"]["step"], [e["ts"], e["ts"] + e["dur"]])
        w[0], w[1] = min(w[0], e["ts"]), max(w[1], e["ts"] + e["dur"])
    order = sorted(windows)
    total = sum(min(windows[s][1], windows[n][0]) - windows[s][0] for s, n in zip(order, order[1:]))
    total += windows[order[-1]][1] - windows[order[-1]][0] if order else 0
    for d, dev in enumerate(plan["devices"]):
        busy = sum(e["dur"] for e in slices if e["pid"] == d and e["cat"] == "kernel")
        want = 1 - busy / total if total else 0
        got = trace["otherData"]["bubble"][dev["name"]]
        assert abs(got - want) < 1e-3, (dev["name"], got, want)
    lines.append(f"bubble: {trace['otherData']['source']}, every device's idle share matches its slices")
    if not overlap:
        return lines, False
    kernels = [(e["pid"], e["ts"], e["ts"] + e["dur"]) for e in slices if e["cat"] == "kernel"]
    both = any(p != q and a0 < b1 and b0 < a1
               for (p, a0, a1) in kernels for (q, b0, b1) in kernels)
    return lines, both


results = [check(json.load(open(f))) for f in sys.argv[2].split(",")]
for lines, _ in results[1:]:
    assert lines == results[0][0], (lines, results[0][0])
print("\n".join(results[0][0]))
if overlap:
    assert any(both for _, both in results), "no two devices computed at the same time"
    print("overlap: devices computed at the same time")
