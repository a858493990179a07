"""expansion_curve.v1: Nichols et al.'s learning curve of expanded corpora, and roundtrip.v1's
conversion to and from Moses-tokenized lowercase text (the form of the Tanaka corpus).

The curve tests train 2-update models on 24 pairs written for them, each original with 0 to 3
paraphrases, and check which corpora are trained, which share a model, the comparisons and the
plot; the conversion tests read real Tanaka lines from ../shared/data and round-trip a tiny model.
"""

from __future__ import annotations

import json

import pytest

from bitextforge import InputError
from bitextforge.io.corpus import CorpusView
from bitextforge.errors import BitextforgeError

from conftest import CAPTIONS_DE, CAPTIONS_EN, read_lines, shared

pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")

DE = CAPTIONS_DE + [d[:-1] + " hier." for d in CAPTIONS_DE]
EN = CAPTIONS_EN + [e[:-1] + " here." for e in CAPTIONS_EN]
PARA = ["Now {}", "Look, {}", "Today {}"]
TINY = dict(max_steps=[2], vocab_size=60, d_model=16, layers=1, heads=2, ffn_dim=32,
            batch_tokens=200, min_warmup_steps=0, max_len=16, threads=1, compute_type="float32",
            bootstrap_samples=50)


def _corpus(run_dir):
    """A run's corpus.tsv: original i has i % 4 paraphrases (m = 0, 1, 2, 3), one of them
    differing from another only in case (so it is not distinct)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = ["id\tvariant\torigin\tsrc\ttgt\tweight"]
    for i, (d, e) in enumerate(zip(DE, EN)):
        lines.append(f"{i}\t0\tinput\t{d}\t{e}\t1.0")
        for v in range(i % 4):
            lines.append(f"{i}\t{v + 1}\troundtrip.v1:de\t{d}\t{PARA[v].format(e.lower())}\t1.0")
        if i == 3:
            lines.append(f"{i}\t4\troundtrip.v1:de\t{d}\t{PARA[0].format(e.lower()).upper()}"
                         f"\t1.0")
    (run_dir / "corpus.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return CorpusView(run_dir / "corpus.tsv", numeric=["weight"])


def _evaluator(tmp_path, **kw):
    from bitextforge.plugins.nmt.expansion_curve import ExpansionCurveEvaluator

    (tmp_path / "test.de").write_text("\n".join(DE[:4]) + "\n", encoding="utf-8")
    (tmp_path / "test.en").write_text("\n".join(EN[:4]) + "\n", encoding="utf-8")
    cfg = {"test_src": str(tmp_path / "test.de"), "test_ref": str(tmp_path / "test.en"),
           "src_lang": "de", "tgt_lang": "en", "sizes": [12, 24], "n": [2, 4], **TINY, **kw}
    return ExpansionCurveEvaluator(ExpansionCurveEvaluator.Config(**cfg))


def test_curve_trains_each_distinct_expansion_and_compares_it(tmp_path):
    run = tmp_path / "run"
    report = _evaluator(tmp_path, seeds=[1, 2]).evaluate(_corpus(run))
    curve = json.loads((run / "expansion_curve" / "curve.json").read_text(encoding="utf-8"))
    points = {(p["size"], p["point"]): p for p in curve["points"]}
    assert len(points) == 2 * 7  # d.0/f.0 and d, f, v at n = 2 and 4, per size
    # m per original is 0, 1, 2, 3 in turn (the upper-case copy is not distinct)
    ms = [i % 4 for i in range(24)]
    assert points[(24, "d.0/f.0")]["rows"] == 24
    assert points[(24, "d.2")]["rows"] == 24 * 3
    assert points[(24, "v.2")]["rows"] == sum(min(m, 2) + 1 for m in ms)
    assert points[(24, "d.4")]["rows"] == points[(24, "f.4")]["rows"] == 24 * 5
    assert points[(24, "v.4")]["rows"] == sum(m + 1 for m in ms)
    assert points[(12, "v.4")]["rows"] == sum(m + 1 for m in ms[:12])
    # d and f agree for n <= 2 (the paper's remark): one model serves both
    assert points[(24, "f.2")]["same_as"] == "d.2"
    assert "same_as" not in points[(24, "f.4")]
    # d.4 rotates the paraphrases, f.4 repeats the original: different training files
    d4 = (run / "expansion_curve" / "24" / "d.4" / "data" / "train.tgt").read_text()
    f4 = (run / "expansion_curve" / "24" / "f.4" / "data" / "train.tgt").read_text()
    assert d4 != f4 and sorted(d4.splitlines()) != sorted(f4.splitlines())
    assert f4.count("The dog sleeps.") == 5 and d4.count("The dog sleeps.") == 5  # m = 0
    assert f4.count("A man reads.") == 3 and d4.count("A man reads.") == 2  # m = 2
    for (size, label), p in points.items():
        assert 0 <= p["bleu"] <= 100 and 0 <= p["chrf"] <= 100
        if label == "d.0/f.0":
            assert p["bleu_spread"] >= 0  # two seeds trained
            record = json.loads((run / "expansion_curve" / str(size) / "base" /
                                 "train_and_test.json").read_text(encoding="utf-8"))
            assert sorted(m["seed"] for m in record["models"]) == [1, 2]
        else:
            assert 0 <= p["bleu_p_value"] <= 1 and "bleu_within_seed_spread" in p
            assert report.numbers[f"{size}.{label}.bleu_delta"] == pytest.approx(
                p["bleu"] - points[(size, "d.0/f.0")]["bleu"], abs=0.01)
    png = (run / "expansion-curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and not list(run.glob("*.part"))
    assert "d.4" in report.summary and "same corpus as d.2" in report.summary
    assert report.numbers["paraphrases_per_original"] == pytest.approx(sum(ms) / 24)


def test_parallel_workers_train_the_same_models(tmp_path):
    """Two worker processes train what the sequential pass would: the same BLEU per point."""
    seq = _evaluator(tmp_path, sizes=[24], n=[4], schemes=["first.v1"]).evaluate(
        _corpus(tmp_path / "seq"))
    par = _evaluator(tmp_path, sizes=[24], n=[4], schemes=["first.v1"], workers=2).evaluate(
        _corpus(tmp_path / "par"))
    assert seq.numbers["24.f.4.chrf"] == par.numbers["24.f.4.chrf"]
    assert seq.numbers["24.d.0/f.0.chrf"] == par.numbers["24.d.0/f.0.chrf"]
    assert (tmp_path / "par" / "expansion_curve" / "24" / "f.4" / "model-seed1" /
            "config.json").is_file()


def test_interrupted_workers_are_stopped_not_waited_for(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM while the workers train stops them at once; the pool's own shutdown
    would wait for every training still running."""
    import concurrent.futures
    import multiprocessing
    import time

    seen = []

    def interrupted(self, timeout=None):
        deadline = time.time() + 60
        while time.time() < deadline and not seen:
            seen.extend((tmp_path / "run").rglob(".model-seed*.tmp"))
            time.sleep(0.2)  # until a worker has started writing a model
        raise KeyboardInterrupt

    monkeypatch.setattr(concurrent.futures.Future, "result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _evaluator(tmp_path, sizes=[24], n=[4], schemes=["first.v1"], workers=2,
                   max_steps=[100000]).evaluate(_corpus(tmp_path / "run"))
    assert seen and not multiprocessing.active_children()


def test_a_second_run_reuses_every_model(tmp_path, capsys):
    ev = _evaluator(tmp_path, sizes=[24], n=[2], schemes=["varying.v1"])
    first = ev.evaluate(_corpus(tmp_path / "run"))
    capsys.readouterr()
    again = ev.evaluate(_corpus(tmp_path / "run"))
    err = capsys.readouterr().err
    assert "training" not in err and err.count("reusing") == 2
    assert first.numbers == again.numbers


def test_without_paraphrases_only_the_baselines_train(tmp_path, capsys):
    """v adds nothing when no original has a paraphrase: the same corpus as the baseline, no
    model of its own (so a curve's baselines can be trained before its paraphrases exist)."""
    run = tmp_path / "run"
    run.mkdir()
    lines = ["id\tvariant\torigin\tsrc\ttgt\tweight"]
    lines += [f"{i}\t0\tinput\t{d}\t{e}\t1.0" for i, (d, e) in enumerate(zip(DE, EN))]
    (run / "corpus.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = _evaluator(tmp_path, sizes=[24], n=[2], schemes=["varying.v1"]).evaluate(
        CorpusView(run / "corpus.tsv", numeric=["weight"]))
    assert capsys.readouterr().err.count("train_and_test.v1: training ") == 1
    assert report.numbers["24.v.2.bleu"] == report.numbers["24.d.0/f.0.bleu"]
    assert "same corpus as d.0/f.0" in report.summary
    assert not (run / "expansion_curve" / "24" / "v.2").exists()


@pytest.mark.parametrize("kw, message", [
    ({"sizes": [24, 12]}, "strictly increasing"),
    ({"max_steps": [2, 3, 4]}, "one value or one per size"),
    ({"n": [0, 2]}, "at least 1"),
    ({"schemes": ["distributd.v1"]}, "distributed.v1"),
])
def test_bad_options_are_one_clear_error(tmp_path, kw, message):
    with pytest.raises((BitextforgeError, ValueError), match=message):
        _evaluator(tmp_path, **kw)


def test_sizes_beyond_the_corpus_fail_before_training(tmp_path):
    with pytest.raises(InputError, match="sizes: the largest size is 30 originals"):
        _evaluator(tmp_path, sizes=[12, 30]).evaluate(_corpus(tmp_path / "run"))
    assert not (tmp_path / "run" / "expansion_curve").exists()


def test_tanaka_lines_survive_detokenizing_and_tokenizing_again():
    """roundtrip.v1 tokenized_lowercase: Tanaka's tokenized lowercase English, detokenized for a
    model trained on running text and tokenized back, comes out as it went in."""
    from bitextforge.plugins.nmt.paraphrasers import _TokenizedLowercase

    style = _TokenizedLowercase("en")
    assert style.untokenize("i can 't tell who will arrive first .") == \
        "I can't tell who will arrive first."
    assert style.untokenize("okay . sorry .") == "Okay. Sorry."
    assert style.tokenize("Okay. Sorry, I don't know.") == "okay . sorry , i don 't know ."
    assert style.tokenize('He said, "It\'s nine."') == "he said , '' it 's nine . ''"
    lines = read_lines(shared("small_parallel_enja", "train.en"), 3000)
    same = sum(style.tokenize(style.untokenize(s)) == s for s in lines)
    assert same / len(lines) > 0.995


def test_roundtrip_candidates_take_the_corpus_form(tmp_path):
    """With tokenized_lowercase the candidates of a model trained on cased running text are
    tokenized and lowercased like the input; without it they are not."""
    from sacremoses import MosesTokenizer

    from bitextforge.plugins.nmt.paraphrasers import RoundTripParaphraser
    from bitextforge.plugins.nmt.train import TrainOptions, train

    de = read_lines(shared("multi30k", "train.de.gz"), 300)
    en = read_lines(shared("multi30k", "train.en.gz"), 300)
    (tmp_path / "t.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    (tmp_path / "t.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    train(TrainOptions(src_train=str(tmp_path / "t.en"), tgt_train=str(tmp_path / "t.de"),
                       src_lang="en", tgt_lang="de", output=str(tmp_path / "m"), max_steps=80,
                       vocab_size=400, d_model=32, layers=1, heads=2, ffn_dim=64,
                       batch_tokens=600, lr=3e-3, min_warmup_steps=0, threads=1, max_len=24),
          log=lambda m: None)
    m = str(tmp_path / "m")
    inputs = [" ".join(MosesTokenizer(lang="en").tokenize(s, escape=False)).lower()
              for s in en[:6]]
    pivots = [{"lang": "de", "forward": m, "backward": m}]

    def candidates(**kw):
        p = RoundTripParaphraser(RoundTripParaphraser.Config(
            pivots=pivots, k=2, beam=2, max_length=24, threads=1, keep_identical=True, **kw))
        try:
            return [t for cands in p.paraphrase(inputs) for t, _, _ in cands]
        finally:
            p.close()

    plain = candidates()
    styled = candidates(tokenized_lowercase=True)
    assert plain and styled
    assert any(t != t.lower() for t in plain)  # the model writes capitals
    tok = MosesTokenizer(lang="en")
    for t in styled:
        assert t == t.lower() and t == " ".join(tok.tokenize(t, escape=False))
