"""benchmarks.dashboard: asv's page of the committed results with local
copies of what it loads from CDNs, opened offline in headless Chromium."""

import importlib.util
import os
import shutil

import pytest

from benchmarks import dashboard

needs_asv = pytest.mark.skipif(importlib.util.find_spec("asv") is None, reason="asv is not installed")


def test_cdn_addresses_become_local_copies_and_nothing_remote_is_left():
    tag = ('<script src="https://code.jquery.com/jquery-3.3.1.min.js" integrity="sha256-x" '
           'crossorigin="anonymous" onerror="js_load_failure()"></script>')
    assert dashboard.localise(tag) == ('<script src="vendor/jquery/dist/jquery.min.js" '
                                       'onerror="js_load_failure()"></script>')
    with pytest.raises(ValueError, match="more from the network"):
        dashboard.localise('<link rel="stylesheet" href="https://example.org/x.css">')


@needs_asv
def test_every_address_of_asvs_page_has_a_local_copy():
    import asv

    with open(os.path.join(os.path.dirname(asv.__file__), "www", "index.html")) as f:
        assert "https://" not in "".join(dashboard.TAG.findall(dashboard.localise(f.read())))


@needs_asv
@pytest.mark.skipif(not dashboard.chromium() or not shutil.which("npm"),
                    reason="needs a Chromium (Debian package chromium) and npm")
def test_dashboard_draws_the_graphs_offline_in_headless_chromium(tmp_path):
    out = tmp_path / "html"
    page = dashboard.build(str(out))
    with open(os.path.join(os.path.dirname(__import__("asv").__file__), "www", "index.html")) as f:
        (out / "cdn.html").write_text(f.read())  # asv's page as published upstream: CDN addresses
    png = tmp_path / "graphs.png"
    with dashboard.served(str(out)) as url:
        dom = dashboard.browse(f"{url}#{dashboard.GRAPH}", "--dump-dom")
        dashboard.browse(f"{url}#{dashboard.GRAPH}", f"--screenshot={png}", "--window-size=1200,800")
        offline = dashboard.browse(f"{url}cdn.html#{dashboard.GRAPH}", "--dump-dom")
    assert page == str(out / "index.html")
    assert dashboard.ERROR_TEXT not in dom
    assert 'class="flot-base"' in dom and "backend-simple" in dom  # flot drew the graph and its legend
    assert png.stat().st_size > 20000
    assert dashboard.ERROR_TEXT in offline  # without the local copies: asv's error page
