"""Headless Chromium driven through its DevTools protocol over a pipe (`--remote-debugging-pipe`:
the browser reads commands from its fd 3 and writes answers and events to its fd 4, each a JSON
message ended by a NUL byte), so the browser tests need no driver binary and no client library.

    with Browser() as b:
        page = b.open("file:///tmp/report.html")
        page.eval("document.title")
        page.screenshot("shot.png")

`find_chromium()` names the browser (Debian's `chromium`), or None.
"""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium():
    """The path of a Chromium on PATH (RPROFILE_CHROMIUM overrides), or None."""
    env = os.environ.get("RPROFILE_CHROMIUM")
    if env:
        return env
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process; `open(url)` gives a `Page` (a tab of the given size)."""

    def __init__(self, path=None, timeout=30.0):
        self.path = path or find_chromium()
        if self.path is None:
            raise BrowserError("no Chromium found (apt-get install chromium)")
        self.timeout = timeout
        self.proc = None
        self._next_id = 0
        self._buffer = b""
        self._events = []

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def start(self):
        self._profile = tempfile.mkdtemp(prefix="rprofile-chromium-")
        # Our end writes to the browser's fd 3 and reads its fd 4.
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds():
            # Moved above 4 first, so that neither end lands on the other's place. dup2 makes
            # 3 and 4 inheritable; every other descriptor of ours is not (PEP 446), so no
            # close_fds is needed: pass_fds would check 3 and 4 before they exist here, which
            # fails (EBADF) wherever they are not open already, as outside pytest.
            import fcntl

            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser_r, from_browser_w)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)
            for fd in high:
                os.close(fd)

        args = [self.path, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--mute-audio", "--hide-scrollbars",
                "--remote-debugging-pipe", "--user-data-dir=" + self._profile, "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=child_fds,
                                     close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.call("Target.setDiscoverTargets", discover=True)

    def close(self):
        if self.proc is None:
            return
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)
        self.proc = None

    # -- the protocol -------------------------------------------------------------------------

    def _send(self, message):
        data = json.dumps(message).encode() + b"\0"
        while data:
            n = os.write(self._to_browser, data)
            data = data[n:]

    def _receive(self, deadline):
        """The next message from the browser."""
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("no answer from Chromium in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError("Chromium closed its pipe (exit status %s)"
                                   % self.proc.poll())
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method, session=None, timeout=None, **params):
        """Sends one command and returns its result; events that come first are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError("%s: %s" % (method, answer["error"].get("message")))
                return answer.get("result", {})
            if "method" in answer:
                self._events.append(answer)

    def wait_event(self, method, session=None, timeout=None):
        """The first event `method` (of `session`) kept or coming, removed from the queue."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for i, e in enumerate(self._events):
                if e["method"] == method and (session is None or e.get("sessionId") == session):
                    return self._events.pop(i)
            self._events.append(self._receive(deadline))
            self._events = [e for e in self._events if "method" in e]

    def open(self, url, width=1280, height=900):
        """A new tab showing `url`, once its load event fired."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session, target)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)
        page.navigate(url)
        return page


class Page:
    """One tab."""

    def __init__(self, browser, session, target):
        self.browser = browser
        self.session = session
        self.target = target

    def call(self, method, **params):
        return self.browser.call(method, session=self.session, **params)

    def navigate(self, url):
        result = self.call("Page.navigate", url=url)
        if result.get("errorText"):
            raise BrowserError("cannot open %s: %s" % (url, result["errorText"]))
        self.browser.wait_event("Page.loadEventFired", self.session)

    def eval(self, expression, timeout=None):
        """The value of a JavaScript expression (awaited when it is a promise); page errors
        are raised."""
        result = self.browser.call("Runtime.evaluate", session=self.session, timeout=timeout,
                                   expression=expression, returnByValue=True,
                                   awaitPromise=True)
        if "exceptionDetails" in result:
            d = result["exceptionDetails"]
            text = d.get("exception", {}).get("description") or d.get("text")
            raise BrowserError("JavaScript error: %s" % text)
        return result["result"].get("value")

    def wait_for(self, expression, timeout=10.0):
        """Waits until `expression` is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError("timed out waiting for %s" % expression)
            time.sleep(0.02)

    def click(self, selector):
        """A real mouse click (pressed and released) at the middle of the element."""
        box = self.eval("(() => { const e = document.querySelector(%s); if (!e) return null;"
                        " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                        " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
                        % json.dumps(selector))
        if box is None:
            raise BrowserError("nothing matches %s" % selector)
        x, y = box
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)

    def drag(self, x0, y0, x1, y1, steps=10):
        """A real mouse drag: pressed at (x0, y0), moved in `steps` to (x1, y1), released."""
        self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x0, y=y0)
        self.call("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left",
                  buttons=1, clickCount=1)
        for k in range(1, steps + 1):
            self.call("Input.dispatchMouseEvent", type="mouseMoved", x=x0 + (x1 - x0) * k / steps,
                      y=y0 + (y1 - y0) * k / steps, button="left", buttons=1)
        self.call("Input.dispatchMouseEvent", type="mouseReleased", x=x1, y=y1, button="left",
                  buttons=0, clickCount=1)

    def type(self, selector, text):
        """Focuses the element and types `text` as key presses."""
        self.eval("document.querySelector(%s).focus()" % json.dumps(selector))
        self.call("Input.insertText", text=text)

    def console_errors(self):
        """Exceptions the page threw since it was opened."""
        return [e for e in self.browser._events
                if e["method"] == "Runtime.exceptionThrown" and e.get("sessionId") == self.session]

    def screenshot(self, path, full_page=False):
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.browser.call("Target.closeTarget", targetId=self.target)
