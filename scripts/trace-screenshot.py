#!/usr/bin/env python3
"""PNG screenshot of a Chrome trace-event JSON file.

Starts headless Chromium and drives the Performance panel of the DevTools
frontend that Chromium itself bundles and serves on its remote-debugging port
(http://127.0.0.1:PORT/devtools/trace_app.html?loadTimelineFromURL=...), so
it works offline. chrome://tracing is not used: recent Chromium builds turn
it off as an internal debugging page. The trace is handed to the viewer by
intercepting the viewer's own request for it (CDP Fetch domain). Every
process track and thread track is expanded, processes are ordered by their
process_sort_index (then pid), the details pane is hidden, and the view is
zoomed: to the first --steps steps when the "X" events carry args.step, to
--start-ms/--end-ms (from the trace start) when given, else to the whole
trace. The PNG is cropped below the last track.

Needs:  apt-get install chromium python3-websocket

usage: trace-screenshot.py TRACE.json OUT.png [--width W] [--height H]
           [--steps N] [--start-ms A --end-ms B] [--timeout S]
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

try:
    import websocket
except ImportError:
    # Debian's python3-websocket, when another python3 comes first on PATH.
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import websocket
    except ImportError:
        websocket = None


def die(msg):
    print(f"trace-screenshot: error: {msg}", file=sys.stderr)
    sys.exit(1)


def view_settings(trace, args):
    """Process order and zoom window (trace microseconds or None)."""
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list) or not events:
        die("no trace events in the file")
    sort_index = {e.get("pid"): e.get("args", {}).get("sort_index", 0)
                  for e in events if e.get("ph") == "M" and e.get("name") == "process_sort_index"}
    pids = sorted({e["pid"] for e in events if isinstance(e.get("pid"), int)},
                  key=lambda p: (sort_index.get(p, 0), p))
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    if not timed:
        die("no timed events in the file")
    t0 = min(e["ts"] for e in timed)
    if args.start_ms is not None and args.end_ms is not None:
        return pids, [t0 + args.start_ms * 1e3, t0 + args.end_ms * 1e3]
    slices = [e for e in timed if e.get("ph") == "X"
              and isinstance(e.get("args", {}).get("step"), int)]
    if args.steps > 0 and slices:
        first = min(e["args"]["step"] for e in slices)
        shown = [e for e in slices if e["args"]["step"] < first + args.steps]
        lo = min(e["ts"] for e in shown)
        hi = max(e["ts"] + e.get("dur", 0) for e in shown)
        pad = (hi - lo) * 0.01
        return pids, [lo - pad, hi + pad]
    return pids, None


class Browser:
    """Headless Chromium plus one CDP connection to its page."""

    def __init__(self, exe):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.profile = tempfile.mkdtemp(prefix="trace-shot-")
        self.log = open(os.path.join(self.profile, "chromium.log"), "w+")
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--hide-scrollbars",
             f"--remote-debugging-port={self.port}", f"--user-data-dir={self.profile}",
             "about:blank"],
            stdout=self.log, stderr=self.log, start_new_session=True)
        self.ws, self.next_id, self.on_event = None, 0, None

    def connect(self, timeout):
        deadline = time.time() + timeout
        while self.ws is None:
            if self.proc.poll() is not None:
                self.log.seek(0)
                die(f"chromium exited with status {self.proc.returncode}:\n{self.log.read()[-2000:]}")
            if time.time() > deadline:
                die(f"chromium did not open its debugging port within {timeout} s")
            try:
                url = f"http://127.0.0.1:{self.port}/json/list"
                pages = [t for t in json.load(urllib.request.urlopen(url, timeout=2))
                         if t.get("type") == "page"]
                if pages:
                    self.ws = websocket.create_connection(
                        pages[0]["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
            except OSError:
                time.sleep(0.2)

    def call(self, method, **params):
        self.next_id += 1
        cid = self.next_id
        self.ws.send(json.dumps({"id": cid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == cid:
                if "error" in msg:
                    die(f"{method}: {msg['error'].get('message')}")
                return msg["result"]
            if "method" in msg and self.on_event:
                self.on_event(msg)

    def send(self, method, **params):  # no wait for the reply
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            return {"error": r["exceptionDetails"].get("exception", {}).get("description", "exception")}
        return r["result"].get("value")

    def close(self):
        if self.ws:
            self.ws.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


# Runs in the viewer page; true once the trace is on screen.
READY_JS = """(async () => {
  try {
    const T = await import('/devtools/panels/timeline/timeline.js');
    const fc = T.TimelinePanel.TimelinePanel.instance().flameChart.getMainFlameChart();
    return !!(fc.timelineData() && fc.timelineData().groups.length);
  } catch (e) { return false; }
})()"""

# Expands, orders, zooms; returns the height of the content to keep.
ARRANGE_JS = """(async (pids, win) => {
  const T = await import('/devtools/panels/timeline/timeline.js');
  const TB = (await import('/devtools/services/trace_bounds/trace_bounds.js')).TraceBounds;
  const view = T.TimelinePanel.TimelinePanel.instance().flameChart;
  const fc = view.getMainFlameChart();
  view.detailsSplitWidget.hideSidebar();
  const closeDialogs = root => root.querySelectorAll('*').forEach(e => {  // e.g. the shortcuts help
    if (e.tagName === 'DIALOG' && e.open) e.close();
    if (e.shadowRoot) closeDialogs(e.shadowRoot);
  });
  closeDialogs(document);
  const groups = fc.timelineData().groups;
  groups.forEach((g, i) => fc.expandGroup(i, true));
  for (const pid of pids.slice().reverse()) {      // last moved ends on top
    const i = groups.findIndex(g => (g.style.nestingLevel || 0) === 0 && g.name.endsWith(`(${pid})`));
    for (let k = 0; i >= 0 && k < groups.length; k++) fc.moveGroupUp(i);
  }
  if (win) {
    const bm = TB.BoundsManager.instance(), all = bm.state().micro.entireTraceBounds;
    const min = Math.max(all.min, win[0]), max = Math.min(all.max, win[1]);
    if (max > min) bm.setTimelineVisibleWindow({min, max, range: max - min});
  }
  await new Promise(r => setTimeout(r, 500));
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  return fc.element.getBoundingClientRect().top + fc.totalContentHeight() + 8;
})(%s, %s)"""


def main():
    ap = argparse.ArgumentParser(description="Screenshot a Chrome trace-event JSON file.")
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=800)
    ap.add_argument("--steps", type=int, default=2, help="steps to show (0: whole trace)")
    ap.add_argument("--start-ms", type=float)
    ap.add_argument("--end-ms", type=float)
    ap.add_argument("--timeout", type=float, default=60, help="seconds per wait")
    args = ap.parse_args()

    exe = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
    if not exe:
        die("chromium not found (apt-get install chromium)")
    if websocket is None:
        die("python websocket module not found (apt-get install python3-websocket)")
    try:
        with open(args.trace, "rb") as f:
            data = f.read()
        pids, win = view_settings(json.loads(data), args)
    except (OSError, ValueError) as e:
        die(f"cannot read {args.trace}: {e}")

    b = Browser(exe)
    try:
        b.connect(args.timeout)
        trace_url = f"http://127.0.0.1:{b.port}/devtools/trace-screenshot-input.json"

        def serve_trace(msg):
            if msg["method"] == "Fetch.requestPaused":
                b.send("Fetch.fulfillRequest", requestId=msg["params"]["requestId"],
                       responseCode=200, body=base64.b64encode(data).decode(),
                       responseHeaders=[{"name": "Content-Type", "value": "application/json"}])
        b.on_event = serve_trace
        b.call("Fetch.enable", patterns=[{"urlPattern": trace_url}])
        b.call("Emulation.setDeviceMetricsOverride", width=args.width, height=args.height,
               deviceScaleFactor=1, mobile=False)
        b.call("Page.enable")
        b.call("Page.addScriptToEvaluateOnNewDocument", source=(
            "localStorage.setItem('hide-shortcuts-dialog-for-test', 'true');"
            "localStorage.setItem('disable-auto-show-rpp-sidebar-for-test', 'true');"))
        b.call("Page.navigate", url=(
            f"http://127.0.0.1:{b.port}/devtools/trace_app.html"
            "?disable-auto-performance-sidebar-reveal"
            f"&loadTimelineFromURL={urllib.parse.quote(trace_url, safe='')}"))
        deadline = time.time() + args.timeout
        while b.js(READY_JS) is not True:
            if time.time() > deadline:
                die(f"the DevTools performance viewer did not show the trace within "
                    f"{args.timeout} s (not a trace-event JSON file?)")
            time.sleep(0.5)
        height = b.js(ARRANGE_JS % (json.dumps(pids), json.dumps(win)))
        if not isinstance(height, (int, float)):
            die(f"could not arrange the viewer: {height}")
        clip = {"x": 0, "y": 0, "width": args.width,
                "height": min(args.height, int(height)), "scale": 1}
        png = b.call("Page.captureScreenshot", format="png", clip=clip)["data"]
    except (OSError, websocket.WebSocketException) as e:
        die(f"lost the connection to chromium: {e!r}")
    finally:
        b.close()
    try:
        with open(args.out, "wb") as f:
            f.write(base64.b64decode(png))
    except OSError as e:
        die(f"cannot write {args.out}: {e}")
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
