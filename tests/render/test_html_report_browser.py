"""Issue 21, item 3: the HTML report reads on a phone (390 px) as on a desk (1400 px).

Headless Chromium (``/usr/bin/chromium``, which ``make test`` installs) opens the report with a
checking script added at its end, at each width: the report of sample_logs, and the report of
every agent's logs (``tests/mixed_tree.py``) with its cost per day shown by model, the chart
with the longest legend. After the charts are drawn, the script measures the page: no element
reaches past the viewport, no HTML text overflows a box that hides it, no chart text (titles,
tick labels, legends, bar labels) lies outside its chart, or outside the plot area where the
chart clips it, no bar label is hidden for want of room, no bar reaches past its axes, no colour
stands for two series of one chart, and no chart gives more than half its width to labels and
margins. A screenshot of the whole page is taken at each width as well; ``python
tests/render/test_html_report_browser.py`` saves them under ``docs/screenshots/`` (the README
shows them).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analytics.cli.commands import app
from tests.conftest import REPO, SAMPLE_LOGS
from tests.mixed_tree import write_mixed_tree

CHROMIUM = Path("/usr/bin/chromium")
WIDTHS = (390, 1400)
SCREENSHOTS = REPO / "docs" / "screenshots"

#: Run in the page once the charts are drawn: measures the laid-out page and returns what it
#: found (elements past the viewport, clipped text, the page's size).
CHECK = """new Promise(function (done) { setTimeout(function () {
  var width = document.documentElement.clientWidth, wide = [], clipped = [];
  function name(el) {
    var text = (el.textContent || "").trim().slice(0, 40);
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (el.getAttribute("class") ? "." + el.getAttribute("class").split(" ")[0] : "") +
      (text ? ' "' + text + '"' : "");
  }
  function hidden(el) {
    for (; el; el = el.parentElement) {
      var style = getComputedStyle(el);
      if (style.display === "none" || style.visibility === "hidden" || el.hidden) { return true; }
    }
    return false;
  }
  document.querySelectorAll("body *").forEach(function (el) {
    // plotly measures text in an off-screen svg of its own
    if (el.closest("#js-plotly-tester, #js-errors, script, style") || hidden(el)) { return; }
    var box = el.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) { return; }
    if (box.left < -1 || box.right > width + 1) {
      wide.push(name(el) + " spans " + Math.round(box.left) + ".." + Math.round(box.right));
    }
    var style = getComputedStyle(el);
    var ownText = Array.prototype.some.call(el.childNodes, function (node) {
      return node.nodeType === 3 && node.textContent.trim();
    });
    if (ownText && style.overflowX !== "visible" && el.scrollWidth > el.clientWidth + 1 &&
        el.tagName !== "SELECT") {
      clipped.push(name(el) + " hides " + (el.scrollWidth - el.clientWidth) + " px of text");
    }
  });
  document.querySelectorAll(".plotly-graph-div").forEach(function (chart) {
    var frame = chart.getBoundingClientRect();
    var size = chart._fullLayout._size;  // the plot area, in px from the chart's corner
    var area = {left: frame.left + size.l, right: frame.left + size.l + size.w,
      top: frame.top + size.t, bottom: frame.top + size.t + size.h, width: size.w};
    if (area.width < frame.width / 2) {
      clipped.push(chart.id + " gives " + Math.round(100 - 100 * area.width / frame.width) +
        "% of its width to labels and margins");
    }
    chart.querySelectorAll(".bars .point path").forEach(function (bar) {
      var box = bar.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) { return; }
      if (box.left < area.left - 1 || box.right > area.right + 1 ||
          box.top < area.top - 1 || box.bottom > area.bottom + 1) {
        clipped.push(chart.id + " has a bar past its axis: " + Math.round(box.left) + ".." +
          Math.round(box.right) + " in " + Math.round(area.left) + ".." + Math.round(area.right));
      }
    });
    var colours = chart._fullData.filter(function (trace) {
      return trace.visible === true && trace.showlegend;
    }).map(function (trace) {
      var marker = trace.marker || {};
      return trace.type === "bar" ? marker.color + "/" + (marker.opacity || 1) : trace.line.color;
    });
    colours.forEach(function (colour, index) {
      if (colours.indexOf(colour) !== index) {
        clipped.push(chart.id + " repeats the colour " + colour);
      }
    });
    chart.querySelectorAll("svg text").forEach(function (text) {
      if (text.classList.contains("bartext") && text.textContent.trim() && hidden(text)) {
        clipped.push(chart.id + ' hides the label "' + text.textContent + '"');
      }
      if (!text.textContent.trim() || hidden(text)) { return; }
      var box = text.getBoundingClientRect();
      if (box.width === 0) { return; }
      var inside = text.classList.contains("bartext") ? area : frame;
      if (box.left < inside.left - 1 || box.right > inside.right + 1 ||
          box.top < inside.top - 1 || box.bottom > inside.bottom + 1) {
        clipped.push(chart.id + ' text "' + text.textContent + '" at ' +
          Math.round(box.left) + ".." + Math.round(box.right) + " outside " +
          Math.round(inside.left) + ".." + Math.round(inside.right));
      }
    });
  });
  var errors = document.getElementById("js-errors");
  done({width: width, height: document.documentElement.scrollHeight,
    scrollWidth: document.documentElement.scrollWidth, wide: wide, clipped: clipped,
    charts: document.querySelectorAll(".plotly-graph-div .main-svg").length,
    errors: errors ? errors.textContent : "no error capture"});
}, 1000); })"""


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe
    (``--remote-debugging-pipe``: JSON messages ending in NUL on file descriptors 3 and 4),
    so a page can be shown at a phone's width (a window cannot be narrower than 500 px)."""

    def __init__(self, tmp_path: Path) -> None:
        if not CHROMIUM.exists():
            if os.environ.get("CI"):
                pytest.fail(f"{CHROMIUM} is missing in CI; make test installs it")
            pytest.skip(f"{CHROMIUM} is not installed (make test installs it); CI is not set")
        to_chromium, self._to = os.pipe()
        self._from, from_chromium = os.pipe()
        self._profile = tmp_path / "chromium-profile"
        # A small Python puts the child's ends of the pipes on descriptors 3 and 4, then
        # becomes Chromium (no preexec_fn: agentcost runs threads of its own).
        wire = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); "
        wire += "os.execv(sys.argv[3], sys.argv[3:])"
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                wire,
                str(to_chromium),
                str(from_chromium),
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={self._profile}",
                "--remote-debugging-pipe",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(to_chromium, from_chromium),
            env={**os.environ, "HOME": str(tmp_path)},
        )
        os.close(to_chromium)
        os.close(from_chromium)
        self._buffer = b""
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
            "sessionId"
        ]

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command (to the attached page, once there is one); its result."""
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if getattr(self, "_session", None):
            message["sessionId"] = self._session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._next()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply["result"]
                return result

    def wait_for(self, event: str) -> None:
        while self._next().get("method") != event:
            pass

    def _next(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def open(self, url: str, width: int, then: str = "") -> dict[str, Any]:
        """Show ``url`` in a viewport ``width`` px wide (a phone's below 600: mobile, with
        the page's viewport meta tag honoured), run ``then`` (a reader's action, in
        JavaScript) on it; what ``CHECK`` measured."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=900,
            deviceScaleFactor=1,
            mobile=width < 600,
        )
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        if then:
            self.call("Runtime.evaluate", expression=then)
        checked = self.call("Runtime.evaluate", expression=CHECK, awaitPromise=True,
                            returnByValue=True)  # fmt: skip
        result: dict[str, Any] = checked["result"]["value"]
        return result

    def screenshot(self, out: Path, width: int, height: int) -> None:
        """The whole page as a PNG, ``width`` px wide."""
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": min(height, 12000), "scale": 1},
        )
        out.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, OSError):
            self.call("Browser.close")
        os.close(self._to)
        os.close(self._from)
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
        shutil.rmtree(self._profile, ignore_errors=True)


def write_report(out: Path, logs: Path = SAMPLE_LOGS) -> Path:
    result = CliRunner().invoke(
        app,
        ["--no-cache", "report", str(logs), "--html", str(out), "--timezone", "UTC"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(tmp_path_factory.mktemp("report") / "report.html")


#: The reader's pick of the cost-per-day chart by model: the chart with the most series.
BY_MODEL = (
    'var view = document.getElementById("chart-4-view"); view.value = "model";'
    ' view.dispatchEvent(new Event("change"));'
)
#: The pages measured: the report of sample_logs as it opens, and the report of every
#: agent's logs (``tests/mixed_tree.py``: more models than the palette) by model.
PAGES = ("sample", "mixed by model")


@pytest.fixture(scope="module")
def measured(report: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Any]:
    """Each page measured, and its screenshot taken, at each width (one browser)."""
    where = tmp_path_factory.mktemp("browser")
    mixed = write_report(where / "mixed.html", write_mixed_tree(where / "logs"))
    browser = Browser(where)
    try:
        found = {}
        for name, page, then in (("sample", report, ""), ("mixed by model", mixed, BY_MODEL)):
            for width in WIDTHS:
                seen = found[name, width] = browser.open(page.as_uri(), width, then)
                seen["png"] = where / f"{name}-{width}.png"
                browser.screenshot(seen["png"], width, seen["height"])
        return found
    finally:
        browser.close()


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("width", WIDTHS)
def test_nothing_is_wider_than_the_window(
    measured: dict[tuple[str, int], Any], page: str, width: int
) -> None:
    seen = measured[page, width]
    assert seen["errors"] == ""
    assert seen["width"] == width
    assert seen["charts"] >= 5
    assert seen["wide"] == [], seen["wide"]
    assert seen["scrollWidth"] <= seen["width"]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("width", WIDTHS)
def test_no_text_is_clipped_no_bar_is_cut_no_colour_repeats(
    measured: dict[tuple[str, int], Any], page: str, width: int
) -> None:
    """Text and legends inside their charts, bars inside their axes, and in each chart
    each series its own colour (``CHECK``)."""
    assert measured[page, width]["clipped"] == [], measured[page, width]["clipped"]


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("width", WIDTHS)
def test_a_screenshot_is_taken_at_each_width(
    measured: dict[tuple[str, int], Any], page: str, width: int
) -> None:
    png = measured[page, width]["png"].read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == width  # the PNG header's width


def test_the_sessions_table_stacks_on_a_phone(report: Path) -> None:
    """At phone width the table's rows stack: each cell names its column."""
    page = report.read_text("utf-8")
    assert 'data-label="calls"' in page and 'data-label="cost USD' in page
    assert "@media (max-width: 640px)" in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page


if __name__ == "__main__":  # save the screenshots the README shows
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        page = write_report(where / "report.html")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser = Browser(where)
        try:
            for size in WIDTHS:
                seen = browser.open(page.as_uri(), size)
                browser.screenshot(SCREENSHOTS / f"report-{size}.png", size, seen["height"])
                print(f"report-{size}.png: {seen}", file=sys.stderr)
        finally:
            browser.close()
