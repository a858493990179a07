"""``bitextforge serve``: re-deciding stored scores matches ``bitextforge run`` row for row, a saved
recipe reruns from the score cache to exactly the rows the page showed, and bad requests get 4xx
answers without a traceback."""

from __future__ import annotations

import csv
import http.client
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from test_run import echo_plugin, recipe_text  # noqa: F401 (a fixture)

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from bitextforge.recipe.load import KeepSpec, load_recipe, parse_recipe  # noqa: E402
from bitextforge.api import run_recipe  # noqa: E402
from bitextforge.serve.data import RunDataError, load_run, load_scores  # noqa: E402
from bitextforge.serve.save import save_recipe  # noqa: E402

QUICKSTART = ROOT / "recipes" / "quickstart.yaml"
# the quick start with its two costlier filters caching scores
CACHED = ["steps[3].cache=true", "steps[4].cache=true"]
# where serve listens by default: the test client addresses the app as a browser on it would
BASE_URL = "http://127.0.0.1:8765"
JSON = {"Content-Type": "application/json"}


def quickstart_run(out: Path, extra: list[str] = ()) -> dict:
    """Run the shipped quick-start recipe into ``out`` (from the repository root, as its paths are)."""
    recipe = load_recipe(QUICKSTART, [*CACHED, f"output.dir={out}", *extra])
    res = run_recipe(recipe, progress=False)
    return res.manifest


def tsv_rows(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def kept_keys(run_dir: Path) -> list[tuple[int, int]]:
    return [(int(r["id"]), int(r["variant"])) for r in tsv_rows(run_dir / "corpus.tsv")]


def page_keys(data, dec) -> list[tuple[int, int]]:
    kept = dec.rejected_at == len(data.steps)
    return list(zip(data.ids[kept].tolist(), data.variant[kept].tolist()))


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_redecided_bounds_match_a_rerun_from_the_score_cache(in_root, tmp_path):
    quickstart_run(tmp_path / "run")
    data = load_run(tmp_path / "run")
    as_run = data.decide()
    assert page_keys(data, as_run) == kept_keys(tmp_path / "run")
    assert [s["rows_out"] for s in as_run.steps] == [310, 303, 300, 290, 274]

    keeps = {3: KeepSpec(max=1.5), 4: KeepSpec(min=0.2)}  # both tighter: every row stays decidable
    dec = data.decide(keeps)
    assert dec.unscored.sum() == 0
    assert dec.steps[3]["rows_out"] < 290 and dec.steps[4]["changed"]
    saved = save_recipe(data, keeps, tmp_path / "tight.yaml")
    recipe = load_recipe(saved)  # the project's own loader accepts it
    assert recipe.steps[3].keep.max == 1.5 and recipe.steps[4].keep.min == 0.2
    assert recipe.output.dir == f"{tmp_path / 'run'}-tight"
    res = run_recipe(recipe, progress=False)
    assert kept_keys(res.output_dir) == page_keys(data, dec)
    rejected = {(int(r["id"]), int(r["variant"])): r["rejected_by"]
                for r in tsv_rows(res.output_dir / "rejected.tsv")}
    shown = {k: data.steps[at].label for k, at in zip(zip(data.ids.tolist(), data.variant.tolist()),
                                                       dec.rejected_at.tolist())
             if at < len(data.steps)}
    assert rejected == shown
    for i in (3, 4):  # no model time: every score of the cached steps came from the cache
        cache = res.manifest["steps"][i]["info"]["score_cache"]
        assert cache["computed"] == 0 and cache["hits"] == res.manifest["steps"][i]["rows_in"]


def test_top_and_words_match_the_runner(pair_files, tmp_path):
    src = [" ".join(["w"] * (1 + (i * 7) % 13)) for i in range(40)]
    tgt = [" ".join(["v"] * (1 + (i * 5) % 11)) for i in range(40)]
    s, t = pair_files(src, tgt)

    def recipe(out, keep):
        return parse_recipe(
            f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"steps:\n  - filter: length.v1\n    with: {{side: src}}\n    keep: {{min: 2}}\n"
            f"  - filter: length_ratio.v1\n    keep: {keep}\n", "r.yaml")

    run_recipe(recipe(tmp_path / "base", "{max: 100}"), progress=False)
    data = load_run(tmp_path / "base")
    for keep in ("{top: 0.3}", "{top: 7, order: lowest}", "{words: 60}",
                 "{words: 45, words_side: both, order: lowest}", "{max: 2.0, top: 0.5}"):
        out = tmp_path / f"k{abs(hash(keep))}"
        run_recipe(recipe(out, keep), progress=False)
        spec = recipe(out, keep).steps[1].keep
        dec = data.decide({1: spec})
        assert page_keys(data, dec) == kept_keys(out), keep
        kept_ratio = [float(r["length_ratio"]) for r in tsv_rows(out / "corpus.tsv")]
        cut = data.histogram(dec, data.steps[1])["cutoff"]  # drawn where the selection cut
        assert cut == pytest.approx(max(kept_ratio) if spec.order == "lowest" else min(kept_ratio),
                                    rel=1e-5)


def test_loosening_an_early_step_counts_unscored_rows(in_root, tmp_path):
    quickstart_run(tmp_path / "run")
    data = load_run(tmp_path / "run")
    dec = data.decide({1: KeepSpec(min=0)})  # empty sides now reach steps 2-4, never scored there
    assert dec.steps[2]["unscored"] == 7 and dec.unscored.sum() == 7
    assert data.summary(dec)["unscored"] == 7


def test_rows_within_rounding_of_a_bound_are_counted(in_root, tmp_path):
    quickstart_run(tmp_path / "run")
    data = load_run(tmp_path / "run")
    ratio = data.scores["length_ratio"]
    on_bound = int((ratio == 1.5).sum())
    assert on_bound > 0  # a stored 1.5 may be 1.4999996 or 1.5000004 before rounding
    dec = data.decide({3: KeepSpec(max=1.5)})
    assert data.histogram(dec, data.steps[3])["near_bound"] == on_bound
    assert data.histogram(dec, data.steps[0])["near_bound"] == 0  # dedupe's 0/1 are exact
    dec = data.decide({3: KeepSpec(max=1.5 + 1e-4)})
    assert data.histogram(dec, data.steps[3])["near_bound"] == 0


def test_scores_file_decides_every_row(in_root, tmp_path):
    scores = tmp_path / "scores.tsv"
    res = run_cli("score", QUICKSTART, "-q", "-o", scores, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    data = load_scores(QUICKSTART, scores)
    keeps = {1: KeepSpec(min=0), 3: KeepSpec(max=3.0)}  # looser than the recipe
    dec = data.decide(keeps)
    assert dec.unscored.sum() == 0
    quickstart_run(tmp_path / "loose", ["steps[1].keep.min=0", "steps[3].keep.max=3.0"])
    assert page_keys(data, dec) == kept_keys(tmp_path / "loose")


def test_incomplete_or_foreign_run_directories_are_refused(in_root, tmp_path):
    with pytest.raises(RunDataError, match="no such run directory"):
        load_run(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunDataError, match="no manifest.json"):
        load_run(tmp_path / "empty")
    quickstart_run(tmp_path / "run")
    (tmp_path / "run" / ".shards").mkdir()
    with pytest.raises(RunDataError, match="unfinished"):
        load_run(tmp_path / "run")
    (tmp_path / "run" / ".shards").rmdir()
    mf = tmp_path / "run" / "manifest.json"
    m = json.loads(mf.read_text())
    old = {k: v for k, v in m.items() if k != "steps"}
    mf.write_text(json.dumps(old))
    with pytest.raises(RunDataError, match="older or different version"):
        load_run(tmp_path / "run")
    mf.write_text(json.dumps(m))
    with open(tmp_path / "run" / "rejected.tsv", "a", encoding="utf-8") as fh:
        fh.write("999\t0\tinput\thalf a line\n")
    with pytest.raises(RunDataError, match=r"rejected.tsv:\d+: 4 fields"):
        load_run(tmp_path / "run")


def test_bad_requests_get_4xx_without_traceback(in_root, tmp_path):
    from starlette.testclient import TestClient

    from bitextforge.serve.app import create_app

    quickstart_run(tmp_path / "run")
    save = tmp_path / "saved"
    save.mkdir()
    client = TestClient(create_app(load_run(tmp_path / "run"), save), base_url=BASE_URL,
                        raise_server_exceptions=False)
    ok = client.get("/api/decide", params={"keep": json.dumps({"3": {"max": 1.5}})})
    assert ok.status_code == 200 and ok.json()["steps"][3]["rows_out"] == 271
    bad = [
        ("/api/decide", {"keep": "{not json"}),
        ("/api/decide", {"keep": json.dumps({"3": {"max": "high"}})}),
        ("/api/decide", {"keep": json.dumps({"3": {"min": 2, "max": 1}})}),
        ("/api/decide", {"keep": json.dumps({"3": {"maxx": 1}})}),
        ("/api/decide", {"keep": json.dumps({"9": {"max": 1}})}),
        ("/api/decide", {"keep": json.dumps({"3": {"top": -1}})}),
        ("/api/decide", {"keep": json.dumps([1, 2])}),
        ("/api/rows", {"step": "3", "limit": "100000000"}),
        ("/api/rows", {"step": "3", "offset": "-5"}),
        ("/api/rows", {"step": "x"}),
        ("/api/rows", {"step": "3", "side": "both"}),
        ("/api/groups", {"step": "3"}),
        ("/static/..%2F..%2Fdata.py", {}),
        ("/static/../app.py", {}),
        ("/../../etc/passwd", {}),
    ]
    for path, params in bad:
        r = client.get(path, params=params)
        assert 400 <= r.status_code < 500, (path, params, r.status_code, r.text)
        assert "Traceback" not in r.text and 'File "' not in r.text
    for body in ({"name": "../escape.yaml"}, {"name": "/tmp/abs.yaml"}, {"name": "x.txt"},
                 {"name": "a/b.yaml"}, {"name": "ok.yaml", "keep": {"3": {"max": "x"}}}, [1]):
        r = client.post("/api/export", json=body)
        assert 400 <= r.status_code < 500, (body, r.text)
    r = client.post("/api/export", content=b"{broken", headers=JSON)
    assert r.status_code == 400
    assert sorted(p.name for p in save.iterdir()) == []  # nothing written by a refused request
    assert not (tmp_path / "escape.yaml").exists()
    r = client.post("/api/export", json={"name": "ok.yaml", "keep": {"3": {"max": 1.5}}})
    assert r.status_code == 200 and Path(r.json()["path"]) == save / "ok.yaml"
    assert load_recipe(save / "ok.yaml").steps[3].keep.max == 1.5
    ro = TestClient(create_app(load_run(tmp_path / "run"), None), base_url=BASE_URL,
                    raise_server_exceptions=False)
    assert ro.post("/api/export", json={"name": "ok.yaml"}).status_code == 403


def test_saved_recipe_is_the_users_recipe_with_only_the_bounds_changed(tmp_path, pair_files):
    """Issue #35: "Save recipe" wrote the fully filled recipe (every default of every component,
    comments gone). It edits the user's file instead: only the edited keep: and output.dir."""
    s, t = pair_files([f"w {'x ' * n}".strip() for n in range(8)],
                      [f"v {'y ' * n}".strip() for n in range(8)])
    user = f"""# my recipe: short pairs only
name: mine
input: {{src: {s}, tgt: {t}}}
output: {tmp_path}/run    # where it goes
progress: false
steps:
  - filter: length.v1
    keep:
      max: 6        # words
      order: highest
  - filter: length_ratio.v1   # second filter, not edited
    keep: {{max: 3}}
"""
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(user, encoding="utf-8")
    run_recipe(load_recipe(recipe), progress=False)
    data = load_run(tmp_path / "run")
    saved = save_recipe(data, {0: KeepSpec(max=4, min=2)}, tmp_path / "tight.yaml")
    lines = saved.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# saved by bitextforge serve (")
    assert lines[1:4] == [f"# the run shown: {tmp_path / 'run'}",
                          f"# its paths are absolute, so it runs from any directory: "
                          f"bitextforge run {tmp_path / 'tight.yaml'}",
                          f"# from {recipe}, edited: the bounds changed on the page, output.dir "
                          f"and relative paths"]
    assert lines[4:] == [*user.replace(
        f"{tmp_path}/run    #", f"{tmp_path}/run-tight    #").replace(
        "max: 6        # words\n      order: highest", "{max: 4, order: highest, min: 2}").splitlines()]
    res = run_recipe(load_recipe(saved), progress=False)
    assert kept_keys(res.output_dir) == page_keys(data, data.decide({0: KeepSpec(max=4, min=2)}))
    # a recipe file changed since the run is not the recipe that ran: the filled one is the base
    recipe.write_text(user.replace("max: 3", "max: 2"), encoding="utf-8")
    text = save_recipe(data, {0: KeepSpec(max=4)}, tmp_path / "other.yaml").read_text()
    assert f"# every option written out: {recipe} is not the recipe that ran" in text
    assert load_recipe(tmp_path / "other.yaml").steps[1].keep.max == 3


@pytest.fixture
def app_run(in_root, tmp_path):
    """The quick start run, and a directory to save recipes in."""
    quickstart_run(tmp_path / "run")
    save = tmp_path / "saved"
    save.mkdir()
    return load_run(tmp_path / "run"), save


def test_histograms_span_the_data_with_bounds_as_edges_and_fine_dense_bins(app_run):
    """Issue #35: the histograms cut the range at the 0.5 % and 99.5 % quantiles and piled the
    tail (the rejected rows, for a max bound) into the edge bin, and 60 equal bins were too
    coarse where the scores crowd (near 1). Now every bar holds only scores within its edges, a
    bound is an edge, and the densest bins are finer than equal bins would be."""
    import numpy as np

    from bitextforge.serve.data import HIST_BINS

    data, _ = app_run
    dec = data.decide()
    for st in (s for s in data.steps if s.decides):
        h = data.histogram(dec, st)
        edges = np.array(h["edges"])
        v = data.scores[st.column]
        reach = dec.entered[st.index] & data.scope(st) & np.isfinite(v)
        scores = v[reach]
        assert edges[0] <= scores.min() and scores.max() <= edges[-1], st.label
        counts = np.array(h["kept"]) + np.array(h["rejected"])
        assert counts.sum() == len(scores)
        inside = np.histogram(np.clip(scores, edges[0], edges[-1]), edges)[0]
        assert counts.tolist() == inside.tolist(), st.label  # each score in its own bin
        for b in (st.keep.min, st.keep.max):
            if b is not None and np.isfinite(b):
                assert b in edges, (st.label, b)
        if len(np.unique(scores)) > HIST_BINS:  # not a handful of values, like dedupe's 0 / 1
            widths = np.diff(edges)
            densest = widths[np.argmax(counts / widths)]
            assert densest < (edges[-1] - edges[0]) / HIST_BINS, st.label


def test_cross_origin_writes_and_foreign_hosts_are_refused(app_run):
    """A form of another site POSTed text/plain to /api/export and wrote recipes; a page on a
    rebound DNS name read the run (Host: attacker.example got 200)."""
    from starlette.testclient import TestClient

    from bitextforge.serve.app import create_app

    data, save = app_run
    client = TestClient(create_app(data, save), base_url=BASE_URL, raise_server_exceptions=False)
    body = json.dumps({"name": "evil.yaml", "keep": {}})
    for headers in ({"Content-Type": "text/plain", "Origin": "http://attacker.example"},
                    {"Content-Type": "text/plain"},  # a form's own type: needs no preflight
                    {"Content-Type": "application/x-www-form-urlencoded"}, {},
                    {**JSON, "Origin": "http://attacker.example"},
                    {**JSON, "Origin": "http://127.0.0.1:3000"},  # another site of this machine
                    {**JSON, "Origin": "null"},  # a sandboxed frame, a file:// page
                    {**JSON, "Host": "attacker.example:8765"}):
        r = client.post("/api/export", content=body, headers=headers)
        assert r.status_code == (415 if "Origin" not in headers and "Host" not in headers
                                 else 403), (headers, r.text)
        assert list(r.json()) == ["error"] and "\n" not in r.json()["error"]
    assert list(save.iterdir()) == []
    for host in ("attacker.example", "attacker.example:8765", "127.0.0.1:9999", "localhost.evil",
                 "", "127.0.0.1:8765 x"):
        for path in ("/", "/api/run", "/api/rows?step=3", "/nothing"):
            r = client.get(path, headers={"Host": host})
            assert r.status_code == 403 and "is not an address of this server" in r.json()["error"]
    for host in ("127.0.0.1:8765", "localhost:8765", "LOCALHOST:8765", "[::1]:8765",
                 "127.0.0.2:8765"):
        assert client.get("/api/run", headers={"Host": host}).status_code == 200, host
    ok = client.post("/api/export", json={"name": "mine.yaml", "keep": {"3": {"max": 1.5}}},
                     headers={"Origin": "http://localhost:8765"})
    assert ok.status_code == 200 and (save / "mine.yaml").exists()

    # bound to every address: the machine's own name and the address a request came in on
    machine = f"http://{socket.gethostname()}:8765"
    anywhere = TestClient(create_app(data, save, host="0.0.0.0"), base_url=machine)
    assert anywhere.get("/api/run").status_code == 200
    assert anywhere.get("/api/run", headers={"Host": "attacker.example:8765"}).status_code == 403
    lan = TestClient(create_app(data, save, host="0.0.0.0"), base_url="http://192.0.2.7:8765")
    assert lan.get("/api/run").status_code == 200  # the test client's server address
    assert TestClient(create_app(data, save), base_url=machine).get("/api/run").status_code == 403
    named = TestClient(create_app(data, save, allow_hosts=["serve.example"]),
                       base_url="http://serve.example:8765")
    assert named.get("/api/run").status_code == 200


def test_every_field_of_a_request_is_validated(app_run):
    """NaN, Infinity and 1e999999 bounds, odd keys and deep nesting were answered 500 (and a NaN
    bound saved as ``max: .nan``); a name ending in a newline was written."""
    from starlette.testclient import TestClient

    from bitextforge.serve.app import MAX_BODY, create_app

    data, save = app_run
    client = TestClient(create_app(data, save), base_url=BASE_URL, raise_server_exceptions=False)
    bad_keeps = ['{"3": {"max": NaN}}', '{"3": {"max": Infinity}}', '{"3": {"min": -Infinity}}',
                 '{"3": {"max": 1e999999}}', '{"3": {"max": -1e400}}',
                 '{"3": {"words": 1' + "0" * 400 + '}}', '{"3": {"words": 1' + "0" * 5000 + '}}',
                 '{"\u00b3": {"max": 1}}', '{"03": {"max": 1}}', '{"-1": {"max": 1}}',
                 '{" 3": {"max": 1}}', '{"3": {"__class__": 1}}', '{"3": {"max": [1]}}',
                 '{"3": {"order": 1}}', '{"3": {"max": true}}', '{"3": {"max": {"a": 1}}}',
                 "[" * 9 + "]" * 9, '{"3": ' + "[" * 5000 + "]" * 5000 + "}"]
    for raw in bad_keeps:
        for r in (client.get("/api/decide", params={"keep": raw}),
                  client.get("/api/rows", params={"keep": raw, "step": "3"}),
                  client.post("/api/export", headers=JSON,
                              content='{"name": "k.yaml", "keep": %s}' % raw)):
            assert r.status_code == 400, (raw[:60], r.status_code, r.text)
            err = r.json()["error"]
            assert err.startswith(("keep: ", "body: ")) and "\n" not in err, err
    names = ["ok.yaml\n", "ok.yaml\r", "a..yaml", "..yaml", "a/../b.yaml", "a\\b.yaml",
             ".hidden.yaml", "ok.yaml ", "ok.yaml\u0000", "ö.yaml", 7, None, ["ok.yaml"]]
    for name in names:
        r = client.post("/api/export", json={"name": name})
        assert r.status_code == 400 and r.json()["error"].startswith("name: "), (name, r.text)
    for content, status in ((json.dumps({"name": "ok.yaml", "kep": {}}), 400),
                            (json.dumps({"name": "ok.yaml", "keep": {"3": {"max": 1}}, "x": 1}),
                             400),
                            ('{"name": "ok.yaml", "keep": NaN}', 400),
                            (b'{"name": "\xff.yaml"}', 400),
                            ('{"name": "ok.yaml", "pad": "%s"}' % ("x" * MAX_BODY), 413),
                            ("[" * 100_000 + "]" * 100_000, 413),
                            ("[" * 20_000 + "]" * 20_000, 400)):
        r = client.post("/api/export", headers=JSON, content=content)
        assert r.status_code == status, (str(content)[:60], r.text)
        assert list(r.json()) == ["error"] and "\n" not in r.json()["error"]
    assert list(save.iterdir()) == []  # nothing written by a refused request
    r = client.post("/api/export", json={"name": "fine.yaml",
                                         "keep": {"3": {"max": 1.5, "min": None}}})
    assert r.status_code == 200 and load_recipe(save / "fine.yaml").steps[3].keep.max == 1.5
    assert ".nan" not in (save / "fine.yaml").read_text()


def test_cli_serves_on_loopback_and_warns_otherwise(in_root, tmp_path):
    import urllib.request

    quickstart_run(tmp_path / "run")
    for host, warned in (("127.0.0.1", False), ("0.0.0.0", True)):
        proc = subprocess.Popen([sys.executable, "-m", "bitextforge.cli", "serve",
                                 str(tmp_path / "run"), "--port", "0", "--host", host,
                                 "--no-save"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=ROOT)
        try:
            line = proc.stdout.readline()
            assert "http://" in line, line + proc.stderr.read()
            url = line.split("at ", 1)[1].split()[0].replace("0.0.0.0", "127.0.0.1")
            with urllib.request.urlopen(url + "api/run", timeout=30) as resp:
                assert json.load(resp)["recipe_name"] == "quickstart"
            with urllib.request.urlopen(url + "static/plotly.min.js", timeout=30) as resp:
                assert len(resp.read()) > 1_000_000  # plotly.js from the wheel, no CDN
            # uvicorn's own request scope: a rebound name is refused, the address itself is not
            port = int(url.rsplit(":", 1)[1].strip("/"))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/api/run", headers={"Host": f"attacker.example:{port}"})
            resp = conn.getresponse()
            assert resp.status == 403 and "not an address" in json.load(resp)["error"]
            conn.request("POST", "/api/export", body="{}", headers={"Content-Type": "text/plain"})
            assert conn.getresponse().status == 415
            conn.close()
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=30)
        assert ("not loopback" in err) == warned, err
    res = run_cli("serve", tmp_path / "none", cwd=ROOT)
    assert res.returncode == 2 and res.stderr.startswith("bitextforge: error: ")
    assert "no such run directory" in res.stderr and "Traceback" not in res.stderr


def test_allow_host_flag_answers_the_names_it_gives(in_root, tmp_path):
    """The API's allow_hosts had no CLI flag: behind a name that is not the machine's, serve
    refused every request. ``--allow-host`` (repeatable) answers that name, and only it."""
    quickstart_run(tmp_path / "run")
    for flags, served in (([], False), (["--allow-host", "serve.example",
                                         "--allow-host", "10.9.8.7"], True)):
        proc = subprocess.Popen([sys.executable, "-m", "bitextforge.cli", "serve",
                                 str(tmp_path / "run"), "--port", "0", "--no-save", *flags],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT)
        try:
            line = proc.stdout.readline()
            assert "http://" in line, line + proc.stderr.read()
            port = int(line.split("at ", 1)[1].split()[0].rsplit(":", 1)[1].strip("/"))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for host in ("serve.example", "10.9.8.7"):
                conn.request("GET", "/api/run", headers={"Host": f"{host}:{port}"})
                resp = conn.getresponse()
                body = json.load(resp)
                if served:
                    assert resp.status == 200 and body["recipe_name"] == "quickstart"
                else:
                    assert resp.status == 403 and "not an address" in body["error"]
            conn.request("GET", "/api/run", headers={"Host": f"attacker.example:{port}"})
            resp = conn.getresponse()
            assert resp.status == 403 and "not an address" in json.load(resp)["error"]
            conn.close()
        finally:
            proc.terminate()
            proc.communicate(timeout=30)
    for bad in ("serve.example:8765", "http://serve.example"):
        res = run_cli("serve", tmp_path / "run", "--port", "0", "--allow-host", bad, cwd=ROOT)
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.splitlines() == [
            f"bitextforge: error: serve: --allow-host {bad!r}: give a host name or address "
            f"without scheme or port (serve.example, 10.0.0.5, [fd00::5])"]


def test_a_busy_port_is_one_error_line_with_a_hint(in_root, tmp_path):
    """Issue #35: serve on a port in use printed uvicorn's log line and exited with 3."""
    quickstart_run(tmp_path / "run")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "serve",
                              str(tmp_path / "run"), "--port", str(port), "--no-save"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [
        f"bitextforge: error: serve: cannot listen on 127.0.0.1:{port}: Address already in use; "
        f"another program (perhaps another bitextforge serve) listens there; --port 0 picks a "
        f"free port"]


def test_report_html_is_a_snapshot_of_the_page(in_root, tmp_path, monkeypatch):
    quickstart_run(tmp_path / "run")
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<style>" in page  # self-contained, read-only
    assert "steps[3]:length_ratio.v1" in page and "kept 290" in page and "rejected 10" in page
    assert page.count("<svg", 0, page.index("Evaluators")) == 5 and "max 2" in page  # per filter
    rejected = {r["id"]: r for r in tsv_rows(tmp_path / "run" / "rejected.tsv")}
    first = next(r for r in rejected.values() if r["rejected_by"].startswith("steps[4]"))
    assert f"<td class='text'><div class='clip'>{first['src']}</div></td>" in page or \
        "rejected: 8 of 16 rows" in page
    assert "corpus_stats.v1" in page and "src.length_mean" in page  # evaluator numbers as a table
    assert "src.length (n 274," in page and page.count("<svg") == 9  # + 4 plots of its items
    plots = load_run(tmp_path / "run").evaluation_plots()["corpus_stats.v1"]
    lengths = next(p for p in plots if p["key"] == "tgt.length")
    assert sum(lengths["counts"]) == 274  # one count per kept sentence
    import bitextforge.report.html as report

    monkeypatch.setattr(report, "MAX_ROWS", 100)  # a big run: the report reads a sample
    assert report.write_report(tmp_path / "run") == ""
    page = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    assert "random sample of" in page and "kept 290" in page and "rejected 10" in page
    shown = sum(int(n) for n in re.findall(r"<title>(\d+) (?:kept|rejected)</title>",
                                           page.split("id='step-0'")[1].split("id='step-1'")[0]))
    assert 60 <= shown <= 140  # histogram of about 100 sampled rows, not of all 320
    res = run_recipe(load_recipe(QUICKSTART, [f"output.dir={tmp_path / 'plain'}",
                                              "output.formats=[plain]", "evaluate=[]"]),
                     progress=False)
    assert not (tmp_path / "plain" / "report.html").exists()
    assert "no corpus.tsv" in res.reports["score_report"]


def test_paraphrase_groups_and_weights(echo_plugin, pair_files, tmp_path):
    s, t = pair_files(["eins", "zwei"], ["one", "two"])
    steps = ("  - paraphrase: echo_test.v1\n    side: tgt\n"
             "  - filter: length.v1\n    with: {unit: chars, side: tgt}\n    keep: {max: 4}\n"
             "    apply_to: paraphrases\n  - weight: distributed.v1\n    with: {n: 3}\n")
    out = tmp_path / "p"
    run_recipe(parse_recipe(recipe_text(s, t, out, steps), "r.yaml"), progress=False)
    data = load_run(out)
    assert data.n == 6  # replicated rows of the weighter counted once
    dec = data.decide()
    assert [st["rows_out"] for st in dec.steps] == [6, 4, 8]
    g = data.groups(dec, 0)
    assert g["total"] == 2 and g["groups"][0]["original"] == "one"
    shown = [(r["variant"], r["tgt"], r["score"], r["rejected_by"]) for r in g["groups"][0]["rows"]]
    assert shown == [(0, "one", None, None), (1, "eno", -0.1, None),
                     (2, "one !", -0.7, "steps[1]:length.v1")]
    loose = data.decide({1: KeepSpec(max=5)})  # "one !" / "two !" now reach the weighter unseen
    assert loose.steps[1]["rows_out"] == 6 and loose.steps[2]["rows_out"] is None
    assert loose.steps[2]["unscored"] == 2
    assert data.groups(dec, 0, query="zwei")["total"] == 1


def test_stale_scores_of_a_filter_that_remembers_rows(pair_files, tmp_path):
    s, t = pair_files(["ein Hund", "ein Hund", "Katze"], ["a dog", "a dog", "cat"])
    body = (f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{tmp_path / 'r'}'}}\n"
            "steps:\n  - filter: length.v1\n    keep: {min: 1}\n  - filter: dedupe.v1\n")
    run_recipe(parse_recipe(body, "r.yaml"), progress=False)
    data = load_run(tmp_path / "r")
    assert data.steps[1].stateful and not data.steps[0].stateful
    assert not data.decide().steps[1]["stale"]
    dec = data.decide({0: KeepSpec(max=1)})  # removes the first "ein Hund": the second is now first
    assert dec.steps[1]["stale"]


def test_run_without_rejected_rows_or_from_another_version(in_root, tmp_path):
    quickstart_run(tmp_path / "run")
    mf = tmp_path / "run" / "manifest.json"
    m = json.loads(mf.read_text())
    mf.write_text(json.dumps({**m, "bitextforge": "0.0.9"}))
    assert load_run(tmp_path / "run").warnings == ["written by bitextforge 0.0.9; this is 0.1.0"]
    (tmp_path / "run" / "rejected.tsv").unlink()
    with pytest.raises(RunDataError, match="no rejected.tsv"):
        load_run(tmp_path / "run")


def test_sample_pages_are_the_rows_nearest_the_bound(in_root, tmp_path):
    import numpy as np

    quickstart_run(tmp_path / "run")
    data = load_run(tmp_path / "run")
    dec = data.decide({4: KeepSpec(min=0.3)})
    for side in ("kept", "rejected"):
        got, offset = [], 0
        while True:
            page = data.rows(dec, 4, side, offset=offset, limit=7)
            got += [(r["id"], r["variant"]) for r in page["rows"]]
            offset += 7
            if offset >= page["total"]:
                break
        mask = dec.entered[4] & ((dec.rejected_at != 4) if side == "kept" else (dec.rejected_at == 4))
        idx = np.flatnonzero(mask)
        order = idx[np.argsort(np.abs(data.scores["language_id"][idx] - 0.3), kind="stable")]
        assert got == list(zip(data.ids[order].tolist(), data.variant[order].tolist()))
        assert len(got) == page["total"] == mask.sum()


# hand-made pairs for the clean steps' before/after view (issue #34): each of html.v1,
# unwrap_quotes.v1 and unicode.v1 changes some texts; row 3 none
CLEAN_SRC = ["Tom &amp; Jerry sind Freunde.", '"Er sagte ""Hallo"" zu mir."',
             "Das  ist gut.", "Ein ganz normaler Satz.", "Der <b>fette</b> Text."]
CLEAN_TGT = ["Tom &amp; Jerry are friends.", "He said hello to me.", "That is\u0007 good.",
             "A perfectly normal sentence.", "The <b>bold</b> text."]
CLEAN_STEPS = ("  - clean: html.v1\n  - clean: unwrap_quotes.v1\n  - clean: unicode.v1\n"
               "  - filter: length_ratio.v1\n    with: {unit: chars}\n    keep: {max: 3}\n")


@pytest.fixture
def clean_run(pair_files, tmp_path):
    """A run of three clean steps and a filter over :data:`CLEAN_SRC` / :data:`CLEAN_TGT`."""
    s, t = pair_files(CLEAN_SRC, CLEAN_TGT)
    out = tmp_path / "clean"
    run_recipe(parse_recipe(recipe_text(s, t, out, CLEAN_STEPS), "r.yaml"), progress=False)
    return out


def cleaned_lines(run_dir: Path) -> list[dict]:
    """cleaned.tsv as the run wrote it, texts unescaped."""
    from bitextforge.io.corpus import unescape

    rows = tsv_rows(run_dir / "cleaned.tsv")
    for r in rows:
        r["before"], r["after"] = unescape(r["before"]), unescape(r["after"])
    return rows


def marked_text(runs: list[list[str]], ops: str) -> str:
    return "".join(text for op, text in runs if op in ops)


def test_clean_steps_show_their_changes_before_and_after(clean_run):
    """Issue #34: serve shows, per clean step, its counts and the texts it changed (from
    cleaned.tsv), before and after with the changed characters marked."""
    from starlette.testclient import TestClient

    from bitextforge.serve.app import create_app

    client = TestClient(create_app(load_run(clean_run)), base_url=BASE_URL,
                        raise_server_exceptions=False)
    manifest = json.loads((clean_run / "manifest.json").read_text())
    steps = client.get("/api/run").json()["steps"]
    assert [st["changes_text"] for st in steps] == [True, True, True, False]
    lines = cleaned_lines(clean_run)
    for i in range(3):
        res = client.get("/api/changes", params={"step": i}).json()
        assert res["counts"] == manifest["steps"][i]["counts"] == steps[i]["counts"]
        mine = [r for r in lines if r["step"] == steps[i]["label"]]
        assert res["total"] == res["sampled"] == len(mine) > 0
        # every text the step changed, a row's sides together
        assert sorted((r["id"], r["variant"], r["column"], r["before"], r["after"])
                      for r in res["rows"]) == sorted(
            (int(r["id"]), int(r["variant"]), r["column"], r["before"], r["after"]) for r in mine)
        assert res["counts"]["changed_src"] + res["counts"]["changed_tgt"] == len(mine)
        for r in res["rows"]:  # the marked runs put together are the two texts
            assert marked_text(r["before_marked"], "=-") == r["before"]
            assert marked_text(r["after_marked"], "=+") == r["after"]
            assert marked_text(r["before_marked"], "=") == marked_text(r["after_marked"], "=")
    html, quotes, space = (client.get("/api/changes", params={"step": i}).json()["rows"]
                           for i in range(3))
    # what each cleaner took out or put in, and nothing else marked
    assert [(r["id"], r["column"], marked_text(r["before_marked"], "-"),
             marked_text(r["after_marked"], "+")) for r in html] == [
        (0, "src", "amp;", ""), (0, "tgt", "amp;", ""), (4, "src", "<b></b>", ""),
        (4, "tgt", "<b></b>", "")]
    assert [(r["id"], marked_text(r["before_marked"], "-")) for r in quotes] == [(1, '""""')]
    assert quotes[0]["after"] == 'Er sagte "Hallo" zu mir.'
    assert [(r["id"], r["column"], marked_text(r["before_marked"], "-"),
             marked_text(r["after_marked"], "+")) for r in space] == [
        (2, "src", " ", ""), (2, "tgt", "\u0007", "")]
    assert all(r["id"] != 3 for r in html + quotes + space)  # the clean row changed nowhere

    # a filter step changes no text; a bad line or a missing cleaned.tsv is one line naming it
    r = client.get("/api/changes", params={"step": 3})
    assert r.status_code == 400 and r.json()["error"] == \
        "steps[3] is a filter step; it changes no text"
    with open(clean_run / "cleaned.tsv", "a", encoding="utf-8") as fh:
        fh.write("steps[0]:html.v1\t9\t0\tsrc\thalf a line\n")
    bad = TestClient(create_app(load_run(clean_run)), base_url=BASE_URL,
                     raise_server_exceptions=False).get("/api/changes", params={"step": 0})
    assert bad.status_code == 400
    assert bad.json()["error"] == (f"{clean_run / 'cleaned.tsv'}:{len(lines) + 2}: 5 fields, "
                                   f"expected 6 (step, id, variant, column, before, after)")
    (clean_run / "cleaned.tsv").unlink()
    gone = TestClient(create_app(load_run(clean_run)), base_url=BASE_URL,
                      raise_server_exceptions=False).get("/api/changes", params={"step": 0})
    assert gone.status_code == 400 and gone.json()["error"].startswith(
        f"{clean_run / 'cleaned.tsv'}: no such file")


def test_changes_of_a_large_step_are_a_seeded_sample(clean_run, monkeypatch):
    """A clean step that changed more texts than the view keeps shows a seeded sample of them,
    the same on every load, with the step's real total."""
    import bitextforge.serve.data as serve_data

    monkeypatch.setattr(serve_data, "CHANGES_SAMPLE", 2)
    html = [(int(r["id"]), r["column"]) for r in cleaned_lines(clean_run)
            if r["step"] == "steps[0]:html.v1"]
    shown = []
    for _ in range(2):
        res = load_run(clean_run).changes(0, limit=10)
        assert (res["total"], res["sampled"]) == (len(html), 2) and len(html) > 2
        shown.append([(r["id"], r["column"]) for r in res["rows"]])
    assert shown[0] == shown[1] and set(shown[0]) <= set(html)
    assert shown[0] == sorted(shown[0])  # in stream order
    assert load_run(clean_run).changes(0, offset=2)["rows"] == []


def test_char_diff_marks_only_what_changed():
    from bitextforge.serve.data import DIFF_MAX_CHARS, char_diff

    assert char_diff("a  b", "a b") == ([["=", "a "], ["-", " "], ["=", "b"]], [["=", "a b"]])
    assert char_diff("abc", "abc") == ([["=", "abc"]], [["=", "abc"]])
    assert char_diff("", "x") == ([], [["+", "x"]])
    assert char_diff("9–19 Uhr", "9-19 Uhr") == ([["=", "9"], ["-", "–"], ["=", "19 Uhr"]],
                                                 [["=", "9"], ["+", "-"], ["=", "19 Uhr"]])
    long = "x" * DIFF_MAX_CHARS
    assert char_diff(long, long + "y") == ([["-", long]], [["+", long + "y"]])
