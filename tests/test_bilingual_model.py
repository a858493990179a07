"""Training, saving, loading and using a tiny bilingual embedding model (Kim et al.) trained in
seconds on pairs written for this test, through the CLI, the filter and the evaluator."""

import io
import json

import numpy as np
import pytest

from bitextforge import ComponentError, InputError
from bitextforge.cli.main import main
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

DE = ["der hund schläft", "die katze schläft", "der hund läuft", "die katze läuft",
      "ein mann isst brot", "eine frau isst brot", "ein mann trinkt wasser",
      "eine frau trinkt wasser", "das kind spielt im garten", "das kind schläft im haus",
      "der vogel singt", "der vogel fliegt", "zwei männer spielen fußball",
      "zwei frauen lesen bücher", "ein roter ball", "ein blaues auto"]
EN = ["the dog sleeps", "the cat sleeps", "the dog runs", "the cat runs",
      "a man eats bread", "a woman eats bread", "a man drinks water", "a woman drinks water",
      "the child plays in the garden", "the child sleeps in the house", "the bird sings",
      "the bird flies", "two men play soccer", "two women read books", "a red ball",
      "a blue car"]
TINY = ["--vocab-size", "90", "--embed-dim", "16", "--hidden-dim", "16", "--batch-size", "8",
        "--max-steps", "100", "--lr", "0.02", "--save-minutes", "100"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny model trained through `bitextforge train-bilingual` on the 16 pairs above."""
    d = tmp_path_factory.mktemp("bil")
    (d / "t.de").write_text("\n".join(DE) + "\n", encoding="utf-8")
    (d / "t.en").write_text("\n".join(EN) + "\n", encoding="utf-8")
    out = d / "model"
    rc = main(["train-bilingual", "--src", str(d / "t.de"), "--tgt", str(d / "t.en"),
               "--dev-src", str(d / "t.de"), "--dev-tgt", str(d / "t.en"), "-o", str(out), *TINY])
    assert rc == 0
    return d, out


def test_model_directory_and_training_log(tiny):
    d, out = tiny
    meta = json.loads((out / "config.json").read_text())
    assert {p.name for p in out.iterdir()} >= {"config.json", "spm.model", "model.pt"}
    assert meta["model"]["hidden_dim"] == 16 and meta["model"]["lowercase"] is True
    log = meta["info"]["log"][-1]
    assert log["step"] == 100
    # a random 90-subword model starts near ln(90) = 4.5 nats per token; training must go lower
    assert log["loss_per_token"] < 2.5
    # on its own training pairs the embedding space must align better than chance (15/16 wrong)
    assert log["dev_cosine_error"] < 0.5


def test_embeddings_are_deterministic_and_batched(tiny):
    from bitextforge.plugins.bilingual.model import BilingualModel

    _, out = tiny
    m = BilingualModel.load(out)
    one = m.embed(DE, "src", batch_size=3)
    two = m.embed(DE, "src", batch_size=64)
    assert one.shape == (16, 32) and np.allclose(one, two, atol=1e-5)
    assert not np.allclose(m.embed(DE[:2], "tgt"), one[:2])  # two different encoders
    assert m.embed([""], "src").shape == (1, 32)  # empty line still embeds
    with pytest.raises(ValueError):
        m.embed(DE, "de")


def test_filter_and_evaluator_in_a_recipe(tiny, tmp_path):
    from bitextforge.plugins.bilingual.model import BilingualModel
    from bitextforge.plugins.bilingual.similarity import pair_scores

    d, out = tiny
    # the last four pairs are misaligned: a word budget must drop them first
    src = DE[:8] + DE[8:12]
    tgt = EN[:8] + EN[12:16]
    (tmp_path / "c.de").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp_path / "c.en").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    words = sum(len(s.split()) + len(t.split()) for s, t in zip(src[:8], tgt[:8]))
    text = (f"name: t\ninput: {{src: '{tmp_path}/c.de', tgt: '{tmp_path}/c.en'}}\n"
            f"output: {{dir: '{tmp_path}/run'}}\nprogress: false\nbatch_size: 5\nsteps:\n"
            f"  - filter: bilingual_similarity.v1\n    with: {{model: '{out}'}}\n"
            f"    keep: {{words: {words}, words_side: both}}\n"
            f"evaluate:\n  - evaluator: alignment_recovery.v1\n    with: {{model: '{out}', "
            f"src: '{d}/t.de', tgt: '{d}/t.en', measure: csls}}\n"
            f"  - evaluator: alignment_recovery.v1\n    with: {{measure: levenshtein}}\n")
    res = run_recipe(parse_recipe(text, "r.yaml"))
    kept = (tmp_path / "run" / "corpus.src").read_text(encoding="utf-8").splitlines()
    # a 100-step toy model is no oracle: most of the budget must go to the aligned pairs
    assert len(set(kept) & set(src[:8])) >= 6 and len(set(kept) & set(src[8:])) <= 1
    rows = [ln.split("\t") for ln in (tmp_path / "run" / "corpus.tsv").read_text().splitlines()]
    head = rows[0]
    m = BilingualModel.load(out)
    want = pair_scores(m.embed(src, "src"), m.embed(tgt, "tgt"), "cosine")
    got = {r[head.index("src")]: float(r[head.index("bilingual_similarity")]) for r in rows[1:]}
    assert got[src[0]] == pytest.approx(want[0], abs=1e-4)
    assert np.mean(want[:8]) > np.mean(want[8:])
    reports = list(res.reports.values())
    csls = reports[0]["numbers"]
    assert csls["sentences"] == 16 and 0 <= csls["error"] < 0.5
    assert reports[1]["numbers"]["sentences"] == len(kept)


def test_mlp_cli_and_filter(tiny, tmp_path):
    from bitextforge.plugins.bilingual.components import BilingualSimilarityFilter

    d, out = tiny
    mlp = tmp_path / "mlp.joblib"
    rc = main(["train-mlp-similarity", "--model", str(out), "--src", str(d / "t.de"),
               "--tgt", str(d / "t.en"), "--negatives", "shuffle", "--count", "64",
               "--hidden", "32,32", "--max-iter", "200", "-o", str(mlp)])
    assert rc == 0
    f = BilingualSimilarityFilter(BilingualSimilarityFilter.Config(
        model=str(out), measure="mlp", mlp=str(mlp)))
    good = f.score({"src": DE[:8], "tgt": EN[:8]})
    bad = f.score({"src": DE[:8], "tgt": EN[8:16]})
    assert all(0 <= s <= 1 for s in good + bad) and np.mean(good) > np.mean(bad)


def test_user_errors_are_one_line(tiny, tmp_path):
    from bitextforge.plugins.bilingual.components import (AlignmentRecoveryEvaluator,
                                                          BilingualSimilarityFilter)

    _, out = tiny
    with pytest.raises(ComponentError, match="not a bilingual embedding model directory"):
        BilingualSimilarityFilter(BilingualSimilarityFilter.Config(model=str(tmp_path)))
    with pytest.raises(ComponentError, match="needs `mlp`"):
        BilingualSimilarityFilter(BilingualSimilarityFilter.Config(model=str(out), measure="mlp"))
    with pytest.raises(ComponentError, match="needs `model`"):
        AlignmentRecoveryEvaluator(AlignmentRecoveryEvaluator.Config(measure="cosine"))
    assert main(["train-bilingual", "--src", str(tmp_path / "nope.de"), "--tgt",
                 str(tmp_path / "nope.en"), "-o", str(tmp_path / "m")]) == 2
    with pytest.raises(InputError, match="line-aligned"):
        from bitextforge.plugins.bilingual.train import read_pairs
        (tmp_path / "a").write_text("x\ny\n")
        (tmp_path / "b").write_text("x\n")
        read_pairs([str(tmp_path / "a")], [str(tmp_path / "b")])


def test_reverse_direction_trains(tmp_path):
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual

    cfg = TrainConfig(vocab_size=90, embed_dim=16, hidden_dim=16, batch_size=8, max_steps=20,
                      direction="reverse", save_minutes=100)
    out = train_bilingual(cfg, DE, EN, tmp_path / "rev", log=lambda s: None)
    meta = json.loads((out / "config.json").read_text())
    assert meta["model"]["direction"] == "reverse" and meta["info"]["log"][-1]["step"] == 20


def test_negative_sets_of_section_5_2(tiny):
    from bitextforge.plugins.bilingual.mlp_training import choose_negatives
    from bitextforge.plugins.bilingual.model import BilingualModel
    from bitextforge.plugins.bilingual.similarity import pair_scores

    _, out = tiny
    m = BilingualModel.load(out)
    noisy_tgt = EN[:8] + EN[::-1][:8]
    s, t = choose_negatives(m, DE, EN, "shuffle", None, None, 60, 40, seed=3)
    assert len(s) == 40 and all(EN[DE.index(a)] != b for a, b in zip(s, t))
    s, t = choose_negatives(m, DE, EN, "worst", DE, noisy_tgt, 50, 3, seed=3)
    scores = pair_scores(m.embed(DE, "src"), m.embed(noisy_tgt, "tgt"), "cosine")
    ranked = [DE[i] for i in np.argsort(-scores, kind="stable")]
    assert s == ranked[5:8]  # the last 3 lines of the top-50% cut (8 of 16 lines)
    with pytest.raises(InputError, match="noisy"):
        choose_negatives(m, DE, EN, "random", None, None, 60, 4, seed=3)


def test_decode_loss_counts_real_tokens_only():
    """The loss projects only non-padding positions onto the vocabulary; it must equal the plain
    cross-entropy over the whole padded batch with padding ignored, gradients included."""
    import torch

    from bitextforge.plugins.bilingual.model import BilingualEmbedder, ModelConfig, pad

    torch.manual_seed(0)
    net = BilingualEmbedder(ModelConfig(vocab_size=40, embed_dim=8, hidden_dim=6))
    cfg = net.cfg
    y, _ = pad([[5, 6, 7, cfg.eos_id], [9, cfg.eos_id], [11, 12, cfg.eos_id]], cfg.pad_id)
    s0 = torch.randn(3, 12, requires_grad=True)
    got = net.decode_loss(s0, y)
    (g_got,) = torch.autograd.grad(got, s0)
    # the same computation over every padded position, padding ignored by cross_entropy
    logits = net.bridge(net.decoder_states(s0, y)) @ net.embed["dec"].weight.T
    want = torch.nn.functional.cross_entropy(logits.reshape(-1, 40), y.reshape(-1),
                                             ignore_index=cfg.pad_id, reduction="sum")
    (g_want,) = torch.autograd.grad(want, s0)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(g_got, g_want, atol=1e-5)


def test_recipe_prepare_trains_model_and_mlp_then_reuses_them(tmp_path):
    """bilingual_model.v1 and mlp_similarity_model.v1 in a recipe's prepare: list train on the
    first run (as recipes/kim-alignment.yaml and the kim-bilingual study's recipes do), the MLP on
    the model just trained, the filter step then
    scores with both; a second run finds them and trains nothing."""
    (tmp_path / "t.de").write_text("\n".join(DE) + "\n", encoding="utf-8")
    (tmp_path / "t.en").write_text("\n".join(EN) + "\n", encoding="utf-8")
    model, mlp = tmp_path / "models" / "bil", tmp_path / "models" / "mlp.joblib"
    text = f"""\
name: kim-prepare
input: {{src: '{tmp_path}/t.de', tgt: '{tmp_path}/t.en'}}
output: {{dir: '{tmp_path}/run'}}
progress: false
prepare:
  - train: bilingual_model.v1
    with: {{src: ['{tmp_path}/t.de'], tgt: ['{tmp_path}/t.en'], output: '{model}',
           vocab_size: 90, embed_dim: 16, hidden_dim: 16, batch_size: 8, max_steps: 20,
           lr: 0.02, threads: 1}}
  - train: mlp_similarity_model.v1
    with: {{model: '{model}', src: ['{tmp_path}/t.de'], tgt: ['{tmp_path}/t.en'],
           hidden: [16], max_iter: 20, output: '{mlp}'}}
steps:
  - filter: bilingual_similarity.v1
    with: {{model: '{model}', measure: mlp, mlp: '{mlp}'}}
    keep: {{min: 0.0}}
"""
    res = run_recipe(parse_recipe(text, "r.yaml"))
    assert [p["status"] for p in res.manifest["prepare"]] == ["trained", "trained"]
    meta = json.loads((model / "config.json").read_text())
    assert meta["info"]["log"][-1]["step"] == 20 and mlp.is_file()
    rows = (tmp_path / "run" / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    head = rows[0].split("\t")
    scores = [float(r.split("\t")[head.index("bilingual_similarity")]) for r in rows[1:]]
    assert len(scores) == 16 and all(0.0 <= s <= 1.0 for s in scores)  # MLP probabilities
    res = run_recipe(parse_recipe(text, "r.yaml"))
    assert [p["status"] for p in res.manifest["prepare"]] == ["exists", "exists"]


def test_bf16_autocast_trains_close_to_fp32(tmp_path):
    """precision: bf16 runs the training forward pass under bf16 autocast: the same seed and
    batches give a loss that differs from fp32 by rounding only; auto resolves by the CPU's
    flags and is recorded in the model directory."""
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual
    from bitextforge.plugins.nmt.train import resolve_precision

    losses = {}
    for precision in ("fp32", "bf16", "auto"):
        cfg = TrainConfig(vocab_size=90, embed_dim=16, hidden_dim=16, batch_size=8, max_steps=10,
                          lr=0.02, save_minutes=100, precision=precision)
        out = train_bilingual(cfg, DE, EN, tmp_path / precision, log=lambda s: None)
        info = json.loads((out / "config.json").read_text())["info"]
        assert info["precision"] == resolve_precision(precision)
        losses[precision] = info["log"][-1]["loss_per_token"]
    assert TrainConfig().precision == "auto"
    assert losses["bf16"] != losses["fp32"]
    assert losses["bf16"] == pytest.approx(losses["fp32"], rel=0.05)
    assert losses["auto"] == losses[resolve_precision("auto")]


def test_tsv_corpus_test_sets_and_snapshots(tmp_path):
    """train-bilingual reads TSV corpora in either field order (tsv_langs), logs each test set's
    cosine and CSLS alignment error at every save with the training time, and keeps a snapshot
    of every save."""
    from bitextforge.plugins.bilingual.model import BilingualModel

    (tmp_path / "c.tsv").write_text("".join(f"{e}\t{d}\n" for d, e in zip(DE, EN)),
                                    encoding="utf-8")  # English first
    (tmp_path / "t.de").write_text("\n".join(DE) + "\n", encoding="utf-8")
    (tmp_path / "t.en").write_text("\n".join(EN) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    rc = main(["train-bilingual", "--train-tsv", str(tmp_path / "c.tsv"), "--tsv-langs", "en-de",
               "--src-lang", "de", "--tgt-lang", "en", "--snapshots", "--set",
               f"tests=[['{tmp_path}/t.de', '{tmp_path}/t.en']]", "-o", str(out), *TINY])
    assert rc == 0
    info = json.loads((out / "config.json").read_text())["info"]
    last = info["log"][-1]
    assert info["train_pairs"] == 16 and last["step"] == 100
    assert set(last["t.de"]) == {"cosine", "csls"}
    # German went to the source encoder: the test pairs align far better than chance (15/16)
    assert last["t.de"]["csls"] < 0.5 and last["t.de"]["cosine"] < 0.5
    assert 0 <= last["train_minutes"] <= last["minutes"]
    snap = BilingualModel.load(out / "snapshots" / "step-100")
    assert np.allclose(snap.embed(DE, "src"), BilingualModel.load(out).embed(DE, "src"))
    assert main(["train-bilingual", "--src-lang", "de", "--tgt-lang", "en",
                 "-o", str(tmp_path / "m2")]) == 2  # no corpus at all
    assert main(["train-bilingual", "--train-tsv", str(tmp_path / "c.tsv"), "--tsv-langs",
                 "en-fr", "--src-lang", "de", "--tgt-lang", "en", "-o", str(tmp_path / "m3")]) == 2


#: one-word translations of every word of DE above, in Ding's layout (line number, de, en);
#: "im" is "in the", two words, and gives no one-word pair
DING = ("1\tder; die; das\tthe\n2\thund\tdog\n3\tschläft\tsleeps\n4\tkatze\tcat\n5\tläuft\truns\n"
        "6\tein; eine\ta\n7\tmann\tman\n8\tisst\teats\n9\tbrot\tbread\n10\tfrau\twoman\n"
        "11\ttrinkt\tdrinks\n12\twasser\twater\n13\tkind\tchild\n14\tspielt\tplays\n"
        "15\tim\tin the\n16\tgarten\tgarden\n17\thaus\thouse\n18\tvogel\tbird\n19\tsingt\tsings\n"
        "20\tfliegt\tflies\n21\tzwei\ttwo\n22\tmänner\tmen\n23\tspielen\tplay\n"
        "24\tfußball\tsoccer\n25\tfrauen\twomen\n26\tlesen\tread\n27\tbücher\tbooks\n"
        "28\troter\tred\n29\tball\tball\n30\tblaues\tblue\n31\tauto\tcar\n")


def test_dictionary_initialisation_aligns_before_training(tmp_path):
    """With init_from_dictionary an untrained model already maps word-by-word translations
    together (source subwords at their translations' embeddings, one encoder copied to the
    other); a random start is at chance."""
    import sentencepiece as spm
    import torch

    from bitextforge.plugins.bilingual.lexicon_init import (dictionary_translations,
                                                            init_from_dictionary)
    from bitextforge.plugins.bilingual.model import (BilingualEmbedder, BilingualModel,
                                                     ModelConfig)
    from bitextforge.plugins.bilingual.similarity import alignment_errors

    (tmp_path / "ding.tsv").write_text("line\tde\ten\n" + DING, encoding="utf-8")
    # a word-level vocabulary, so every word of these short texts is a whole-word subword, as
    # frequent words are in the unigram vocabulary of a real corpus
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(DE + EN), model_writer=buf,
                                   model_type="word", vocab_size=200, hard_vocab_limit=False,
                                   pad_id=0, unk_id=1, bos_id=2, eos_id=3, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
    errors = {}
    for init in (False, True):
        torch.manual_seed(0)
        net = BilingualEmbedder(ModelConfig(vocab_size=sp.get_piece_size(), embed_dim=16,
                                            hidden_dim=16))
        if init:
            words = dictionary_translations(str(tmp_path / "ding.tsv"), ("de", "en"), "de", "en")
            assert words["hund"] == {"dog"} and "im" not in words
            assert init_from_dictionary(net, sp, words) >= 20
            assert torch.equal(net.embed["src"].weight[sp.piece_to_id("\u2581hund")],
                               net.embed["tgt"].weight[sp.piece_to_id("\u2581dog")])
        m = BilingualModel(net.cfg, sp, net)
        errors[init] = alignment_errors(m.embed(DE, "src"), m.embed(EN, "tgt"), "cosine")["error"]
    assert errors[True] <= 0.25 < 0.5 <= errors[False]
    with pytest.raises(InputError, match="does not name"):
        dictionary_translations(str(tmp_path / "ding.tsv"), ("fr", "en"), "de", "en")


def test_trainer_starts_from_a_dictionary(tmp_path):
    """init_lexicon in the trainer: the log says how many subwords it mapped, a missing file is
    a one-line error before any training."""
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual

    (tmp_path / "ding.tsv").write_text("line\tde\ten\n" + DING, encoding="utf-8")
    lines = []
    cfg = TrainConfig(vocab_size=200, embed_dim=16, hidden_dim=16, batch_size=8, max_steps=2,
                      save_minutes=100, init_lexicon=str(tmp_path / "ding.tsv"),
                      init_lexicon_langs="de-en", src_lang="de", tgt_lang="en")
    train_bilingual(cfg, DE, EN, tmp_path / "m", log=lines.append)
    assert any("whole-word subwords at the mean of their translations" in s for s in lines)
    cfg = cfg.model_copy(update={"init_lexicon": str(tmp_path / "nope.tsv")})
    with pytest.raises(InputError, match="nope.tsv"):
        train_bilingual(cfg, DE, EN, tmp_path / "m2", log=lines.append)


def test_shared_encoder_is_one_network_for_both_languages(tmp_path):
    """shared_encoder: true builds one recurrent encoder for both sides (fewer parameters, each
    language keeps its embeddings); it stays one network through training, saving and loading."""
    from bitextforge.plugins.bilingual.model import BilingualEmbedder, BilingualModel, ModelConfig
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual

    two = BilingualEmbedder(ModelConfig(vocab_size=50, embed_dim=8, hidden_dim=8))
    one = BilingualEmbedder(ModelConfig(vocab_size=50, embed_dim=8, hidden_dim=8,
                                        shared_encoder=True))
    enc = sum(p.numel() for p in two.encoder["src"].parameters())
    assert (sum(p.numel() for p in two.parameters())
            - sum(p.numel() for p in one.parameters())) == enc
    cfg = TrainConfig(vocab_size=90, embed_dim=16, hidden_dim=16, batch_size=8, max_steps=5,
                      save_minutes=100, shared_encoder=True)
    m = BilingualModel.load(train_bilingual(cfg, DE, EN, tmp_path / "m", log=lambda s: None))
    assert m.cfg.shared_encoder and m.net.encoder["src"] is m.net.encoder["tgt"]
    # the same words through the two sides differ only by their embeddings
    m.net.embed["tgt"].weight.data.copy_(m.net.embed["src"].weight.data)
    assert np.allclose(m.embed(DE, "src"), m.embed(DE, "tgt"))


def test_vocab_reuses_a_sentencepiece_model(tiny, tmp_path):
    """vocab: an existing spm.model is used as it is, not retrained; a missing one is an error
    naming it."""
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual

    _, model = tiny
    cfg = TrainConfig(vocab=str(model / "spm.model"), vocab_size=50, embed_dim=16, hidden_dim=16,
                      batch_size=8, max_steps=2, save_minutes=100)
    out = train_bilingual(cfg, DE[:4], EN[:4], tmp_path / "m", log=lambda s: None)
    assert (out / "spm.model").read_bytes() == (model / "spm.model").read_bytes()
    with pytest.raises(InputError, match="nope.model"):
        train_bilingual(cfg.model_copy(update={"vocab": str(tmp_path / "nope.model")}), DE, EN,
                        tmp_path / "m2", log=lambda s: None)


def test_every_save_is_logged_once(tmp_path):
    """With dev pairs the log starts at step 0 and has one entry per save; a save at the last
    update is not repeated when training stops."""
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual

    cfg = TrainConfig(vocab_size=90, embed_dim=16, hidden_dim=16, batch_size=8, max_steps=3,
                      save_minutes=1e-6)
    out = train_bilingual(cfg, DE, EN, tmp_path / "m", dev=(DE, EN), log=lambda s: None)
    log = json.loads((out / "config.json").read_text())["info"]["log"]
    assert [e["step"] for e in log] == [0, 1, 2, 3]
    assert log[0]["loss_per_token"] is None and 0 <= log[0]["dev_cosine_error"] <= 1


def test_learning_rate_warms_up_then_decays():
    """warmup: the rate rises linearly to lr over that many updates; the paper's decay follows."""
    from bitextforge.plugins.bilingual.train import TrainConfig, learning_rate

    cfg = TrainConfig(lr=1.0, warmup=4, decay_after=10, decay_every=5, decay=0.5)
    assert [learning_rate(cfg, s) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert learning_rate(cfg, 9) == 1.0 and learning_rate(cfg, 10) == 0.5
    assert learning_rate(cfg, 15) == 0.25
    assert learning_rate(TrainConfig(lr=1.0), 0) == 1.0  # no warm-up by default
