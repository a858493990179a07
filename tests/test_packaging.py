"""A built wheel (not only the editable install) imports and runs: core and built-in plugins are
mapped from core/ and plugins/ to bitextforge and bitextforge.plugins."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import ROOT


@pytest.mark.long
def test_wheel_installs_imports_and_runs(tmp_path):
    # built from a copy: setuptools reuses the checkout's build/lib, where a module that the
    # `packages` list no longer names would survive from an earlier build and hide the omission
    src = tmp_path / "src"
    for part in ("core", "plugins"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / part, src / part)
    dist = tmp_path / "dist"
    res = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                          str(dist), str(src)], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    wheel = next(dist.glob("bitextforge-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    # every module of core/ and plugins/ ships: a sub-package missing from pyproject's `packages`
    # list would leave the wheel without it while the editable install still finds it
    sources = {f"bitextforge/{p.relative_to(ROOT / 'core').as_posix()}" for p in (ROOT / "core").rglob("*.py")}
    sources |= {f"bitextforge/plugins/{p.relative_to(ROOT / 'plugins').as_posix()}"
                for p in (ROOT / "plugins").rglob("*.py")}
    assert sorted(sources - set(names)) == []
    assert "bitextforge/run.py" in names and "bitextforge/plugins/weighters.py" in names
    assert {"bitextforge/serve/static/page.html", "bitextforge/serve/static/page.js",
            "bitextforge/serve/static/page.css"} <= set(names)  # the serve page ships in the wheel
    assert not any(n.startswith(("core/", "plugins/", "tests/")) for n in names)
    target = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                          str(target), str(wheel)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    # -P: do not put the cwd on sys.path; PYTHONPATH puts the wheel's copy before the editable one
    code = ("import bitextforge, bitextforge.plugins.weighters as w; print(bitextforge.__file__); "
            "from bitextforge.cli.main import main; raise SystemExit(main(['plugins']))")
    res = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(target)))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].startswith(str(target))
    assert "distributed.v1" in res.stdout
