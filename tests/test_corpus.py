"""Readers: paired files, TSV, JSONL, gzip; the input checks that protect a corpus."""

import gzip

import pytest

from bitextforge import InputError
from bitextforge.io.corpus import Reader
from bitextforge.recipe.load import InputSpec


def read(spec, batch_size=3):
    return [b for b in Reader(InputSpec(**spec), batch_size).batches()]


def rows(batches):
    out = []
    for b in batches:
        out.extend(zip(b["src"], b["tgt"]))
    return out


def test_plain_pairs_ids_and_batches(pair_files):
    s, t = pair_files(["a", "b", "c", "d"], ["A", "B", "C", "D"])
    bs = read({"src": str(s), "tgt": str(t)})
    assert [len(b["id"]) for b in bs] == [3, 1]
    assert bs[1]["id"] == [3] and bs[0]["variant"] == [0, 0, 0]
    assert rows(bs) == [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D")]


def test_unequal_line_counts_name_both_files(pair_files):
    s, t = pair_files(["a", "b", "c"], ["A", "B"])
    with pytest.raises(InputError) as err:
        read({"src": str(s), "tgt": str(t)})
    assert str(s) in str(err.value) and str(t) in str(err.value)
    assert "3 lines" in str(err.value) and "2" in str(err.value)
    s, t = pair_files(["a"], ["A", "B", "C"], name="d")
    with pytest.raises(InputError, match="has 3"):
        read({"src": str(s), "tgt": str(t)})


def test_invalid_utf8_error_names_line_or_replaces(tmp_path, pair_files):
    s, t = pair_files(["ok", "ok"], ["fine", "fine"])
    s.write_bytes(b"ok\nbad \xff byte\n")
    with pytest.raises(InputError, match=r"c\.de:2: invalid UTF-8"):
        read({"src": str(s), "tgt": str(t)})
    r = Reader(InputSpec(src=str(s), tgt=str(t), on_invalid_utf8="replace"), 10)
    got = rows(list(r.batches()))
    assert got[1][0] == "bad \ufffd byte" and r.stats.replaced_invalid_utf8 == 1


def test_bom_crlf_and_empty_lines(tmp_path):
    s, t = tmp_path / "a.en", tmp_path / "b.en"
    s.write_bytes(b"\xef\xbb\xbfHello\r\n\r\nBye\r\n")
    t.write_bytes(b"Hallo\n\nTschuess\n")
    assert rows(read({"src": str(s), "tgt": str(t)})) == [("Hello", "Hallo"), ("", ""), ("Bye", "Tschuess")]


def test_gzip_and_truncated_gzip(tmp_path):
    s, t = tmp_path / "a.gz", tmp_path / "b.gz"
    data = "".join(f"line {i}\n" for i in range(2000)).encode()
    s.write_bytes(gzip.compress(data))
    t.write_bytes(gzip.compress(data))
    assert len(rows(read({"src": str(s), "tgt": str(t)}, 500))) == 2000
    t.write_bytes(gzip.compress(data)[:-40])
    with pytest.raises(InputError, match="b.gz: unreadable"):
        read({"src": str(s), "tgt": str(t)}, 500)


def test_plain_text_named_gz_is_called_not_gzip_compressed(tmp_path):
    """Issue #35: plain text named .gz gave "unreadable after line 0: Not a gzipped file (b'De')
    (truncated or corrupt gzip?)"."""
    s, t = tmp_path / "a.de.gz", tmp_path / "a.en"
    s.write_bytes(b"Der Hund\n")
    t.write_bytes(b"The dog\n")
    with pytest.raises(InputError) as err:
        read({"src": str(s), "tgt": str(t)})
    assert str(err.value) == (f"{s}: not gzip-compressed, although its name ends in .gz; "
                              f"compress it or rename it without .gz")
    s.write_bytes(gzip.compress(b"Der Hund\n"))
    assert rows(read({"src": str(s), "tgt": str(t)})) == [("Der Hund", "The dog")]


def test_nul_byte_is_refused(tmp_path, pair_files):
    s, t = pair_files(["a", "b"], ["A", "B"])
    s.write_bytes(b"a\nb\x00c\n")
    with pytest.raises(InputError, match=r"c\.de:2: NUL byte"):
        read({"src": str(s), "tgt": str(t)})


def test_tsv_columns_and_tab_in_field(tmp_path):
    p = tmp_path / "c.tsv"
    p.write_text("src\tlabel\ttgt\nHallo\tV\tHello\nA\tB\tC\tD\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.tsv:3: 4 tab-separated fields, expected 3"):
        read({"path": str(p), "header": True})
    p.write_text("src\tlabel\ttgt\nHallo\tV\tHello\n", encoding="utf-8")
    b = read({"path": str(p), "header": True})[0]
    assert b["src"] == ["Hallo"] and b["tgt"] == ["Hello"] and b["label"] == ["V"]


def test_jsonl(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"src": "Hallo", "tgt": "Hello", "n": 1}\n{"src": "x"}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"c\.jsonl:2: missing key 'tgt'"):
        read({"path": str(p), "extra_fields": ["n"]})


def test_missing_file():
    with pytest.raises(InputError, match="nope.de: no such file"):
        read({"src": "nope.de", "tgt": "nope.en"})


def test_empty_input(pair_files):
    s, t = pair_files([], [])
    assert read({"src": str(s), "tgt": str(t)}) == []


def test_block_reader_agrees_with_line_reader_across_block_edges(tmp_path, monkeypatch):
    """Lines are decoded a block at a time; tiny blocks put every edge case on a block boundary:
    a line longer than a block, CRLF split between blocks, a last line without a newline (its
    trailing CR is not a line end), and error line numbers counted across blocks."""
    from bitextforge.io import corpus

    monkeypatch.setattr(corpus, "BLOCK_BYTES", 7)
    raw = "\ufeffeins\r\nzwei drei vier fünf sechs\n\nä\r\nlast\r".encode()
    p = tmp_path / "x.txt"
    p.write_bytes(raw)
    lines = list(corpus.iter_lines(p, "error", corpus.ReadStats()))
    assert lines == ["eins", "zwei drei vier fünf sechs", "", "ä", "last\r"]
    monkeypatch.setattr(corpus, "BLOCK_BYTES", 1 << 20)
    assert list(corpus.iter_lines(p, "error", corpus.ReadStats())) == lines

    monkeypatch.setattr(corpus, "BLOCK_BYTES", 8)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nfine line\nstill ok\nab\xffcd\n")
    with pytest.raises(InputError, match=r"bad.txt:4: invalid UTF-8 at byte 2"):
        list(corpus.iter_lines(bad, "error", corpus.ReadStats()))
    stats = corpus.ReadStats()
    assert list(corpus.iter_lines(bad, "replace", stats))[3] == "ab\ufffdcd"
    assert stats.replaced_invalid_utf8 == 1
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"a\nbb\nccc\nd\x00d\n")
    with pytest.raises(InputError, match=r"nul.txt:4: NUL byte"):
        list(corpus.iter_lines(nul, "error", corpus.ReadStats()))


def test_plain_reader_limit_and_uneven_files_at_batch_edges(pair_files):
    """The paired fast path: a limit inside a batch, and files that differ by one line exactly at
    a batch boundary."""
    s, t = pair_files(list("abcdef"), list("ABCDEF"))
    assert rows(read({"src": str(s), "tgt": str(t), "limit": 4})) == list(zip("abcd", "ABCD"))
    s, t = pair_files(list("abcdef"), list("ABCDEFG"), name="u")
    with pytest.raises(InputError, match="has 6 lines.*has 7"):
        read({"src": str(s), "tgt": str(t)})
    s, t = pair_files(list("abcdefg"), list("ABCDEF"), name="v")
    with pytest.raises(InputError, match="has 7 lines.*has 6"):
        read({"src": str(s), "tgt": str(t)})
