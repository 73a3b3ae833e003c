#!/usr/bin/env python3
"""The lesson page's answers by default against --exhaustive (issue 24).

    bench/lesson_compare.py [--remat BIN] -- LESSON ARGS...
    bench/lesson_compare.py -- --model models/resnet-tiny.cfg --batch 8
    bench/lesson_compare.py -- --problem docs/examples/chain-8.txt --time-limit 0 --node-limit 200

Runs `remat lesson ARGS` twice, by default and with --exhaustive, and prints
one row per budget and solver strategy (and per heuristic where the two
differ): the overhead over checkpoint-all and the status in each mode,
whether the default answer was reused or not run ("not run"), and a verdict:
"same", "same, not proved" (the same cost, proved optimal only by
--exhaustive), "cheaper" or "DEARER" (the default's answer costs more, or it
has none where --exhaustive has one). Last a line with the counts and both wall
times. With time limits the solves are not deterministic (and depend on the
machine's load); with --time-limit 0 and --node-limit N they are. Exits 1
when some answer is dearer by default.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = '<script type="application/json" id="lesson-data">'


def page_data(path):
    with open(path, encoding='utf-8') as f:
        html = f.read()
    a = html.index(TAG) + len(TAG)
    return json.loads(html[a:html.index('</script>', a)])


def run(remat, args, out):
    t0 = time.monotonic()
    r = subprocess.run([remat, 'lesson', '--quiet', '--out', out] + args, capture_output=True, text=True)
    if r.returncode:
        sys.exit('remat lesson %s failed (%d): %s' % (' '.join(args), r.returncode, r.stderr))
    return page_data(out), time.monotonic() - t0


def pct(d, r):
    if not r['ok']:
        return '-'
    return '%+.2f%%' % (100.0 * (r['cost'] / d['base_cost'] - 1)) if d['base_cost'] > 0 else '%g' % r['cost']


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--remat', default=os.path.join(ROOT, 'build', 'remat'))
    ap.add_argument('args', nargs='+', help='remat lesson arguments (after --)')
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='remat-lesson-compare-')
    fast, tf = run(a.remat, a.args, os.path.join(tmp, 'default.html'))
    slow, ts = run(a.remat, a.args + ['--exhaustive'], os.path.join(tmp, 'exhaustive.html'))
    names = [s[0] for s in fast['strategies']]
    print('%-10s %-16s %-22s %-22s %s' % ('budget', 'strategy', 'default', '--exhaustive', 'verdict'))
    counts = {'same': 0, 'same, not proved': 0, 'cheaper': 0, 'DEARER': 0}
    for bf, bs in zip(fast['budgets'], slow['budgets']):
        assert bf['bytes'] == bs['bytes']
        share = '%.1f%%' % (100.0 * bf['bytes'] / fast['noremat'])
        for j, name in enumerate(names):
            rf, rs = bf['runs'][j], bs['runs'][j]
            cf = rf['cost'] if rf['ok'] else float('inf')
            cs = rs['cost'] if rs['ok'] else float('inf')
            verdict = 'same' if cf == cs else 'cheaper' if cf < cs else 'DEARER'
            if verdict == 'same' and rs['status'] == 'optimal' and rf['status'] != 'optimal':
                verdict = 'same, not proved'  # the same cost; only --exhaustive proved it optimal
            counts[verdict] += 1
            solver = name in ('lp_round', 'milp', 'best')
            if not solver and verdict == 'same':
                continue
            note = ' (not run)' if rf.get('not_run') else ''
            print('%-10s %-16s %-22s %-22s %s' % (
                share, name, pct(fast, rf) + ' ' + rf['status'] + note, pct(slow, rs) + ' ' + rs['status'], verdict))
    print('answers: %d same, %d the same cost but not proved optimal, %d cheaper, %d dearer by default; '
          'default %.1f s, --exhaustive %.1f s' % (counts['same'], counts['same, not proved'], counts['cheaper'],
                                                   counts['DEARER'], tf, ts))
    return 1 if counts['DEARER'] else 0


if __name__ == '__main__':
    sys.exit(main())
