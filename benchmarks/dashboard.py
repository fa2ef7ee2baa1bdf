"""``python -m benchmarks.dashboard``: asv's HTML dashboard of the committed
results (``reports/asv/results``), working offline.

``asv publish`` writes the page into ``--out`` (default ``.asv/html``, which
git ignores). The scripts and styles asv's page loads from CDNs come from npm
instead, pinned in ``benchmarks/www/package.json`` and its lockfile
(installed once with ``npm ci`` into ``.asv/www``), are copied beside the
page, and the page is rewritten to load them. Prints the page's path;
``--serve PORT`` then serves it on 127.0.0.1; ``--screenshot PNG`` saves a
headless Chromium screenshot of one benchmark's graphs.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

from benchmarks import REPO

PACKAGE = os.path.join(REPO, "benchmarks", "www")
MODULES = os.path.join(REPO, ".asv", "www")
# what asv 0.6's www/index.html loads from CDNs -> the same from the npm packages
VENDOR = {
    "https://code.jquery.com/jquery-3.3.1.min.js": "jquery/dist/jquery.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": "flot/jquery.flot.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": "flot/jquery.flot.time.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js":
        "flot/jquery.flot.selection.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js":
        "flot/jquery.flot.categories.js",
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js":
        "flot-orderbars/js/jquery.flot.orderBars.js",
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js":
        "stupid-table-plugin/stupidtable.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": "blueimp-md5/js/md5.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": "bootstrap/dist/js/bootstrap.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css":
        "bootstrap/dist/css/bootstrap.min.css",
}
ALSO = ["bootstrap/dist/fonts"]  # bootstrap.min.css loads its glyph font from ../fonts
TAG = re.compile(r"<(script|link)\b[^>]*>")
REMOTE = re.compile(r"""(?:src|href)=["']https?://""")
ERROR_TEXT = "failed to load"  # asv's error.html: "One or more external (JavaScript) dependencies ..."
GRAPH = "bench_search.EndToEnd.time_search_warm?x-axis=ndata&p-nperiods=10000&y-axis-scale=log"


def node_modules() -> str:
    """The pinned npm packages, installed with ``npm ci`` on first use."""
    lock, installed = (os.path.join(d, "package-lock.json") for d in (PACKAGE, MODULES))
    if not (os.path.exists(installed) and filecmp.cmp(lock, installed, shallow=False)):
        os.makedirs(MODULES, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(os.path.join(PACKAGE, name), MODULES)
        subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"], cwd=MODULES,
                       check=True, stdout=subprocess.DEVNULL)
    return os.path.join(MODULES, "node_modules")


def localise(html: str) -> str:
    """asv's page with each CDN script and style loaded from ``vendor/``
    (no integrity attributes: those hash the CDN's minified files); a
    ValueError if any other remote address is left."""
    def local(match):
        tag = match.group(0)
        for url, path in VENDOR.items():
            if f'"{url}"' in tag:
                tag = tag.replace(f'"{url}"', f'"vendor/{path}"')
                return re.sub(r'\s(integrity|crossorigin|referrerpolicy)="[^"]*"', "", tag)
        return tag

    html = TAG.sub(local, html)
    remote = [m.group(0) for m in TAG.finditer(html) if REMOTE.search(m.group(0))]
    if remote:
        raise ValueError(f"asv's page loads more from the network than VENDOR covers: {remote}")
    return html


def build(out: str) -> str:
    """Publish the committed results into ``out``, offline; the page's path."""
    subprocess.run([sys.executable, "-m", "asv", "publish", "--config", os.path.join(REPO, "asv.conf.json"),
                    "--html-dir", out], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    modules = node_modules()
    for path in [*VENDOR.values(), *ALSO]:
        source, target = os.path.join(modules, path), os.path.join(out, "vendor", path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        (shutil.copytree(source, target, dirs_exist_ok=True) if os.path.isdir(source)
         else shutil.copy(source, target))
    page = os.path.join(out, "index.html")
    with open(page) as f:
        html = localise(f.read())
    with open(page, "w") as f:
        f.write(html)
    return page


@contextlib.contextmanager
def served(directory: str, port: int = 0):
    """``directory`` over HTTP on 127.0.0.1; yields its base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=directory)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browse(url: str, *flags: str) -> str:
    """Headless Chromium's stdout for ``url`` with ``flags`` (e.g.
    ``--dump-dom``), after the page's scripts have had 10 s of virtual time;
    every host but 127.0.0.1 unreachable."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--virtual-time-budget=10000",
             *flags, url], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(REPO, ".asv", "html"))
    parser.add_argument("--serve", type=int, metavar="PORT", help="then serve it on 127.0.0.1:PORT")
    parser.add_argument("--screenshot", metavar="PNG", help="then save a screenshot of GRAPH's graphs")
    parser.add_argument("--graph", default=GRAPH, help="a benchmark and asv's graph settings")
    args = parser.parse_args(argv)
    page = build(os.path.abspath(args.out))
    print(page)
    if args.screenshot:
        with served(args.out) as url:
            browse(f"{url}#{args.graph}", f"--screenshot={os.path.abspath(args.screenshot)}",
                   "--window-size=1600,1000")
        print(f"wrote {args.screenshot}")
    if args.serve is not None:
        with served(args.out, args.serve) as url:
            print(f"serving {url} (Ctrl-C stops)", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
