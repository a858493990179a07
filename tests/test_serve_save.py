"""``bitextforge serve``'s saved recipes and requests under load: a save never overwrites a file
serve did not write; a saved recipe runs from any directory; on a recipe that ``extends:``
another it is a short recipe extending that file; duplicate keys in request JSON are refused;
identical decisions are made once and off the event loop; probability-like scores can be drawn
on a log-odds axis."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

from bitextforge.recipe.load import KeepSpec, load_recipe  # noqa: E402
from bitextforge.api import run_recipe  # noqa: E402
from bitextforge.serve.data import load_run, load_scores  # noqa: E402
from bitextforge.serve.save import save_recipe  # noqa: E402

BASE_URL = "http://127.0.0.1:8765"
JSON = {"Content-Type": "application/json"}
SRC = [f"w {'x ' * (n % 9)}".strip() for n in range(30)]
TGT = [f"v {'y ' * ((n * 5) % 11)}".strip() for n in range(30)]
#: a recipe whose paths are all relative to the directory it is run from
BASE = """# the base recipe
name: base
input: {src: data/c.de, tgt: data/c.en}
output: {dir: runs/base}
progress: false
steps:
  - filter: length.v1
    with: {side: src}
    keep: {max: 7}
  - filter: length_ratio.v1
    keep: {max: 3}
"""


def kept_keys(run_dir: Path) -> list[tuple[int, int]]:
    """(id, variant) of the rows a run kept, in order."""
    lines = (run_dir / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    i, v = head.index("id"), head.index("variant")
    return [(int(r.split("\t")[i]), int(r.split("\t")[v])) for r in lines[1:]]


def page_keys(data, dec) -> list[tuple[int, int]]:
    """(id, variant) of the rows the page keeps under ``dec``."""
    kept = dec.rejected_at == len(data.steps)
    return list(zip(data.ids[kept].tolist(), data.variant[kept].tolist()))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with data/, the base recipe and a recipe extending it; cwd is there."""
    home = tmp_path / "project"
    (home / "data").mkdir(parents=True)
    (home / "data" / "c.de").write_text("".join(s + "\n" for s in SRC), encoding="utf-8")
    (home / "data" / "c.en").write_text("".join(s + "\n" for s in TGT), encoding="utf-8")
    (home / "base.yaml").write_text(BASE, encoding="utf-8")
    (home / "child.yaml").write_text(
        "# a variant: longer source lines\nextends: base.yaml\nname: child\n"
        "output: {dir: runs/child}\nsteps[0]:\n  keep: {max: 12, min: 2}\n", encoding="utf-8")
    monkeypatch.chdir(home)
    return home


def client_of(data, save: Path | None):
    from starlette.testclient import TestClient

    from bitextforge.serve.app import create_app

    return TestClient(create_app(data, save), base_url=BASE_URL, raise_server_exceptions=False)


def test_save_never_overwrites_a_file_serve_did_not_write(project, tmp_path):
    """A save under the name of an unrelated .yaml replaced it; now it is refused (409, one
    line) and the file left as it was, while serve's own saved file may be saved again."""
    run_recipe(load_recipe("base.yaml"), progress=False)
    save = tmp_path / "saved"
    save.mkdir()
    (save / "mine.yaml").write_text("name: precious\n", encoding="utf-8")
    client = client_of(load_run("runs/base"), save)
    r = client.post("/api/export", json={"name": "mine.yaml", "keep": {"1": {"max": 2}}})
    assert r.status_code == 409, r.text
    assert r.json()["error"].startswith("mine.yaml: ") and "did not write" in r.json()["error"]
    assert "\n" not in r.json()["error"]
    assert (save / "mine.yaml").read_text(encoding="utf-8") == "name: precious\n"
    assert sorted(p.name for p in save.iterdir()) == ["mine.yaml"]  # no temporary file left
    for bound in (2, 2.5):  # a new name, then the same name again: serve wrote it
        r = client.post("/api/export", json={"name": "new.yaml", "keep": {"1": {"max": bound}}})
        assert r.status_code == 200, r.text
        assert load_recipe(save / "new.yaml").steps[1].keep.max == bound
    gone = client_of(load_run("runs/base"), tmp_path / "gone")  # removed after serve started
    r = gone.post("/api/export", json={"name": "new.yaml"})
    assert r.status_code == 400 and r.json() == {
        "error": f"{tmp_path / 'gone'}: cannot save a recipe there (No such file or directory)"}


def test_duplicate_keys_in_request_json_are_refused(project, tmp_path):
    """json.loads kept the last of two equal keys, so the bounds decided were not all the bounds
    sent; the recipe loader refuses duplicates, and so does the API now."""
    run_recipe(load_recipe("base.yaml"), progress=False)
    save = tmp_path / "saved"
    save.mkdir()
    client = client_of(load_run("runs/base"), save)
    for raw, key in (('{"1": {"max": 1.5}, "1": {"max": 3}}', "1"),
                     ('{"1": {"max": 1.5, "max": 3}}', "max")):
        r = client.get("/api/decide", params={"keep": raw})
        assert r.status_code == 400 and r.json() == {"error": f"keep: duplicate key {key!r}"}
        r = client.post("/api/export", headers=JSON, content='{"name": "a.yaml", "keep": %s}' % raw)
        assert r.status_code == 400 and r.json() == {"error": f"body: duplicate key {key!r}"}
    r = client.post("/api/export", headers=JSON, content='{"name": "a.yaml", "name": "b.yaml"}')
    assert r.status_code == 400 and r.json() == {"error": "body: duplicate key 'name'"}
    assert list(save.iterdir()) == []


def test_saved_recipe_runs_from_any_directory(project, tmp_path, monkeypatch):
    """The saved recipe's input paths were relative to the directory the run started in, so it
    failed from any other. Now they are absolute, and its header says where it came from."""
    run_recipe(load_recipe("base.yaml"), progress=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # serve started from another folder than the run
    data = load_run(project / "runs" / "base")
    saved = save_recipe(data, {1: KeepSpec(max=2)}, elsewhere / "tight.yaml")
    text = saved.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0].startswith("# saved by bitextforge serve (")
    assert f"# the run shown: {project / 'runs' / 'base'}" in lines
    assert f"# its paths are absolute, so it runs from any directory: bitextforge run " \
        f"{elsewhere / 'tight.yaml'}" in lines
    assert f"src: {project / 'data' / 'c.de'}" in text and "# the base recipe" in text
    third = tmp_path / "third"
    third.mkdir()
    monkeypatch.chdir(third)
    res = run_recipe(load_recipe(saved), progress=False)
    assert res.output_dir == project / "runs" / "base-tight"
    assert kept_keys(res.output_dir) == page_keys(data, data.decide({1: KeepSpec(max=2)}))


def test_saved_recipe_of_an_extending_recipe_extends_it(project, tmp_path):
    """On a recipe with extends:, "Save recipe" wrote the whole filled recipe (every default)
    under a note that it was "not the recipe that ran". Now it extends that recipe and sets only
    the bounds changed and the output; a bound cleared on the page is written as null."""
    run_recipe(load_recipe("child.yaml"), progress=False)
    data = load_run("runs/child")
    keeps = {0: KeepSpec(min=3), 1: KeepSpec(max=2)}  # max 12 cleared: it bound no row
    saved = save_recipe(data, keeps, project / "short.yaml")
    text = saved.read_text(encoding="utf-8")
    assert "not the recipe that ran" not in text
    assert len(text.splitlines()) <= 20, text
    body = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert body[0] == f"extends: {project / 'child.yaml'}"
    recipe = load_recipe(saved)
    assert recipe.steps[0].keep.min == 3 and recipe.steps[0].keep.max is None
    assert recipe.steps[1].keep.max == 2 and recipe.name == "child"
    assert recipe.input.src == str(project / "data" / "c.de")
    res = run_recipe(recipe, progress=False)
    dec = data.decide(keeps)
    assert dec.unscored.sum() == 0 and kept_keys(res.output_dir) == page_keys(data, dec)


def test_identical_decisions_are_made_once_and_off_the_event_loop(project):
    """Decisions ran one after another on the event loop: every other request waited behind
    them, and the same bounds were decided again for each request. Now they run in worker
    threads and identical bounds asked together are decided once."""
    from bitextforge.serve.app import create_app
    from bitextforge.serve.decisions import Decisions

    run_recipe(load_recipe("base.yaml"), progress=False)
    data = load_run("runs/base")
    app = create_app(data)
    assert app.state.data is data
    started = threading.Event()

    def slow(keeps):
        started.set()
        time.sleep(0.6)
        return data.decide(keeps)

    app.state.decisions = Decisions(data, decide=slow)
    keep = json.dumps({"1": {"max": 2}})

    async def main():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            asks = [asyncio.create_task(client.get("/api/decide", params={"keep": keep}))
                    for _ in range(12)]
            while not started.is_set():
                await asyncio.sleep(0.01)
            t0 = time.perf_counter()
            other = await client.get("/favicon.ico")
            waited = time.perf_counter() - t0
            answers = await asyncio.gather(*asks)
            return other, waited, answers

    other, waited, answers = asyncio.run(main())
    assert other.status_code == 204 and waited < 0.4  # not behind the decision
    assert {r.status_code for r in answers} == {200}
    assert len({json.dumps(r.json(), sort_keys=True) for r in answers}) == 1
    assert app.state.decisions.made == 1
    expected = data.summary(data.decide({1: KeepSpec(max=2)}))
    got = answers[0].json()
    assert got["kept"] == expected["kept"] and got["histograms"] == json.loads(
        json.dumps(expected["histograms"]))


def test_probability_scores_can_be_drawn_on_a_log_odds_axis(project, tmp_path):
    """With a words budget on a probability score the kept rows sat in a sliver of the axis
    (0.9937 to 1.0); a log-odds axis spreads them. Scores in [0, 1] get it on request;
    other scores stay on their own axis."""
    rng = np.random.default_rng(3)
    n = 400
    p = 1.0 - 10.0 ** -rng.uniform(0.0, 5.0, n)  # crowded towards 1, as classifiers score
    lines = ["id\tsrc\ttgt\tlength\tpair_prob"] + [
        f"{i}\ta{i} b\tc{i} d e\t{2 + i % 5}\t{v:.6g}" for i, v in enumerate(p)]
    (project / "scores.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (project / "prob.yaml").write_text(
        "name: prob\ninput: {src: data/c.de, tgt: data/c.en}\noutput: {dir: runs/prob}\n"
        "steps:\n  - filter: length.v1\n    keep: {max: 100}\n"
        "  - filter: length_ratio.v1\n    as: pair_prob\n    keep: {words: 300}\n",
        encoding="utf-8")
    data = load_scores(project / "prob.yaml", project / "scores.tsv")
    client = client_of(data, None)
    steps = client.get("/api/run").json()["steps"]
    assert [st["probability"] for st in steps] == [False, True]
    shares = {}
    for axis in ("score", "logit"):
        r = client.get("/api/decide", params={"axis": axis})
        assert r.status_code == 200, r.text
        h = r.json()["histograms"]
        assert h["0"]["axis"] == "score" and h["1"]["axis"] == axis
        edges, kept = np.array(h["1"]["edges"]), np.array(h["1"]["kept"])
        used = np.flatnonzero(kept)
        shares[axis] = (edges[used[-1] + 1] - edges[used[0]]) / (edges[-1] - edges[0])
        assert kept.sum() == r.json()["steps"][1]["rows_out"]
    assert shares["score"] < 0.01 and shares["logit"] > 0.1, shares
    r = client.get("/api/decide", params={"axis": "rank"})
    assert r.status_code == 400 and r.json()["error"].startswith("axis: ")


def test_distinct_decisions_run_at_most_a_few_at_once(project):
    """Each decision allocates arrays of the run's length: a burst of distinct bounds must not
    run one decision per worker thread (40) at once, only as many as there are cores."""
    from bitextforge.serve.decisions import Decisions, deciders

    run_recipe(load_recipe("base.yaml"), progress=False)
    data = load_run("runs/base")
    running, most = [0], [0]
    lock = threading.Lock()

    def counted(keeps):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return data.decide(keeps)

    table = Decisions(data, decide=counted)
    threads = [threading.Thread(target=table.get, args=({1: KeepSpec(max=1.5 + i / 10)},))
               for i in range(4 * deciders())]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert table.made == len(threads) and 1 < most[0] <= deciders()


def test_a_failed_decision_is_not_kept(project):
    """A decision that raised is answered as an error to every request waiting for it, and the
    next request for the same bounds decides again instead of finding the failure."""
    from bitextforge.serve.data import RunDataError
    from bitextforge.serve.decisions import Decisions

    run_recipe(load_recipe("base.yaml"), progress=False)
    data = load_run("runs/base")
    fail = [True]

    def flaky(keeps):
        if fail.pop() if fail else False:
            raise RunDataError("disk gone")
        return data.decide(keeps)

    table = Decisions(data, decide=flaky)
    with pytest.raises(RunDataError, match="disk gone"):
        table.get({1: KeepSpec(max=2)})
    assert table.get({1: KeepSpec(max=2)}).decision.kept == data.decide({1: KeepSpec(max=2)}).kept
    assert table.made == 1
