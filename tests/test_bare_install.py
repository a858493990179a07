"""The core install runs the quick start: a bare virtual environment (``python -m venv``) gets the
package with no extra, from a wheel of this checkout and the project's constraints, and runs
``bitextforge run recipes/quickstart.yaml`` (language ID and report.html included). There a
component whose extra is missing is listed, marked, and refused with one line naming the extra.

The wheels of the dependencies are kept in a wheelhouse (``~/.cache/bitextforge/bare-venv-wheels``,
or ``BITEXTFORGE_WHEELHOUSE``): the install first tries it alone, and only when it lacks something
does ``pip download`` fill it from the package index. Without the index (offline) and with an
incomplete wheelhouse the tests skip and say so; ``BITEXTFORGE_SKIP_BARE_VENV=1`` skips them too.
The shared .venv is never touched: the checkout is copied, the wheel built from the copy.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.bare_venv, pytest.mark.long]

WHEELHOUSE = Path(os.environ.get("BITEXTFORGE_WHEELHOUSE")
                  or Path.home() / ".cache" / "bitextforge" / "bare-venv-wheels")
#: what pip prints when it cannot reach an index (as opposed to a real resolution failure)
OFFLINE = ("Failed to establish a new connection", "Temporary failure in name resolution",
           "Network is unreachable", "Name or service not known", "NewConnectionError",
           "ConnectTimeoutError", "Read timed out", "ProxyError", "Connection refused")
#: libraries of the extras: none of them may be importable in the core install
HEAVY = ("torch", "transformers", "kenlm", "delphin", "sentencepiece", "sklearn", "scipy",
         "lingua", "ctranslate2", "sentence_transformers", "faiss", "eflomal", "starlette", "ray")


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def _clean_env() -> dict[str, str]:
    """The environment without anything that points Python at the shared .venv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    """``(python, bin, src)`` of a fresh venv holding only the core install, and the copy of the
    checkout it was built from; the seconds each part took are printed (pytest -s shows them)."""
    if os.environ.get("BITEXTFORGE_SKIP_BARE_VENV") == "1":
        pytest.skip("BITEXTFORGE_SKIP_BARE_VENV=1: the core-install test is skipped")
    t0 = time.monotonic()
    tmp = tmp_path_factory.mktemp("bare")
    src = tmp / "src"
    src.mkdir()
    for name in ("core", "plugins", "recipes"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "constraints.txt"):
        shutil.copy2(ROOT / name, src / name)
    dist = tmp / "dist"
    res = _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", dist, src],
               cwd=tmp)
    assert res.returncode == 0, res.stderr[-2000:]
    wheel = next(dist.glob("bitextforge-*.whl"))
    t_build = time.monotonic()

    env = _clean_env()
    venv = tmp / "venv"
    # without pip of its own: this environment's pip installs into it (--python), which saves
    # the 4 s of CPU that installing pip into the venv costs
    res = _run([sys.executable, "-m", "venv", "--without-pip", venv], env=env)
    assert res.returncode == 0, res.stderr
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", py]
    constraints = ["-c", src / "constraints.txt"]
    # --no-compile: byte-compiling every installed module costs more than the imports it saves
    install = [*pip, "install", "-q", "--no-compile", "--no-index", "--find-links", WHEELHOUSE,
               *constraints, wheel]
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    with open(WHEELHOUSE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test run may be filling the wheelhouse
        res = _run(install, env=env)
        if res.returncode != 0:  # the wheelhouse lacks a wheel: fetch what the index has
            got = _run([*pip, "download", "-q", "--retries", "1", "--timeout", "30", "-d",
                        WHEELHOUSE, *constraints, wheel], env=env)
            for own in WHEELHOUSE.glob("bitextforge-*.whl"):
                own.unlink()  # this checkout's wheel is given by path, never from here
            if got.returncode != 0:
                text = got.stdout + got.stderr
                if any(s in text for s in OFFLINE):
                    pytest.skip(f"the package index cannot be reached and {WHEELHOUSE} lacks "
                                f"wheels the core install needs (pip download: "
                                f"{text.strip().splitlines()[-1][:200]}); "
                                f"BITEXTFORGE_SKIP_BARE_VENV=1 skips this quietly")
                pytest.fail(f"pip download failed:\n{text[-3000:]}")
            res = _run(install, env=env)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    t_install = time.monotonic()
    print(f"\n[bare venv] wheel built in {t_build - t0:.1f} s, venv and core install in "
          f"{t_install - t_build:.1f} s")
    return py, venv / "bin", src


def test_core_install_has_no_heavy_library(bare):
    py, _, _ = bare
    code = ("import importlib.util as u, sys; "
            f"print(' '.join(m for m in {HEAVY!r} if u.find_spec(m)))")
    res = _run([py, "-c", code], env=_clean_env())
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"the core install holds {res.stdout.strip()}"


def test_quick_start_runs_with_the_core_install(bare, tmp_path):
    """The README's quick start, as written, in the bare venv: every output including the
    report, and the same kept and rejected rows as this (full) environment writes."""
    py, bindir, src = bare
    t0 = time.monotonic()
    res = _run([bindir / "bitextforge", "run", "recipes/quickstart.yaml", "-q"], cwd=src,
               env=_clean_env())
    print(f"\n[bare venv] quick start ran in {time.monotonic() - t0:.1f} s")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "320 rows in" in res.stdout
    assert "note:" not in res.stdout, res.stdout  # e.g. "no report.html: pyarrow is missing"
    out = src / "runs" / "quickstart"
    for name in ("corpus.src", "corpus.tgt", "corpus.tsv", "rejected.tsv", "report.html",
                 "manifest.json", "signature.txt", "recipe.filled.yaml",
                 "reports/corpus_stats.v1.json"):
        assert (out / name).is_file(), name
    rejected = (out / "rejected.tsv").read_text(encoding="utf-8")
    assert "language_id" in rejected  # the wrong-language pairs, found with the core install
    assert "<html" in (out / "report.html").read_text(encoding="utf-8")[:500].lower()

    full = tmp_path / "full"
    res = _run([sys.executable, "-m", "bitextforge.cli", "run", "recipes/quickstart.yaml", "-q",
                "-o", full], cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    for name in ("corpus.src", "corpus.tgt", "corpus.tsv", "rejected.tsv"):
        assert (out / name).read_bytes() == (full / name).read_bytes(), name


def test_missing_extra_is_listed_and_refused_in_one_line(bare, tmp_path):
    _, bindir, src = bare
    env = _clean_env()
    bf = bindir / "bitextforge"
    res = _run([bf, "--version"], env=env)
    assert res.returncode == 0 and res.stdout.startswith("bitextforge ")
    res = _run([bf, "--help"], env=env)
    assert res.returncode == 0 and "train-nmt" in res.stdout, res.stderr  # plugin commands load

    res = _run([bf, "plugins"], env=env)
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line for line in res.stdout.splitlines()[1:]}
    assert "[needs the 'quality' extra]" in rows["kenlm_perplexity.v1"]
    assert "[needs the 'nmt' extra]" in rows["backtranslate.v1"]
    assert "[needs" not in rows["language_id.v1"] and "[needs" not in rows["dedupe.v1"]
    res = _run([bf, "describe", "erg.v1"], env=env)
    assert res.returncode == 0 and "needs the 'erg' extra" in res.stdout

    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        f"name: x\ninput: {{src: {src}/recipes/data/quickstart.de,\n"
        f"        tgt: {src}/recipes/data/quickstart.en}}\n"
        f"steps:\n  - filter: dedupe.v1\n  - filter: language_id.v1\n"
        f"    with: {{src_lang: de, tgt_lang: en, backend: lingua}}\n"
        f"  - filter: kenlm_perplexity.v1\n    with: {{model: lm.bin}}\n"
        f"output: {tmp_path / 'out'}\n")
    res = _run([bf, "run", recipe], env=env, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {recipe}: steps[1] (language_id): language_id.v1 needs the 'langid' extra "
        f"(lingua-language-detector not installed): pip install 'bitextforge[langid]'",
        f"bitextforge: error: {recipe}: steps[2] (kenlm_perplexity): kenlm_perplexity.v1 needs the 'quality' extra "
        f"(kenlm, scikit-learn, scipy not installed): pip install 'bitextforge[quality]'"]
    assert not (tmp_path / "out").exists()
