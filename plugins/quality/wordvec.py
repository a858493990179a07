"""ParaNMT-50M's paraphrase score (``paraphrase_score.v1``): cosine of averaged word embeddings.

Wieting & Gimpel 2018 (ParaNMT-50M, section 5.4) score a back-translated pair by the cosine
similarity of the averages of its word embeddings (their paragram-phrase model); a low score flags
an unrelated or broken paraphrase, a score of 1 a copy. Here the embeddings come from any
word2vec *text* format file the user gives (a ``.vec`` file: an optional ``count dim`` header, then
``word v1 .. vdim`` per line, as fastText, GloVe-converted or paragram vectors are distributed;
``.gz`` allowed). Tokens come from sacremoses, lowercased by default; tokens without a vector are
skipped, and a sentence with no known token scores 0.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import Field

from bitextforge import ComponentError, Filter
from bitextforge.api import text_lines

from ._common import Tokenizer, column_texts, pick_columns


def load_word_vectors(path: str | Path, limit: int | None = None):
    """``(vocab dict word -> row, float32 matrix)`` from a word2vec text-format file."""
    import numpy as np

    path = Path(path)
    if not path.exists():
        raise ComponentError(f"paraphrase_score.v1: vectors file {path} does not exist")
    vocab: dict[str, int] = {}
    rows = []
    dim = None
    for lineno, line in enumerate(text_lines(path, errors="replace"), 1):
        parts = line.rstrip(" ").split(" ")
        if lineno == 1 and len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            continue  # word2vec header: count and dimension
        if dim is None:
            dim = len(parts) - 1
        if len(parts) - 1 != dim:
            raise ComponentError(f"paraphrase_score.v1: {path}:{lineno}: {len(parts) - 1} "
                                 f"values, expected {dim} (word2vec text format)")
        if parts[0] in vocab:
            continue
        vocab[parts[0]] = len(rows)
        rows.append(parts[1:])
        if limit is not None and len(rows) >= limit:
            break
    if not rows:
        raise ComponentError(f"paraphrase_score.v1: {path} holds no vectors")
    try:
        mat = np.asarray(rows, dtype=np.float32)
    except ValueError as exc:
        raise ComponentError(f"paraphrase_score.v1: {path}: non-numeric vector value") from exc
    return vocab, mat


class ParaphraseScoreFilter(Filter):
    """Cosine of the averaged word vectors of two columns (ParaNMT-50M, 5.4), in [-1, 1].

    Vectors from a word2vec text-format file (``vectors:``); unknown tokens are skipped; a
    sentence without a known token scores 0.
    """

    name = "paraphrase_score.v1"
    extra = "quality"

    class Config(Filter.Config):
        """Options of paraphrase_score.v1."""

        vectors: str = Field(..., description="word2vec text-format file (.vec, .txt, .gz).")
        columns: tuple[str, str] | None = Field(
            None, description="Two columns to compare; empty: the paraphrased side and its "
                              "<side>_original if present, else [src, tgt].")
        lowercase: bool = Field(True, description="Lowercase tokens before lookup.")
        lang: str = Field("en", description="sacremoses language (ISO 639-1).")
        limit: int | None = Field(None, ge=1, description="Read only the first N vectors "
                                  "(files are usually sorted by frequency).")

    @classmethod
    def input_paths(cls, config):
        """The word-vector file."""
        return {"vectors": config.vectors}

    def __init__(self, config=None):
        """Read the vectors once."""
        super().__init__(config)
        c = self.config
        self.vocab, self.matrix = load_word_vectors(c.vectors, c.limit)
        self.tok = Tokenizer(c.lang, c.lowercase)

    def _average(self, texts: list[str]):
        import numpy as np

        out = np.zeros((len(texts), self.matrix.shape[1]), dtype=np.float32)
        get = self.vocab.get
        for i, t in enumerate(texts):
            ids = [j for j in (get(w) for w in self.tok.tokens(t)) if j is not None]
            if ids:
                out[i] = self.matrix[ids].mean(axis=0)
        return out

    def score(self, batch):
        """Cosine per row (0 when a side has no known token)."""
        import numpy as np

        a, b = pick_columns(self.name, batch, self.config.columns)
        x, y = self._average(column_texts(batch, a)), self._average(column_texts(batch, b))
        norm = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
        dot = np.einsum("ij,ij->i", x, y)
        cos = np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)
        return np.clip(cos, -1.0, 1.0).astype(float).tolist()

    def manifest_info(self):
        """Vocabulary size and dimension."""
        return {"words": len(self.vocab), "dim": int(self.matrix.shape[1])}


def train_word_vectors(text: str | Path, output: str | Path, dim: int = 100, window: int = 5,
                       min_count: int = 3, lang: str = "en", lowercase: bool = True,
                       max_words: int = 100_000, seed: int = 0) -> tuple[Path, int]:
    """Train count-based word vectors on a text file and write them in word2vec text format.

    Positive PMI of word-context co-occurrences within ``window`` tokens (context distribution
    smoothed with exponent 0.75), reduced to ``dim`` dimensions with scikit-learn's truncated SVD,
    rows ``U * sqrt(S)`` (Levy, Goldberg & Dagan 2015). A cheap stand-in for the paragram vectors
    ParaNMT-50M uses: seconds for a few hundred thousand tokens. Returns (path, vocabulary size).
    """
    import numpy as np
    from scipy.sparse import coo_matrix
    from sklearn.decomposition import TruncatedSVD

    from .classifier import read_text_lines

    tok = Tokenizer(lang, lowercase)
    sents = [tok.tokens(t) for t in read_text_lines(text)]
    counts = Counter(w for s in sents for w in s)
    vocab = [w for w, c in counts.most_common(max_words) if c >= min_count]
    if len(vocab) <= dim:
        raise ComponentError(f"train-word-vectors: only {len(vocab)} words occur {min_count}+ "
                             f"times in {text}; use more text, a lower --min-count or --dim")
    index = {w: i for i, w in enumerate(vocab)}
    rows, cols = [], []
    for s in sents:
        ids = np.fromiter((index.get(w, -1) for w in s), dtype=np.int64)
        for k in range(1, window + 1):
            a, b = ids[:-k], ids[k:]
            ok = (a >= 0) & (b >= 0)
            rows += [a[ok], b[ok]]
            cols += [b[ok], a[ok]]
    r, c = np.concatenate(rows), np.concatenate(cols)
    n = len(vocab)
    m = coo_matrix((np.ones(len(r), dtype=np.float64), (r, c)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    wsum = np.asarray(m.sum(axis=1)).ravel()
    csum = np.asarray(m.sum(axis=0)).ravel() ** 0.75
    m = m.tocoo()
    pmi = np.log(m.data * csum.sum() / (wsum[m.row] * csum[m.col]))
    keep = pmi > 0
    ppmi = coo_matrix((pmi[keep], (m.row[keep], m.col[keep])), shape=(n, n)).tocsr()
    svd = TruncatedSVD(n_components=dim, random_state=seed)
    us = svd.fit_transform(ppmi)
    vec = us / np.sqrt(np.maximum(svd.singular_values_, 1e-12))
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as fh:
        fh.write(f"{n} {dim}\n")
        for w, v in zip(vocab, vec):
            fh.write(w + " " + " ".join(f"{x:.5f}" for x in v) + "\n")
    return output, n
