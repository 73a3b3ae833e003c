#!/usr/bin/env python3
"""The page `remat lesson` writes, tested in a real browser (run by scripts/test).

For docs/examples/two-layer.txt and models/resnet-tiny.cfg at batch 4, runs
build/remat lesson, opens the page in headless Chromium driven over the
DevTools protocol (CDP on file descriptors 3 and 4: NUL-terminated JSON), and
checks that
  1. the page renders (its script marks <body data-ready="1">),
  2. moving the budget slider (its value set, an 'input' event dispatched)
     redraws the R/S grids: their SVG differs between two budgets whose
     schedules differ (read from the page's own data), and the memory chart
     and explain's text follow,
  3. no exception was thrown and no error was logged (Runtime, Log, console),
  4. a screenshot (PNG, decoded here with zlib) is not blank: many distinct
     colours and a sizeable share of pixels that are not white.
Python's standard library only. Chromium is required: without it the test
fails (scripts/setup installs it). Every wait has a timeout, Chromium is
killed at the end, and the whole run takes some 10 to 20 s.

    tests/scripts/test_lesson_page.py [--remat BIN] [--screenshot PATH]

--screenshot PATH saves a screenshot (1200x800) of the resnet-tiny page as it
opens, the README's docs/img/lesson.png; that page is then made with more
budgets and longer solves (a minute or two) than the test's. Prints "ok - ..." / "FAIL - ..." per check and
last "lesson page: N passed, N failed"; exits non-zero when a check failed.
"""
import argparse
import base64
import hashlib
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WIDTH, HEIGHT = 1200, 800


class Fail(Exception):
    pass


class Browser:
    """Headless Chromium with the DevTools protocol on a pipe: it reads
    commands from its fd 3 and writes replies and events to its fd 4."""

    def __init__(self, exe, profile):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        args = [exe, '--headless=new', '--no-sandbox', '--remote-debugging-pipe', '--user-data-dir=' + profile,
                '--no-first-run', '--no-default-browser-check', '--disable-gpu', '--disable-extensions',
                '--disable-background-networking', '--disable-component-update', '--disable-sync',
                '--hide-scrollbars', '--mute-audio', '--window-size=%d,%d' % (WIDTH, HEIGHT), 'about:blank']
        # The shell puts the two pipe ends on fds 3 and 4, then becomes Chromium.
        shim = 'exec "$0" "$@" 3<&%d 4>&%d' % (to_child_r, from_child_w)
        self.proc = subprocess.Popen(['sh', '-c', shim] + args, pass_fds=(to_child_r, from_child_w),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b''
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.send('Browser.close', timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)  # its own session: Chromium's helpers go too
            self.proc.wait(timeout=5)
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass

    def _read_message(self, deadline):
        while b'\0' not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail('no message from Chromium in time')
            ready, _, _ = select.select([self.from_child], [], [], left)
            if ready:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise Fail('Chromium closed the DevTools pipe (exit %s)' % self.proc.poll())
                self.buf += chunk
        msg, self.buf = self.buf.split(b'\0', 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, timeout=15):
        """Sends a command and returns its result; events that arrive
        meanwhile are kept in self.events."""
        self.next_id += 1
        msg = {'id': self.next_id, 'method': method, 'params': params or {}}
        if session:
            msg['sessionId'] = session
        os.write(self.to_child, json.dumps(msg).encode() + b'\0')
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get('id') == self.next_id:
                if 'error' in reply:
                    raise Fail('%s: %s' % (method, reply['error']))
                return reply.get('result', {})
            self.events.append(reply)

    def wait_event(self, method, timeout=15):
        deadline = time.monotonic() + timeout
        while True:
            for k, ev in enumerate(self.events):
                if ev.get('method') == method:
                    return self.events.pop(k)
            self.events.append(self._read_message(deadline))


class Page:
    def __init__(self, browser):
        self.b = browser
        target = browser.send('Target.createTarget', {'url': 'about:blank'})['targetId']
        self.session = browser.send('Target.attachToTarget', {'targetId': target, 'flatten': True})['sessionId']
        for domain in ('Page', 'Runtime', 'Log'):
            self.send(domain + '.enable')
        self.send('Emulation.setDeviceMetricsOverride',
                  {'width': WIDTH, 'height': HEIGHT, 'deviceScaleFactor': 1, 'mobile': False})

    def send(self, method, params=None, timeout=15):
        return self.b.send(method, params, session=self.session, timeout=timeout)

    def load(self, path):
        self.b.events.clear()
        self.send('Page.navigate', {'url': 'file://' + os.path.abspath(path)})
        self.b.wait_event('Page.loadEventFired')
        self.wait_for('document.body.dataset.ready === "1"')

    def eval(self, expr):
        r = self.send('Runtime.evaluate', {'expression': expr, 'returnByValue': True})
        if 'exceptionDetails' in r:
            raise Fail('evaluating %r threw: %s' % (expr, r['exceptionDetails'].get('text')))
        return r['result'].get('value')

    def wait_for(self, expr, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.eval(expr):
                return
            time.sleep(0.05)
        raise Fail('timed out waiting for %s' % expr)

    def errors(self):
        """Exceptions, console errors and log errors seen so far."""
        out = []
        for ev in self.b.events:
            m, p = ev.get('method'), ev.get('params', {})
            if m == 'Runtime.exceptionThrown':
                out.append('exception: %s' % json.dumps(p.get('exceptionDetails', {}))[:300])
            elif m == 'Runtime.consoleAPICalled' and p.get('type') in ('error', 'assert'):
                out.append('console.%s: %s' % (p['type'], json.dumps(p.get('args'))[:300]))
            elif m == 'Log.entryAdded' and p.get('entry', {}).get('level') == 'error':
                out.append('log: %s' % p['entry'].get('text', '')[:300])
        return out


# ---- PNG ----

def png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise Fail('the screenshot is not a PNG')
    pos, idat, width = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b'IHDR':
            width, height, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise Fail('unexpected PNG format: depth %d, colour type %d, interlace %d' % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
    if width is None:
        raise Fail('the PNG has no header')
    raw = zlib.decompress(b''.join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise Fail('bad PNG filter %d' % f)
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def check_not_blank(png):
    w, h, bpp, rows = png_pixels(png)
    if (w, h) != (WIDTH, HEIGHT):
        raise Fail('screenshot is %dx%d, not %dx%d' % (w, h, WIDTH, HEIGHT))
    colours, plain = set(), 0
    for row in rows[::2]:
        for x in range(0, w * bpp, 2 * bpp):
            px = row[x:x + 3]
            colours.add(px)
            plain += px[0] > 245 and px[1] > 245 and px[2] > 245
    total = len(rows[::2]) * len(range(0, w * bpp, 2 * bpp))
    share = 1 - plain / total
    if len(colours) < 50 or share < 0.15:
        raise Fail('the screenshot looks blank: %d colours, %.1f%% of pixels not white' % (len(colours), 100 * share))
    return len(colours), share


# ---- the checks ----

def linear_problem(path, layers):
    """Checkmate's linear graph (2 layers + 1 nodes; scheduler/random_graphs.h
    has its twin), above the page's 400-node limit for R and S."""
    lines = ['problem %d 4096' % (2 * layers + 1)]
    for i in range(layers):
        lines.append('%d f%d forward 1 1024 %s' % (i, i, i - 1 if i else '-'))
    lines.append('%d loss loss 1 16 %d' % (layers, layers - 1))
    for j in range(layers):
        i = layers - 1 - j  # the forward node this one differentiates
        lines.append('%d f%d.grad backward 1 1024 %s' % (layers + 1 + j, i, ','.join(map(str, sorted({i, layers + j})))))
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def page_data(path):
    html = open(path, encoding='utf-8').read()
    start = html.index('<script type="application/json" id="lesson-data">')
    start = html.index('>', start) + 1
    return json.loads(html[start:html.index('</script>', start)])


def default_strategy(data):
    names = [s[0] for s in data['strategies']]
    for n in ('best', 'milp'):
        if n in names:
            return names.index(n)
    return len(names) - 1


def check_page(page, html, name, screenshot=None):
    data = page_data(html)
    page.load(html)
    if screenshot:
        # The README's picture: the page as it opens.
        png = base64.b64decode(page.send('Page.captureScreenshot', {'format': 'png'})['data'])
        check_not_blank(png)
        with open(screenshot, 'wb') as f:
            f.write(png)
    k, ns = len(data['budgets']), len(data['strategies'])
    # A strategy and two budgets where its schedules differ: the no-remat
    # peak's and the lowest other that has one (the page's default strategy
    # where it has such a pair). Without R and S (large graphs), the memory
    # timelines tell them apart.
    key = lambda r: (r.get('re'), r.get('S'), r['mem'])
    runs = lambda b, j: data['budgets'][b]['runs'][j]
    pairs = [(j, b) for j in range(ns) for b in range(k - 1, 0, -1)
             if runs(0, j)['ok'] and runs(b, j)['ok'] and key(runs(b, j)) != key(runs(0, j))]
    if not pairs:
        raise Fail('%s: no two budgets with different schedules in the data' % name)
    si, other = next((p for p in pairs if p[0] == default_strategy(data)), pairs[0])
    page.eval('(() => { const s = document.getElementById("strategy"); s.value = "%d";'
              ' s.dispatchEvent(new Event("change")); })()' % si)
    strategy = data['strategies'][si][0]
    page.wait_for('document.getElementById("rs").dataset.strategy === %s' % json.dumps(strategy))
    snaps = []
    for b in (0, other):
        # The slider runs from the lower bound (0) to the no-remat peak (K - 1).
        page.eval('(() => { const s = document.getElementById("budget"); s.value = "%d";'
                  ' s.dispatchEvent(new Event("input", {bubbles: true})); })()' % (k - 1 - b))
        page.wait_for('document.getElementById("rs").dataset.budget === "%d"' % b)
        snaps.append(page.eval('[document.getElementById("rs").innerHTML,'
                               ' document.getElementById("memory").innerHTML,'
                               ' document.getElementById("explain").textContent,'
                               ' document.querySelectorAll("#rs .cell-re").length]'))
    if snaps[0][1] == snaps[1][1] or snaps[0][2] == snaps[1][2]:
        raise Fail('%s: the memory chart or the explanation did not follow the slider' % name)
    if data['rs']:
        rs0, rs1 = (hashlib.sha256(s[0].encode()).hexdigest() for s in snaps)
        if rs0 == rs1 or '<svg' not in snaps[0][0]:
            raise Fail('%s: the R/S grid did not change between budgets 0 and %d' % (name, other))
        want = len(data['budgets'][other]['runs'][si]['re']) // 2
        if snaps[0][3] != 0 or snaps[1][3] != want:
            raise Fail('%s: recomputed cells drawn %d then %d, want 0 then %d' % (name, snaps[0][3], snaps[1][3], want))
        what = '%s: budgets 0 and %d draw different grids (%d recomputed cells)' % (strategy, other, want)
    else:
        if 'left out' not in snaps[0][0] or '<svg' in snaps[0][0]:
            raise Fail('%s: a graph of %d nodes should say its R/S grids are left out' % (name, data['n']))
        what = 'no R/S grids (%d nodes, said so); %s: budgets 0 and %d draw different timelines' % (
            data['n'], strategy, other)
    if not page.eval('document.getElementById("verdict").textContent').startswith(strategy + ':'):
        raise Fail('%s: the verdict line does not follow the strategy selector' % name)
    page.eval('window.scrollTo(0, 0)')
    png = base64.b64decode(page.send('Page.captureScreenshot', {'format': 'png'})['data'])
    colours, share = check_not_blank(png)
    errors = page.errors()
    if errors:
        raise Fail('%s: the page reported errors: %s' % (name, '; '.join(errors)))
    return '%s; screenshot %d colours, %.0f%% not white' % (what, colours, 100 * share)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--remat', default=os.path.join(ROOT, 'build', 'remat'), type=os.path.abspath)
    ap.add_argument('--screenshot', type=os.path.abspath,
                    help='save the resnet-tiny page screenshot here (docs/img/lesson.png)')
    args = ap.parse_args()
    t0 = time.monotonic()
    passed = failed = 0

    def report(ok, what):
        nonlocal passed, failed
        print(('ok - ' if ok else 'FAIL - ') + what, flush=True)
        passed += ok
        failed += not ok

    tmp = tempfile.mkdtemp(prefix='remat-lesson-')
    browser = None
    try:
        exe = shutil.which('chromium') or shutil.which('chromium-browser')
        if not exe:
            raise Fail('chromium is not installed (scripts/setup installs it): the lesson page cannot be tested')
        # Tight solver limits keep the test short (the page is the same kind
        # either way); the README's screenshot is worth better answers.
        limits = ['--budgets', '12', '--time-limit', '10', '--node-limit', '10'] if args.screenshot else \
            ['--budgets', '6', '--time-limit', '0.5', '--node-limit', '2']
        cases = [
            ('two-layer', ['--problem', 'docs/examples/two-layer.txt'], None),
            ('resnet-tiny', ['--model', 'models/resnet-tiny.cfg', '--batch', '4'] + limits, args.screenshot),
            ('linear-451', ['--problem', linear_problem(os.path.join(tmp, 'linear.txt'), 225), '--budgets', '3',
                            '--strategies', 'checkpoint_all,chen_sqrtn,chen_greedy,ogc'], None),
        ]
        pages = []
        for name, opts, shot in cases:
            html = os.path.join(tmp, name + '.html')
            r = subprocess.run([args.remat, 'lesson', '--quiet', '--out', html] + opts, capture_output=True, text=True,
                               timeout=300, cwd=ROOT)
            ok = r.returncode == 0 and os.path.exists(html)
            report(ok, 'remat lesson writes the %s page (exit %d)%s' % (name, r.returncode, '' if ok else ': ' + r.stderr))
            if ok:
                pages.append((name, html, shot))
        browser = Browser(exe, os.path.join(tmp, 'profile'))
        page = Page(browser)
        for name, html, shot in pages:
            try:
                report(True, '%s page in Chromium: %s' % (name, check_page(page, html, name, shot)))
            except Fail as e:
                report(False, str(e))
    except Fail as e:
        report(False, str(e))
    finally:
        if browser:
            browser.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print('lesson page: %.1f s' % (time.monotonic() - t0))
    print('lesson page: %d passed, %d failed' % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()
