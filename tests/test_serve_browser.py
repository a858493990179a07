"""The page of ``bitextforge serve`` in a real headless Chromium: a run of the shipped quick-start
data is loaded, a threshold is typed and another dragged, the counts and sample rows shown are
checked against ``bitextforge run`` with the same bounds, the recipe is saved from the page and
rerun. Screenshots of each step go to ``tests/screenshots/`` (not committed).

Needs Debian's ``chromium`` (``apt-get install chromium``) and Playwright's Python client
(``pip install playwright``; never ``playwright install``): skipped with the reason otherwise.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"
pytestmark = pytest.mark.long
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def cli(*args):
    return run_cli(*args, cwd=ROOT)


def tsv_rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (each test opens its own page): a launch costs
    seconds of CPU."""
    if not Path(CHROMIUM).exists():
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="needs Playwright's Python client (pip install playwright)")
    pytest.importorskip("starlette", reason="needs the serve extra (pip install '.[serve]')")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def server(tmp_path):
    run = tmp_path / "run"
    res = cli("run", ROOT / "recipes" / "quickstart.yaml", "-q", "-o", run,
              "--set", "steps[3].cache=true", "--set", "steps[4].cache=true")
    assert res.returncode == 0, res.stderr
    save = tmp_path / "saved"
    save.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "bitextforge.cli", "serve", str(run), "--port",
                             "0", "--save-dir", str(save)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        pytest.fail(f"serve did not start: {line}{proc.stderr.read()}")
    try:
        yield line.split(" at ", 1)[1].split()[0], run, save
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_move_thresholds_in_the_page_then_save_and_rerun(browser, server, tmp_path):
    url, run, save = server
    SHOTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("body[data-ready='1']", timeout=60_000)
    page.screenshot(path=SHOTS / "1-loaded.png", full_page=True)
    counts = page.locator("#counts-3")
    assert (counts.get_attribute("data-in"), counts.get_attribute("data-kept")) == ("300", "290")

    # type a bound: length_ratio max 2.0 -> 1.5
    page.fill("#max-3", "1.5")
    page.press("#max-3", "Enter")
    page.wait_for_function("document.querySelector('#counts-3').dataset.kept !== '290'")
    page.locator("#step-3").screenshot(path=SHOTS / "2-typed-max.png")

    # drag the language_id min bound on its histogram to the right
    page.locator("#step-4").scroll_into_view_if_needed()
    before = page.get_attribute("#counts-4", "data-kept")
    box = page.locator("#plot-4 .shapelayer path").first.bounding_box()
    assert box is not None, "no draggable bound drawn on the histogram"
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 40, y, steps=8)
    page.mouse.up()
    page.wait_for_function(f"document.querySelector('#counts-4').dataset.kept !== '{before}'")
    dragged = float(page.input_value("#min-4"))
    assert dragged > -0.5
    page.locator("#step-4").screenshot(path=SHOTS / "3-dragged-min.png")

    # what bitextforge run decides with the same bounds
    ref = tmp_path / "ref"
    res = cli("run", ROOT / "recipes" / "quickstart.yaml", "-q", "-o", ref,
              "--set", "steps[3].keep.max=1.5", "--set", f"steps[4].keep.min={dragged!r}")
    assert res.returncode == 0, res.stderr
    manifest = json.loads((ref / "manifest.json").read_text())
    for i in (3, 4):
        st = manifest["steps"][i]
        shown = page.locator(f"#counts-{i}")
        assert (int(shown.get_attribute("data-in")), int(shown.get_attribute("data-kept"))) == (
            st["rows_in"], st["rows_out"])
    assert page.inner_text("#total-kept").replace(",", "") == str(manifest["output"]["rows"])
    rejected = {r["id"]: r["rejected_by"] for r in tsv_rows(ref / "rejected.tsv")}
    kept = {r["id"] for r in tsv_rows(ref / "corpus.tsv")}
    for i in (3, 4):
        # the sample on each side of the bound: every row shown is decided as run decides it
        page.click(f"#tab-rejected-{i}")
        page.wait_for_function(f"document.querySelector('#tab-rejected-{i}').className === 'on'")
        ids = [row.split(".")[0] for row in page.locator(f"#rows-{i} tr[data-id]").evaluate_all(
            "rows => rows.map(r => r.dataset.id)")]
        assert ids and all(rejected.get(k, "").startswith(f"steps[{i}]:") for k in ids), ids
        page.click(f"#tab-kept-{i}")
        page.wait_for_function(f"document.querySelector('#tab-kept-{i}').className === 'on'")
        page.wait_for_function(f"document.querySelector('#rows-{i} tr[data-id]') !== null")
        ids = [row.split(".")[0] for row in page.locator(f"#rows-{i} tr[data-id]").evaluate_all(
            "rows => rows.map(r => r.dataset.id)")]
        assert ids and all(k in kept or int(rejected[k][6]) > i for k in ids), ids
    # text search in the sample
    page.fill("#search-3", "Zug")
    page.press("#search-3", "Enter")
    # the page info already reads "... of N" before the search answers: wait for the rows to change
    page.wait_for_function("(() => { const rows = document.querySelectorAll('#rows-3 tr[data-id]');"
                           " return rows.length > 0 && Array.from(rows).every("
                           "r => r.innerText.toLowerCase().includes('zug')); })()")
    for text in page.locator("#rows-3 tr[data-id]").all_inner_texts():
        assert "zug" in text.lower()

    # save from the page, rerun the saved recipe: the rows the page showed, from the score cache
    page.fill("#save-name", "chosen.yaml")
    page.click("#save")
    page.wait_for_function("document.querySelector('#save-result').dataset.path !== undefined")
    page.screenshot(path=SHOTS / "4-saved.png")
    saved = save / "chosen.yaml"
    assert page.get_attribute("#save-result", "data-path") == str(saved)
    assert "runs from any directory" in page.text_content("#save-result")
    res = run_cli("run", saved, "-q", cwd=tmp_path)  # not the repository root: paths are absolute
    assert res.returncode == 0, res.stderr
    out = Path(f"{run}-chosen")
    assert (out / "corpus.tsv").read_text() == (ref / "corpus.tsv").read_text()
    m2 = json.loads((out / "manifest.json").read_text())
    assert m2["steps"][4]["info"]["score_cache"]["computed"] == 0
    assert not errors, errors


def test_clean_steps_show_before_and_after(browser, tmp_path):
    """Issue #34: each clean step's panel shows its counts and the texts it changed, before and
    after, the characters it took out struck through and those it put in marked."""
    src, tgt = tmp_path / "c.de", tmp_path / "c.en"
    src.write_text("Tom &amp; Jerry sind Freunde.\nDas  ist gut.\nEin normaler Satz.\n",
                   encoding="utf-8")
    tgt.write_text("Tom &amp; Jerry are friends.\nThat is good.\nA normal sentence.\n",
                   encoding="utf-8")
    recipe = tmp_path / "clean.yaml"
    run = tmp_path / "run"
    recipe.write_text(f"name: clean-view\ninput: {{src: '{src}', tgt: '{tgt}'}}\nsteps:\n"
                      "  - clean: html.v1\n  - clean: unicode.v1\n  - filter: dedupe.v1\n"
                      f"output: {{dir: '{run}'}}\n", encoding="utf-8")
    res = cli("run", recipe, "-q")
    assert res.returncode == 0, res.stderr
    proc = subprocess.Popen([sys.executable, "-m", "bitextforge.cli", "serve", str(run), "--port",
                             "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    line = proc.stdout.readline()
    try:
        assert "http://" in line, line + proc.stderr.read()
        SHOTS.mkdir(exist_ok=True)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(line.split(" at ", 1)[1].split()[0])
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        page.locator("#step-0").screenshot(path=SHOTS / "5-clean-before-after.png")
        manifest = json.loads((run / "manifest.json").read_text())
        for i, (ids, struck, added) in enumerate([(["0.0.src", "0.0.tgt"], ["amp;", "amp;"], []),
                                                   (["1.0.src"], ["␣"], [])]):
            assert page.get_attribute(f"#changecounts-{i}", "data-changed") == str(
                manifest["steps"][i]["counts"]["changed"])
            rows = page.locator(f"#changes-{i} tr[data-id]")
            assert rows.evaluate_all("rows => rows.map(r => r.dataset.id)") == ids
            assert page.locator(f"#changes-{i} del").all_inner_texts() == struck
            assert page.locator(f"#changes-{i} ins").all_inner_texts() == added
        assert page.locator("#changes-0 td.after").first.inner_text() == \
            "Tom & Jerry sind Freunde."
        assert not errors, errors
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_log_odds_axis_draws_probabilities_and_drags_in_scores(browser, tmp_path):
    """Scores crowded near 1 are drawn on a log-odds axis when the box is ticked; a bound dragged
    there is typed back as a score (0.99, not its log-odds 4.6)."""
    import math
    import random

    rng = random.Random(5)
    lines = ["id\tsrc\ttgt\tlength\tpair_prob"] + [
        f"{i}\ta{i} b\tc{i} d\t{2 + i % 3}\t{1 - 10 ** -rng.uniform(0, 5):.6g}" for i in range(300)]
    (tmp_path / "scores.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "c.de").write_text("a\n", encoding="utf-8")
    (tmp_path / "c.en").write_text("b\n", encoding="utf-8")
    (tmp_path / "prob.yaml").write_text(
        f"name: prob\ninput: {{src: {tmp_path / 'c.de'}, tgt: {tmp_path / 'c.en'}}}\n"
        f"output: {{dir: {tmp_path / 'out'}}}\n"
        "steps:\n  - filter: length.v1\n    keep: {max: 100}\n"
        "  - filter: length_ratio.v1\n    as: pair_prob\n    keep: {min: 0.9}\n",
        encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bitextforge.cli", "serve",
                             str(tmp_path / "prob.yaml"), "--scores", str(tmp_path / "scores.tsv"),
                             "--port", "0", "--no-save"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    try:
        assert "http://" in line, line + proc.stderr.read()
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(line.split(" at ", 1)[1].split()[0])
        page.wait_for_selector("body[data-ready='1']", timeout=60_000)
        title = "document.querySelector('#plot-1').layout.xaxis.title.text"
        assert page.evaluate(title) == "pair_prob"
        done = page.evaluate("document.body.dataset.decided")
        page.check("#axis-logit")
        page.wait_for_function(f"document.body.dataset.decided !== '{done}'")
        assert page.evaluate(title) == "pair_prob (log-odds axis)"
        assert page.evaluate("document.querySelector('#plot-0').layout.xaxis.title.text") == \
            "length"  # whole numbers: not a probability, not redrawn
        x0 = page.evaluate("document.querySelector('#plot-1').layout.shapes[0].x0")
        assert x0 == pytest.approx(math.log(0.9 / 0.1))  # the min bound, at its log-odds
        done = page.evaluate("document.body.dataset.decided")
        page.evaluate(f"Plotly.relayout('plot-1', {{'shapes[0].x0': {math.log(99)}, "
                      f"'shapes[0].x1': {math.log(99)}}})")
        page.wait_for_function(f"document.body.dataset.decided !== '{done}'")
        assert float(page.input_value("#min-1")) == pytest.approx(0.99)
        assert errors == []
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
