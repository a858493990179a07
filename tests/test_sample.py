"""The trainers' ``sample:`` option and what it stands on: a seeded reservoir sample that is
uniform, reproducible and holds only the sample (a generator input is never materialised), the
streaming corpus reader it draws from, and ``lexical_translation_model.v1`` / ``kenlm_model.v1``
trained on a sample of a corpus; ``pair_classifier_model.v1``'s two-pass reader draws what the
in-memory one drew."""

from __future__ import annotations

import gzip
import json
import tracemalloc
from collections import Counter

import pytest

from bitextforge import InputError
from bitextforge.api import iter_tsv_pairs, read_tsv_pairs, reservoir, sample_tsv_pairs


def test_reservoir_is_uniform_and_counts_what_it_read():
    """Over 20,000 seeds, each of 20 items is kept in about a quarter of the samples of 5; the
    sample keeps the input's order, and the count is the whole input's."""
    hits = Counter()
    for seed in range(20000):
        kept, seen = reservoir(iter(range(20)), 5, seed)
        assert len(kept) == 5 and kept == sorted(kept) and seen == 20
        hits.update(kept)
    assert set(hits) == set(range(20))
    # binomial(20000, 0.25): sd 61, so 4 sd either side
    assert all(abs(n - 5000) < 250 for n in hits.values()), hits
    # later items are not favoured or slighted: the last quarter holds about a quarter
    assert abs(sum(hits[i] for i in range(15, 20)) / sum(hits.values()) - 0.25) < 0.01


def test_reservoir_is_reproducible_and_short_inputs_are_kept_whole():
    a, n = reservoir(range(100_000), 50, seed=7)
    assert (a, n) == reservoir(range(100_000), 50, seed=7)
    assert a != reservoir(range(100_000), 50, seed=8)[0]
    assert len(set(a)) == 50 and n == 100_000
    assert reservoir(iter(["x", "y"]), 5) == (["x", "y"], 2)
    assert reservoir([], 3) == ([], 0)
    with pytest.raises(ValueError, match="at least 1"):
        reservoir(range(3), 0)


def test_reservoir_never_holds_the_input():
    """Sampling 100 of 200,000 distinct 200-character strings made one at a time: the peak of
    memory allocated stays far under what the strings would take together (about 50 MB)."""
    def lines():
        for i in range(200_000):
            yield f"{i:08d}" + "x" * 192

    tracemalloc.start()
    try:
        kept, seen = reservoir(lines(), 100, seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == 100 and seen == 200_000
    assert peak < 2_000_000, peak


def test_streamed_pairs_are_those_read_in_memory(tmp_path):
    """iter_tsv_pairs yields what read_tsv_pairs returns (blank lines passed over, a file pair's
    empty sides left out) and fails as it does on a one-field line and on files of unequal
    length."""
    a = tmp_path / "a.tsv.gz"
    with gzip.open(a, "wt", encoding="utf-8") as fh:
        fh.write("eins\tone\n\nzwei\ttwo\n")
    (tmp_path / "b.de").write_text("drei\n\nvier\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("three\n\nfour\n", encoding="utf-8")
    entries = [str(a), (str(tmp_path / "b.de"), str(tmp_path / "b.en"))]
    streamed = list(iter_tsv_pairs(entries))
    assert streamed == list(zip(*read_tsv_pairs(entries)))
    assert streamed == [("eins", "one"), ("zwei", "two"), ("drei", "three"), ("vier", "four")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("eins\tone\nzwei\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.tsv:2: expected two tab-separated fields"):
        list(iter_tsv_pairs([str(bad)]))
    (tmp_path / "c.en").write_text("three\n\nfour\nfive\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"b\.de ends at line 3 but .*c\.en goes on"):
        list(iter_tsv_pairs([(str(tmp_path / "b.de"), str(tmp_path / "c.en"))]))
    src, tgt, read = sample_tsv_pairs(entries, 2, seed=3)
    assert read == 4 and len(src) == 2 and set(zip(src, tgt)) <= set(streamed)


@pytest.fixture
def corpus(tmp_path):
    """A TSV of 400 distinct numbered pairs."""
    p = tmp_path / "c.tsv"
    p.write_text("".join(f"der hund {i} schläft\tthe dog {i} sleeps\n" for i in range(400)),
                 encoding="utf-8")
    return p


def test_lexical_tables_train_on_a_seeded_sample(tmp_path, corpus):
    """sample: 50 aligns 50 pairs drawn from all 400 (the manifest says how many were read);
    limit and sample together are refused; limit still takes the first pairs."""
    from pydantic import ValidationError

    from bitextforge.plugins.lexical.components import LexicalTranslationTrainer as T

    facts = T(T.Config(corpus=[str(corpus)], output=str(tmp_path / "s"), sample=50,
                       iterations=2)).train()
    assert facts["pairs"] == 50 and facts["sampled_from"] == 400
    vocab = json.loads((tmp_path / "s" / "vocab.json").read_text(encoding="utf-8"))
    numbers = sorted(int(w) for w in vocab["tgt"] if w.isdigit())
    assert len(numbers) == 50 and numbers[-1] >= 200  # not the first 50
    facts = T(T.Config(corpus=[str(corpus)], output=str(tmp_path / "l"), limit=50,
                       iterations=2)).train()
    vocab = json.loads((tmp_path / "l" / "vocab.json").read_text(encoding="utf-8"))
    assert sorted(int(w) for w in vocab["tgt"] if w.isdigit()) == list(range(50))
    assert "sampled_from" not in facts
    with pytest.raises(ValidationError, match="limit .* or sample .*, not both"):
        T.Config(corpus=[str(corpus)], output="x", limit=5, sample=5)


def test_kenlm_trains_on_a_seeded_sample_of_one_field(tmp_path, corpus):
    """sample: 30 lines of field 1 of 400: the settings file says 30 lines read from 400, and
    the same seed draws the same lines (the same model file)."""
    from bitextforge.plugins.quality.trainers import KenlmTrainer as K

    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.binary"
        K(K.Config(text=str(corpus), field=1, output=str(out), order=2, sample=30,
                   seed=5)).train()
        meta = json.loads((tmp_path / f"{name}.binary.json").read_text())
        assert meta["lines"] == 30 and meta["sampled_from"] == 400
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_pair_classifier_two_pass_reader_draws_what_the_list_reader_drew(tmp_path):
    """read_evenly streams each file twice and draws exactly the pairs that evenly() and
    file_shares() draw from the files read whole, empty sides left out."""
    from bitextforge.plugins.lexical.pair_classifier import evenly, file_shares, read_evenly

    files = []
    for k, n in enumerate((7, 300, 1000)):
        p = tmp_path / f"f{k}.tsv"
        p.write_text("".join(f"s{k}-{i}\t{'' if i % 11 == 3 else f't{k}-{i}'}\n"
                             for i in range(n)), encoding="utf-8")
        files.append(str(p))
    for limit in (None, 3, 40, 333, 5000):
        lists = [evenly(list(zip(*read_tsv_pairs([f]))), None) for f in files]
        want = [p for ps, n in zip(lists, file_shares([len(x) for x in lists], limit))
                for p in evenly(ps, n)]
        src, tgt = read_evenly(files, limit)
        assert list(zip(src, tgt)) == want, limit
    # a limit smaller than the number of files leaves a file out
    assert read_evenly(files, 2) == (["s0-0", "s1-0"], ["t0-0", "t1-0"])
