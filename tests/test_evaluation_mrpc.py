"""mrpc.v1: a MiniLM pair classifier learns paraphrase vs unrelated from a few hand-written pairs;
the run's paraphrases join the training sample of their original pair with its label; Welch's
t-test and the gain of BET's eq. 3 from the per-seed scores; the MRPC reader and its errors."""

from __future__ import annotations

import pytest

from bitextforge import InputError
from bitextforge.io.corpus import CorpusView
from bitextforge.plugins.evaluation.mrpc import MrpcEvaluator, read_mrpc

from conftest import shared

PARAPHRASES = [
    ("The company reported higher profits this year.", "Profits at the firm rose this year."),
    ("The minister resigned on Friday.", "On Friday the minister stepped down."),
    ("Heavy rain flooded the streets of the city.", "The city's streets were flooded by heavy rain."),
    ("The team won the championship final.", "The championship final was won by the team."),
    ("Prices of oil fell sharply on Monday.", "Oil prices dropped steeply on Monday."),
    ("The court rejected the appeal.", "The appeal was turned down by the court."),
    ("Scientists discovered a new species of frog.", "A new frog species was found by scientists."),
    ("The airport was closed because of snow.", "Snow forced the airport to close."),
    ("The president will visit Japan next week.", "Next week the president travels to Japan."),
    ("Shares of the bank climbed five percent.", "The bank's stock rose by five percent."),
    ("The school opened a new library.", "A new library was opened at the school."),
    ("Police arrested two men after the robbery.", "Two men were detained by police after the robbery."),
    ("The museum attracts millions of visitors.", "Millions of people visit the museum."),
    ("The factory will cut three hundred jobs.", "Three hundred jobs will be lost at the plant."),
    ("The singer cancelled her tour.", "Her tour was called off by the singer."),
    ("Farmers expect a poor harvest this autumn.", "This autumn's harvest is expected to be poor."),
]


def _mrpc_file(path, rows):
    path.write_text("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n" + "".join(
        f"{y}\t{i}\t{i + 1000}\t{a}\t{b}\r\n" for i, (a, b, y) in enumerate(rows)),
        encoding="utf-8")
    return str(path)


def _labelled(pairs):
    """Each pair (label 1) and its first sentence against the next pair's second (label 0)."""
    out = []
    for i, (a, b) in enumerate(pairs):
        out.append((a, b, 1))
        out.append((a, pairs[(i + 1) % len(pairs)][1], 0))
    return out


def _corpus(tmp_path, originals, paraphrases, scores=lambda i: 1.0):
    """A run's corpus.tsv: the originals (variant 0) and tgt paraphrases (variant 1) with an
    embedding_cosine score of ``scores(row number of the original)``."""
    lines = ["id\tvariant\torigin\tsrc\ttgt\ttgt_original\tweight\tembedding_cosine"]
    for i, (a, b, _) in enumerate(originals):
        lines.append(f"{i}\t0\tinput\t{a}\t{b}\t{b}\t1\t1.0")
        for p in paraphrases.get((a, b), []):
            lines.append(f"{i}\t1\troundtrip.v1\t{a}\t{p}\t{b}\t1\t{scores(i)}")
    (tmp_path / "corpus.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return CorpusView(tmp_path / "corpus.tsv")


# every seed may score 1.0 in both arms: scipy warns about a zero variance, the evaluator reports 1
@pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")
def test_learns_paraphrases_and_compares_with_augmentation(tmp_path):
    train = _labelled(PARAPHRASES[:10])
    test = _labelled(PARAPHRASES[10:])
    # one "paraphrase" of each training pair's second sentence, plus a row whose original is not
    # in MRPC train (counted, not used)
    extra = {(a, b): ["Reportedly, " + b[0].lower() + b[1:]] for a, b, _ in train}
    corpus = _corpus(tmp_path, train + [("Not in MRPC.", "Nowhere.", 1)],
                     {**extra, ("Not in MRPC.", "Nowhere."): ["nowhere."]})
    cfg = MrpcEvaluator.Config(train=_mrpc_file(tmp_path / "train.tsv", train),
                               test=_mrpc_file(tmp_path / "test.tsv", test),
                               sample_sizes=[12], seeds=5, epochs=30)
    rep = MrpcEvaluator(cfg).evaluate(corpus)
    nums = rep.numbers
    assert nums["test_pairs"] == 12
    assert nums["paraphrase_rows"] == 20 and nums["unmatched_paraphrase_rows"] == 1
    # every sampled pair brings its one paraphrase
    assert nums["baseline.12.pairs_mean"] == 12 and nums["augmented.12.pairs_mean"] == 24
    # paraphrase vs unrelated is easy for MiniLM: far above always answering "paraphrase" (0.667)
    assert nums["baseline.12.f1_mean"] > 0.85, rep.summary
    assert nums["augmented.12.f1_mean"] > 0.85, rep.summary
    base, aug = rep.items["baseline.12.f1"], rep.items["augmented.12.f1"]
    assert len(base) == len(aug) == 5
    from scipy.stats import ttest_ind

    p = ttest_ind(aug, base, equal_var=False).pvalue
    assert nums["p_value.augmented.12"] == pytest.approx(1.0 if p != p else p)
    assert nums["gain.augmented.12"] == pytest.approx(100 * (sum(aug) - sum(base)) / sum(base))
    assert "augmented" in rep.summary and "Welch p" in rep.summary


def test_thresholds_make_one_arm_each_and_the_gain_plot(tmp_path):
    """Paraphrases of even-numbered pairs score 0.95, of odd ones 0.85: the 0.9 arm trains on
    half of them, the 0.8 arm on all; the PNG of the gains is written."""
    train = _labelled(PARAPHRASES[:8])
    test = _labelled(PARAPHRASES[8:12])
    extra = {(a, b): ["Reportedly, " + b[0].lower() + b[1:]] for a, b, _ in train}
    corpus = _corpus(tmp_path, train, extra, scores=lambda i: 0.95 if i % 2 == 0 else 0.85)
    png = tmp_path / "plots" / "f1-gain.png"
    cfg = MrpcEvaluator.Config(train=_mrpc_file(tmp_path / "train.tsv", train),
                               test=_mrpc_file(tmp_path / "test.tsv", test),
                               sample_sizes=[16], seeds=2, epochs=5, thresholds=[0.8, 0.9],
                               plot=str(png))
    nums = MrpcEvaluator(cfg).evaluate(corpus).numbers
    assert nums["aug>=0.8.16.pairs_mean"] == 32 and nums["aug>=0.9.16.pairs_mean"] == 24
    assert "gain.aug>=0.9.16" in nums and "p_value.aug>=0.8.16" in nums
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="score column 'cosine'"):
        MrpcEvaluator(cfg.model_copy(update={"score_column": "cosine"})).evaluate(corpus)


def test_without_paraphrase_rows_only_the_baseline(tmp_path):
    train = _labelled(PARAPHRASES[:6])
    test = _labelled(PARAPHRASES[6:9])
    cfg = MrpcEvaluator.Config(train=_mrpc_file(tmp_path / "train.tsv", train),
                               test=_mrpc_file(tmp_path / "test.tsv", test),
                               sample_sizes=[6, 12], seeds=2, epochs=5)
    rep = MrpcEvaluator(cfg).evaluate(_corpus(tmp_path, train, {}))
    assert "augmented.6.f1_mean" not in rep.numbers
    assert rep.numbers["baseline.12.pairs_mean"] == 12
    assert 0 <= rep.numbers["baseline.6.f1_mean"] <= 1
    with pytest.raises(InputError, match=r"sample_sizes \[13\]"):
        MrpcEvaluator(cfg.model_copy(update={"sample_sizes": [13]})).evaluate(
            _corpus(tmp_path, train, {}))


def test_reads_the_shared_mrpc():
    train = read_mrpc(str(shared("mrpc", "msr-para-train.tsv")))
    test = read_mrpc(str(shared("mrpc", "msr-para-test.tsv")))
    assert (len(train), len(test)) == (3576, 1725)
    assert sum(y for *_, y in test) == 1147  # 66.5 % paraphrases: "always 1" has F1 0.799
    assert train[0][0].startswith("Amrozi accused his brother")


def test_bad_mrpc_line_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\nyes\t3\t4\tc\td\n",
                   encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.tsv:3: expected Quality"):
        read_mrpc(str(bad))
