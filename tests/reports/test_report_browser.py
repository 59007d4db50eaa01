"""The dashboard in a real browser: headless Chromium opens index.html from file:// with no network.

Skips only when no Chromium is installed (Debian: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import io

import pytest

from seqbench.reports.build import build_report
from tests.report_support import demo_study, journal_storage
from tests.reports import chromium

BROWSER = chromium.find()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("browser") / "outputs"
    out_dir.mkdir()
    study = demo_study(journal_storage(out_dir / "optuna.journal"), out_dir)
    rep = build_report(study, str(out_dir / "optuna.journal"), out_dir / "reports" / "ld_demo", out_dir)
    broken = rep.folder.parent / "broken.html"  # proves the checks below can fail
    broken.write_text(
        "<html><head><script src='missing.js'></script></head><body>"
        "<script>console.error('bad thing'); undefined_fn();</script></body></html>"
    )
    with chromium.Chromium(BROWSER) as browser:
        result = browser.load(chromium.file_url(rep.index))
        bad = browser.load(chromium.file_url(broken), settle_s=1)
    (rep.folder.parent / "screenshot.png").write_bytes(result.screenshot)  # kept beside the report for a look
    return rep, result, bad


def test_no_console_errors(page):
    _, result, bad = page
    assert result.errors == []
    joined = "\n".join(bad.errors)
    assert "missing.js" in joined and "console.error: bad thing" in joined and "undefined_fn" in joined


def test_every_figure_container_rendered(page):
    rep, result, _ = page
    expected = rep.index.read_text().count('class="plotly-graph-div"')
    assert len(result.figures) == expected >= 9  # heatmap ... Optuna views, diagnostics
    for f in result.figures:
        assert f["rendered"] and f["svgs"] >= 1 and f["traces"] >= 1, f
        assert f["width"] > 300 and f["height"] > 200 and f["marks"] > 20, f
    titles = " | ".join(f["title"] for f in result.figures)
    for part in (
        "val/acc over",
        "vs task.delay",
        "Length generalisation",
        "Learning curves",
        "Optimization History",
        "Importances",
        "Parallel Coordinate",
        "Gradient through time",
        "W_hh",
    ):
        assert part in titles


def test_screenshot_is_not_blank(page):
    Image = pytest.importorskip("PIL.Image")
    _, result, _ = page
    img = Image.open(io.BytesIO(result.screenshot)).convert("RGB")
    assert img.width == 1280 and img.height > 3000  # the whole page, not the viewport
    colors = img.getcolors(maxcolors=img.width * img.height)  # [(count, (r, g, b))]
    assert len(colors) > 1000  # text, heatmap colour ramps, lines: a blank or failed page has a handful
    non_white = sum(n for n, c in colors if sum(c) < 720)
    assert non_white / (img.width * img.height) > 0.05
