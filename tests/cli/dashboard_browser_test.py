#!/usr/bin/env python3
"""The dashboard in a real browser: Debian's headless Chromium, driven through chromedriver's WebDriver
HTTP protocol (plain urllib, no client library), against a real `crucible train` head on loopback.

  * the page loads and goes live, and its numbers change while the run goes on (driven by progress:
    the scored count must move, however long that takes within the limit);
  * a click on "scale benchmarker to 2" shows in `crucible status` within 2 s;
  * /metrics parses with the Prometheus client's own parser and shows the change;
  * after the run, `crucible report --html` opens from a file with its charts drawn.
Screenshots of the page and the report are kept in ARTIFACTS (dashboard.png, report.png).

usage: dashboard_browser_test.py CRUCIBLE ARTIFACTS"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

crucible, artifacts = sys.argv[1], sys.argv[2]
os.makedirs(artifacts, exist_ok=True)
PROGRESS_LIMIT_S = 300  # a bound on a hung run, not a schedule: every wait below ends at a condition


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        fail(f"{method} {url}: HTTP {e.code}: {e.read()[:600].decode(errors='replace')}")


class Browser:
    """The few WebDriver commands this test needs."""

    def __init__(self):
        for binary in ("chromium", "chromedriver"):
            if not shutil.which(binary):
                fail(f"{binary} is not installed (scripts/install_deps installs chromium and chromium-driver)")
        self.port = free_port()
        self.driver = subprocess.Popen(["chromedriver", f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        until = time.time() + 30
        while True:
            try:
                http("GET", self.base + "/status")
                break
            except OSError:
                if time.time() > until:
                    fail("chromedriver did not start")
                time.sleep(0.2)
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": shutil.which("chromium"),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,2000", "--allow-file-access-from-files"]}}}}
        self.session = http("POST", self.base + "/session", caps, timeout=120)["value"]["sessionId"]

    def cmd(self, method, path, body=None):
        return http(method, f"{self.base}/session/{self.session}{path}", body, timeout=120)["value"]

    def open(self, url):
        self.cmd("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def element(self, css):
        v = self.cmd("POST", "/element", {"using": "css selector", "value": css})
        return next(iter(v.values()))

    def click(self, css):
        self.cmd("POST", f"/element/{self.element(css)}/click", {})

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.cmd("GET", "/screenshot")))

    def close(self):
        try:
            http("DELETE", f"{self.base}/session/{self.session}")
        finally:
            self.driver.terminate()
            self.driver.wait(10)


def wait_for(what, check, limit=PROGRESS_LIMIT_S, every=0.1):
    until = time.time() + limit
    while True:
        v = check()
        if v:
            return v
        if time.time() > until:
            fail(f"{what}: not within {limit} s")
        time.sleep(every)


class StatusClient:
    """`crucible status`'s request (docs/wire_protocol.md 3.9) from this process, so timing it does not
    count the CLI's own start (its shared libraries take seconds to load on a small machine)."""

    def __init__(self, endpoint):
        import msgpack
        import zmq
        self.msgpack, self.zmq = msgpack, zmq
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)

    def benchmarkers(self):
        body = {"command": "status", "role": "", "count": 0, "args": {"timeout_s": "2"}}
        self.sock.send(self.msgpack.packb({"v": 1, "kind": "control", "from": "browser-test", "body": body},
                                          use_bin_type=True))
        if not self.sock.poll(2000):
            return None
        report = self.msgpack.unpackb(self.sock.recv(), raw=False)["body"]
        return {r["role"]: r["actors"] for r in report["roles"]}.get("benchmarker")


def status(endpoint):
    out = subprocess.run([crucible, "status", "--connect", endpoint, "--json"], capture_output=True, text=True,
                         timeout=30)
    return json.loads(out.stdout) if out.returncode == 0 else None


run_dir = tempfile.mkdtemp(prefix="crucible-dashboard-browser-")
head = subprocess.Popen([crucible, "train", "--set", f"run.dir={run_dir}/run", "--set", "run.max_steps=1000",
                         "--set", "run.max_minutes=10", "--set", "dashboard.listen=127.0.0.1:0", "--set",
                         "dashboard.controls=on", "--set", "cluster.listen=tcp://127.0.0.1:0"],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
url = endpoint = None
seen = []
while url is None or endpoint is None:
    line = head.stdout.readline()
    if not line:
        fail("the head ended before printing its URL:\n" + "".join(seen))
    seen.append(line)
    if line.startswith("dashboard: http"):
        url = line.split(" ", 1)[1].strip()
    if line.startswith("cluster: listening on "):
        endpoint = line.split()[3]
print("dashboard at", url.split("#")[0], "; head at", endpoint, flush=True)
# The rest of the head's output is kept for a failure's message (a pipe left unread would block it).
log = open(os.path.join(artifacts, "dashboard_head.log"), "w")
log.writelines(seen)
pump = subprocess.Popen(["cat"], stdin=head.stdout, stdout=log)

browser = Browser()
try:
    browser.open(url)
    wait_for("the page goes live", lambda: browser.js("return document.getElementById('conn').textContent") == "live")
    first = int(browser.js("return document.getElementById('scored').textContent"))
    later = wait_for("the scored count moves on the page",
                     lambda: (lambda v: v if v > first else None)(
                         int(browser.js("return document.getElementById('scored').textContent"))))
    print(f"the page's scored count went from {first} to {later} while the run went on", flush=True)
    wait_for("the step's charts are drawn", lambda: browser.js("return document.querySelectorAll('canvas').length") >= 4)

    before = status(endpoint)
    if before is None or before["roles"]["benchmarker"]["actors"] != 1:
        fail(f"the run should start with one benchmarker: {before}")
    client = StatusClient(endpoint)
    if client.benchmarkers() != 1:
        fail("the status request does not see the one benchmarker")
    browser.js("document.getElementById('scale-count-benchmarker').value = '2';")
    t0 = time.time()
    browser.click("#scale-button-benchmarker")
    while client.benchmarkers() != 2:
        if time.time() - t0 > 2.0:
            fail("the click did not show in the head's status within 2 s")
        time.sleep(0.02)
    took = time.time() - t0
    t1 = time.time()
    shown = status(endpoint)
    if shown is None or shown["roles"]["benchmarker"]["actors"] != 2:
        fail(f"crucible status does not show 2 benchmarkers: {shown}")
    print(f"the click showed in the head's status after {took:.2f} s; `crucible status` printed it "
          f"(the command itself took {time.time() - t1:.2f} s)", flush=True)
    wait_for("the page says it scaled", lambda: "scaled to 2" in browser.js("return document.getElementById('message').textContent"), limit=10)
    wait_for("the page's roles show 2 benchmarkers", lambda: browser.js(
        "return document.querySelector('#role-benchmarker td[data-key=actors]').textContent") == "2", limit=10)
    browser.screenshot(os.path.join(artifacts, "dashboard.png"))

    metrics = urllib.request.urlopen(url.split("#")[0] + "metrics", timeout=10).read().decode()
    families = {f.name: f for f in text_string_to_metric_families(metrics)}
    actors = {s.labels["role"]: s.value for s in families["crucible_actors"].samples}
    if actors.get("benchmarker") != 2:
        fail(f"/metrics shows benchmarker actors {actors.get('benchmarker')}, not 2")
    if families["crucible_evaluations"].samples[0].value < later:
        fail("/metrics counts fewer evaluations than the page showed")
    print(f"/metrics: {len(families)} families parsed by prometheus_client", flush=True)
    # The report needs a step: the run goes on until the learner has taken one.
    wait_for("the learner's first step shows on the page",
             lambda: int(browser.js("return document.getElementById('step').textContent")) >= 1, every=0.5)

    def last_reward_shown():
        with open(f"{run_dir}/run/metrics.jsonl") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        return rows and browser.js("return document.getElementById('reward').textContent") == \
            "%.3f" % rows[-1]["reward_mean"]

    # The head's status carries the learner's last reward, not a placeholder.
    wait_for("the page shows the last step's reward from metrics.jsonl", last_reward_shown, every=0.5)
finally:
    browser.close()
    head.send_signal(signal.SIGINT)  # as Ctrl-C: drain, checkpoint, stop
    try:
        head.wait(PROGRESS_LIMIT_S)
    except subprocess.TimeoutExpired:
        head.kill()
        fail("the head did not stop after SIGINT")
    pump.wait(30)
    log.close()
if head.returncode != 0:
    fail(f"the head exited {head.returncode} (log: {artifacts}/dashboard_head.log)")

report = os.path.join(run_dir, "report.html")
out = subprocess.run([crucible, "report", f"{run_dir}/run", "--html", report], capture_output=True, text=True)
if out.returncode != 0:
    fail("crucible report --html: " + out.stderr)
browser = Browser()
try:
    browser.open("file://" + report)
    wait_for("the report's charts are drawn",
                     lambda: int(browser.js("return document.body.getAttribute('data-drawn') || '0'")) >= 5, limit=30)
    canvases = browser.js("return Array.from(document.querySelectorAll('canvas')).filter(c => c.width > 0).length")
    if canvases < 4:
        fail(f"the report drew {canvases} line charts, not 4")
    browser.screenshot(os.path.join(artifacts, "report.png"))
    drawn = int(browser.js("return document.body.getAttribute('data-drawn')"))
    print(f"the report drew {drawn} charts ({canvases} line charts)", flush=True)
finally:
    browser.close()
shutil.rmtree(run_dir, ignore_errors=True)
print("PASS", flush=True)
