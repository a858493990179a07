"""KenLM language-model perplexity filter (``kenlm_perplexity.v1``) and the model trainer behind
``bitextforge train-lm``.

Fluency filtering by n-gram language-model perplexity, as in Wieting et al. 2017 (section 5.5,
dropping disfluent back-translations) and the WMT parallel-corpus-filtering systems. Models are
trained with KenLM's own ``lmplz`` (modified Kneser-Ney; Heafield et al. 2013) and converted with
``build_binary``; both are built from the ``kenlm`` sdist at set-up (``make env``) and found next to
the venv's python, on ``PATH``, or through ``BITEXTFORGE_LMPLZ`` / ``BITEXTFORGE_BUILD_BINARY``.

The score is KenLM's per-word perplexity of the sentence,
``10 ** (-log10 P(w_1 .. w_n </s> | <s>) / (n + 1))`` (``Model.perplexity``): the end-of-sentence
token counts as a word, so an empty sentence still has a finite perplexity. Lower is more fluent;
bound it with ``keep: {max: ...}``. The sentence is tokenised (sacremoses) and lowercased exactly as
the training text was: ``train-lm`` writes these settings to ``<model>.json`` and the filter reads
them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from pydantic import Field

from bitextforge import ComponentError, Filter, InputError
from bitextforge.api import reservoir, text_lines
from bitextforge.api import die_with_parent, scratch_dir

from ._common import Tokenizer

_BUILD_HINT = ("run `make env` (it builds lmplz and build_binary from the kenlm sdist into "
               ".venv/bin), or build KenLM (https://github.com/kpu/kenlm, cmake) and set "
               "BITEXTFORGE_LMPLZ / BITEXTFORGE_BUILD_BINARY to the binaries")


def find_tool(name: str) -> str | None:
    """Path of a KenLM binary (``lmplz`` or ``build_binary``): the env var
    ``BITEXTFORGE_<NAME>``, then the directory of ``sys.executable``, then ``PATH``."""
    env = os.environ.get(f"BITEXTFORGE_{name.upper()}")
    if env:
        return env if os.access(env, os.X_OK) else None
    here = Path(sys.executable).parent / name
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which(name)


def _text_lines(texts: list[Path], field: int | None) -> Iterator[str]:
    """The training lines of ``texts`` in order (``field``: that tab-separated field of each)."""
    for t in texts:
        for n, line in enumerate(text_lines(t), 1):
            if field is not None:
                fields = line.split("\t")
                if len(fields) <= field:
                    raise InputError(f"{t}:{n}: no tab-separated field {field} "
                                     f"(the line has {len(fields)})")
                line = fields[field]
            yield line


def train_lm(text: str | Path | list, output: str | Path, order: int = 3, lang: str = "en",
             tokenize: bool = True, lowercase: bool = False, memory: str = "20%",
             prune: list[int] | None = None, field: int | None = None,
             sample: int | None = None, seed: int = 1) -> Path:
    """Train a KenLM model on text files (one sentence per line, ``.gz`` allowed; or, with
    ``field``, that 0-based tab-separated field of each line, e.g. one side of a TSV corpus) with
    ``lmplz`` and write it as a binary with ``build_binary``; the tokenisation settings go to
    ``<output>.json``. ``sample`` trains on a uniform random sample of that many lines (seeded
    by ``seed``), drawn in one streaming pass. Returns the output path."""
    texts = [Path(t) for t in (text if isinstance(text, (list, tuple)) else [text])]
    output = Path(output)
    for t in texts:
        if not t.exists():
            raise InputError(f"train-lm: text file {t} does not exist")
    lmplz, build = find_tool("lmplz"), find_tool("build_binary")
    if not lmplz or not build:
        missing = "lmplz" if not lmplz else "build_binary"
        raise ComponentError(f"train-lm: KenLM's {missing} was not found; {_BUILD_HINT}")
    tok = Tokenizer(lang, lowercase, enabled=tokenize)
    read = None
    source = _text_lines(texts, field)
    if sample is not None:
        # drawn before lmplz starts: only the sample is tokenised, and a bad line is reported
        # before any training
        source, read = reservoir(source, sample, seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    with scratch_dir("bitextforge-lm-") as tmp:
        arpa = tmp / "model.arpa"
        # --discount_fallback: small corpora lack the count-of-counts Kneser-Ney estimation needs.
        cmd = [lmplz, "-o", str(order), "-S", memory, "-T", str(tmp), "--discount_fallback",
               "--arpa", str(arpa)]
        if prune:
            cmd += ["--prune", *map(str, prune)]
        # killed with bitextforge: lmplz takes its closed input for the end of the text and
        # would go on estimating a model nobody reads
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, text=True, encoding="utf-8",
                                preexec_fn=die_with_parent)
        lines = 0
        try:
            for line in source:
                proc.stdin.write(tok.line(line) + "\n")
                lines += 1
            proc.stdin.close()
        except BrokenPipeError:
            pass
        except BaseException:  # a bad input line: stop lmplz before reporting it
            proc.kill()
            proc.wait()
            raise
        err = proc.stderr.read()
        if proc.wait() != 0:
            tail = err.strip().splitlines()[-1:] or ["(no message)"]
            raise ComponentError(f"train-lm: lmplz failed on {', '.join(map(str, texts))} ({lines} lines): {tail[0]}")
        res = subprocess.run([build, str(arpa), str(output)], capture_output=True, text=True,
                             preexec_fn=die_with_parent)
        if res.returncode != 0:
            tail = res.stderr.strip().splitlines()[-1:] or ["(no message)"]
            raise ComponentError(f"train-lm: build_binary failed: {tail[0]}")
    meta = {"order": order, "lang": lang, "tokenize": tokenize, "lowercase": lowercase,
            "lines": lines, "text": ", ".join(map(str, texts))}
    if read is not None:
        meta["sampled_from"] = read
    Path(str(output) + ".json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return output


class KenlmPerplexityFilter(Filter):
    """KenLM per-word perplexity of one column (lower = more fluent); bound with ``keep.max``.

    Perplexity counts ``</s>`` as a word: ``10 ** (-log10 P / (words + 1))``. Tokenisation and
    lowercasing follow ``<model>.json`` written by ``bitextforge train-lm`` unless set here
    (setting them differently from training is refused). Wieting et al. 2017, 5.5.
    """

    name = "kenlm_perplexity.v1"
    extra = "quality"

    class Config(Filter.Config):
        """Options of kenlm_perplexity.v1."""

        model: str = Field(..., description="KenLM model (.binary from `bitextforge train-lm`, "
                           "or any .arpa / binary).")
        column: str = Field("tgt", description="Column to score.")
        tokenize: bool | None = Field(None, description="sacremoses-tokenise before scoring; "
                                      "empty: as in <model>.json (yes when there is none).")
        lowercase: bool | None = Field(None, description="Lowercase before scoring; empty: as "
                                       "in <model>.json (no when there is none).")
        lang: str | None = Field(None, description="sacremoses language; empty: as in "
                                 "<model>.json (en when there is none).")

    @classmethod
    def input_paths(cls, config):
        """The KenLM model file."""
        return {"model": config.model}

    @classmethod
    def doctor(cls):
        """Whether KenLM's lmplz and build_binary (for `train-lm`) exist (the kenlm module is the
        quality extra, which the framework checks)."""
        out = []
        for tool in ("lmplz", "build_binary"):
            path = find_tool(tool)
            out.append((path is not None, f"KenLM {tool} ({path or 'not found'})", _BUILD_HINT))
        return out

    def __init__(self, config=None):
        """Load the model and resolve the tokenisation settings."""
        super().__init__(config)
        c = self.config
        path = Path(c.model)
        if not path.exists():
            raise ComponentError(f"kenlm_perplexity.v1: model {path} does not exist; train one "
                                 f"with `bitextforge train-lm --text FILE --output {path}`")
        meta_path = Path(str(path) + ".json")
        meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
        settings = {}
        for key, default in (("tokenize", True), ("lowercase", False), ("lang", "en")):
            mine, trained = getattr(c, key), meta.get(key)
            if mine is not None and trained is not None and mine != trained:
                raise ComponentError(f"kenlm_perplexity.v1: {key}={mine} but {path} was trained "
                                     f"with {key}={trained} ({meta_path}); remove the option or "
                                     f"retrain")
            settings[key] = mine if mine is not None else (trained if trained is not None
                                                            else default)
        self.settings = settings
        self.tok = Tokenizer(settings["lang"], settings["lowercase"], settings["tokenize"])
        import kenlm

        try:
            self.model = kenlm.Model(str(path))
        except OSError as exc:
            raise ComponentError(f"kenlm_perplexity.v1: cannot read {path} as a KenLM model "
                                 f"({exc})") from exc
        self.order = self.model.order  # the manifest asks after close()

    def score(self, batch):
        """Per-word perplexity per row."""
        col = self.config.column
        if col not in batch:
            raise ComponentError(f"kenlm_perplexity.v1: column {col!r} does not exist; columns "
                                 f"are {', '.join(batch)}")
        ppl, line = self.model.perplexity, self.tok.line
        return [ppl(line(t or "")) for t in batch[col]]

    def manifest_info(self):
        """Model order and tokenisation."""
        return {"order": self.order, **self.settings}

    def close(self):
        """Drop the model."""
        self.model = None
