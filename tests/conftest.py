"""Shared fixtures. Tests that read ../shared/data skip with a clear reason when it is absent."""

from __future__ import annotations

import collections
import contextlib
import gzip
import importlib.util
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest_plugins = ["bitextforge.testing"]

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BITEXTFORGE_SHARED_DATA", ROOT.parent / "shared" / "data"))

# Ray starts its workers at niceness 15, so that they yield to other work on the machine. In a
# parallel suite the other pytest workers are that work: the Ray tests' actors waited for a core
# while the rest of the suite ran (test_ray_runner.py took 273 s beside two busy processes, 46 s
# with this). Subprocesses and local clusters started by the tests inherit it.
os.environ.setdefault("RAY_worker_niceness", "0")


#: The test files that take longest, longest first: `make test` and `make test-long` hand files to
#: their workers in this order (`--no-loadscope-reorder`), the rest after them, most tests first.
#: pytest-xdist's own order is by number of tests alone, which handed a long file with few tests
#: (test_ray_cluster.py, 4 tests, about 65 s, much of it waiting for Ray) out among the last, so
#: it ran while the other workers stood idle at the end. Seconds per file in the tier where the
#: file weighs most (pytest --durations=0, quiet 2-core machine, 2026-12-05; L the long checks,
#: Q the quick tier): ray_runner 108 L, train_and_test 90 L (46 Q), ray_cluster 69 L, resume
#: 63 L, nmt_pipeline 55 L (35 Q), nmt_logprob 28 Q, cli 27 Q, expansion_curve 26 Q, gpu_check
#: 23 L, serve_browser 22 L, serve 19 Q, lexicon_translate 15 L, lexical 15 L, quality_models
#: 15 L, multilingual 14 L, example_plugin 14 Q, bare_install 14 L, bad_input 13 Q.
LONGEST_FILES = ("test_ray_runner.py", "test_train_and_test.py", "test_ray_cluster.py",
                 "test_resume.py", "test_nmt_pipeline.py", "test_nmt_logprob.py", "test_cli.py",
                 "test_expansion_curve.py", "test_gpu_check.py", "test_serve_browser.py",
                 "test_serve.py", "test_lexicon_translate.py", "test_lexical.py",
                 "test_quality_models.py", "test_multilingual.py", "test_example_plugin.py",
                 "test_bare_install.py", "test_bad_input.py")


def pytest_collection_modifyitems(config, items):
    """Order the files longest first (LONGEST_FILES), then by number of tests; a file's own
    tests keep their order. Every worker sorts the same collection the same way, as
    pytest-xdist requires."""
    count = collections.Counter(item.path.name for item in items)
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda it: (rank.get(it.path.name, len(rank)), -count[it.path.name],
                               str(it.path)))


def shared(*parts: str) -> Path:
    """Path into ../shared/data, skipping the test when that data is not beside the checkout."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"needs {p} (the shared data folder beside the checkout; CI has it, a plain "
                    f"clone does not)")
    return p


def benchmark(name: str):
    """``benchmarks/<name>.py`` loaded as a module (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read_lines(path: Path, n: int | None = None) -> list[str]:
    """First n lines of a (gzipped) text file, without line ends."""
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if n is not None and i >= n:
                break
            out.append(line.rstrip("\n"))
    return out


def read_tsv(path: Path) -> list[dict[str, str]]:
    """The rows of a TSV file a run wrote (header first), as dicts by column name."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, ln.split("\t"))) for ln in lines[1:]]


@pytest.fixture(autouse=True)
def _ray_only_in_long_checks(request):
    """A test that starts Ray in the test process is a long check: starting Ray and its actors
    costs seconds of CPU, which `make test` (the quick tier) has no room for."""
    yield
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized() and not request.node.get_closest_marker("long"):
        pytest.fail("this test started Ray: mark it @pytest.mark.long (run by make test-long)")


@pytest.fixture(autouse=True)
def _private_score_cache(tmp_path_factory, monkeypatch):
    """Tests never read or write the user's score cache."""
    monkeypatch.setenv("BITEXTFORGE_CACHE", str(tmp_path_factory.mktemp("score-cache")))


@pytest.fixture
def pair_files(tmp_path):
    """Write two line-aligned files and return their paths: ``pair_files(src_lines, tgt_lines)``."""
    def make(src: list[str], tgt: list[str], name: str = "c"):
        s, t = tmp_path / f"{name}.de", tmp_path / f"{name}.en"
        s.write_text("".join(x + "\n" for x in src), encoding="utf-8")
        t.write_text("".join(x + "\n" for x in tgt), encoding="utf-8")
        return s, t
    return make


SMALL_DE = [
    "Der Hund schläft im Garten.",
    "Ich trinke morgens gern Kaffee.",
    "Ich trinke morgens gern Kaffee.",
    "Wo ist der Bahnhof?",
    "",
    "Das Wetter ist heute sehr schön und wir gehen spazieren.",
    "Hallo",
    "Sie hat 3 Katzen und 2 Hunde.",
]
SMALL_EN = [
    "The dog is sleeping in the garden.",
    "I like to drink coffee in the morning.",
    "I like to drink coffee in the morning.",
    "Where is the train station?",
    "",
    "The weather is very nice today and we are going for a walk.",
    "Hello, how are you doing today, my dear old friend from school?",
    "She has 3 cats and 2 dogs.",
]


# Twelve short caption-like pairs for the tests that train a tiny translation model.
CAPTIONS_DE = ["Der Hund schläft.", "Die Katze spielt.", "Ein Mann liest.", "Eine Frau singt.",
               "Das Kind lacht.", "Der Vogel fliegt.", "Ein Junge rennt.", "Ein Mädchen tanzt.",
               "Der Mann kocht.", "Die Frau schreibt.", "Ein Hund bellt.", "Die Kinder spielen."]
CAPTIONS_EN = ["The dog sleeps.", "The cat plays.", "A man reads.", "A woman sings.",
               "The child laughs.", "The bird flies.", "A boy runs.", "A girl dances.",
               "The man cooks.", "The woman writes.", "A dog barks.", "The children play."]


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """``bitextforge ARGS`` run in this process by the command's own ``main``: its exit status,
    stdout and stderr as ``subprocess.run`` gives them. For tests of what the command prints and
    returns, not of how it starts: a subprocess costs about 0.4 s of CPU in Python's start-up and
    imports. ``cwd``: the directory it runs in (restored afterwards)."""
    from bitextforge.cli.main import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)  # contextlib.chdir is Python 3.11+, the project supports 3.10
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's usage errors and --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["bitextforge", *argv], code, out.getvalue(),
                                       err.getvalue())


def pip_install(target: Path, *sources: Path) -> None:
    """pip-install source trees (without dependencies) into ``target``. Each tree is copied
    beside ``target`` first: pip builds a local folder in place (its build/ and .egg-info), and two
    test workers (pytest-xdist) installing the same folder at once would write over each other."""
    for src in sources:
        copy = target.parent / f"src-{src.name}"
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
        res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--no-build-isolation", "--target", str(target), str(copy)],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


def fake_distribution(tmp_path, name, source, metadata=""):
    """A module plus a ``.dist-info`` folder declaring it in the bitextforge entry-point group:
    what ``pip install`` leaves behind, found by the real entry-point discovery. ``metadata``:
    more METADATA lines (``Requires-Dist: ...; extra == "x"``). ``source``: the module's text, or
    a package folder (a Path) copied in as package ``name``."""
    if isinstance(source, Path):
        shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        (tmp_path / f"{name}.py").write_text(source)
    info = tmp_path / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n"
                                   f"{metadata}")
    (info / "entry_points.txt").write_text(f"[bitextforge]\n{name} = {name}\n")
    return dict(os.environ, PYTHONPATH=str(tmp_path))
