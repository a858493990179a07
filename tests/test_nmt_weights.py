"""Sentence weights in train-nmt (Marian ``--data-weighting-type sentence``): the weighted loss
and the training run that reads a run's ``corpus.weights``."""

from __future__ import annotations

import pytest

from bitextforge import InputError

from conftest import read_lines, shared

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


def _tiny_model():
    from bitextforge.plugins.nmt.train import TrainOptions, build_model

    opts = TrainOptions(src_train="s", tgt_train="t", src_lang="de", tgt_lang="en", output="o",
                        d_model=16, layers=1, heads=2, ffn_dim=32, dropout=0.0, max_len=16)
    torch.manual_seed(3)
    return build_model(opts, 40)


# Three pairs of token ids (</s> = 0 ends each); the middle one is the longest on both sides,
# so leaving it out also changes the batch's padding.
PAIRS = [([5, 6, 7, 0], [8, 9, 0]),
         ([10, 11, 12, 13, 14, 15, 0], [16, 17, 18, 19, 20, 0]),
         ([21, 22, 0], [23, 24, 25, 0])]


def _grads(model, pairs, weights=None, smoothing=0.1):
    from bitextforge.plugins.nmt.train import collate, weighted_loss

    src, tgt = [p[0] for p in pairs], [p[1] for p in pairs]
    x, m, d, y = collate(torch, src, tgt, list(range(len(pairs))), 39)
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=x, attention_mask=m, decoder_input_ids=d).logits
    if weights is None:  # the unweighted loss train-nmt uses without a weights file
        loss = torch.nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=smoothing)(
            logits.view(-1, logits.size(-1)), y.view(-1))
    else:
        loss = weighted_loss(torch, logits, y, torch.tensor(weights), smoothing)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()
                           if p.grad is not None}


def _assert_same(a, b):
    loss_a, grads_a = a
    loss_b, grads_b = b
    torch.testing.assert_close(loss_a, loss_b, rtol=1e-5, atol=1e-7)
    assert grads_a.keys() == grads_b.keys()
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], rtol=1e-4, atol=1e-7,
                                   msg=lambda m: f"{name}: {m}")


def test_weight_zero_gives_the_gradients_of_training_without_the_pair():
    model = _tiny_model().eval()  # no dropout: both passes see the same network
    _assert_same(_grads(model, PAIRS, [1.0, 0.0, 1.0]), _grads(model, [PAIRS[0], PAIRS[2]]))


def test_weight_two_equals_duplicating_the_pair():
    model = _tiny_model().eval()
    _assert_same(_grads(model, PAIRS, [1.0, 2.0, 1.0]),
                 _grads(model, [PAIRS[0], PAIRS[1], PAIRS[1], PAIRS[2]]))


def test_weights_of_one_are_the_unweighted_loss_and_other_weights_are_not():
    model = _tiny_model().eval()
    _assert_same(_grads(model, PAIRS, [1.0, 1.0, 1.0]), _grads(model, PAIRS))
    loss_w, _ = _grads(model, PAIRS, [1.0, 0.5, 1.0])
    loss_1, _ = _grads(model, PAIRS)
    assert abs(float(loss_w) - float(loss_1)) > 1e-4


def _opts(d, **kw):
    from bitextforge.plugins.nmt.train import TrainOptions

    base = dict(src_lang="de", tgt_lang="en", max_steps=4, vocab_size=300, d_model=16,
                layers=1, heads=2, ffn_dim=32, batch_tokens=400, threads=1, max_len=24,
                min_warmup_steps=0, beam=1)
    base.update(kw)
    return TrainOptions(**base)


def test_training_with_weight_zero_is_training_without_those_pairs(tmp_path):
    from transformers import MarianMTModel

    from bitextforge.plugins.nmt.train import train

    de = read_lines(shared("multi30k", "train.de.gz"), 120)
    en = read_lines(shared("multi30k", "train.en.gz"), 120)
    dropped = {3, 50, 77}
    w = ["0" if i in dropped else "1" for i in range(len(de))]
    (tmp_path / "a.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    (tmp_path / "a.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (tmp_path / "a.w").write_text("\n".join(w) + "\n", encoding="utf-8")
    keep = [i for i in range(len(de)) if i not in dropped]
    (tmp_path / "b.de").write_text("\n".join(de[i] for i in keep) + "\n", encoding="utf-8")
    (tmp_path / "b.en").write_text("\n".join(en[i] for i in keep) + "\n", encoding="utf-8")
    logs: list[str] = []
    ia = train(_opts(tmp_path, src_train=str(tmp_path / "a.de"), tgt_train=str(tmp_path / "a.en"),
                     train_weights=str(tmp_path / "a.w"), output=str(tmp_path / "ma")),
               log=logs.append)
    ib = train(_opts(tmp_path, src_train=str(tmp_path / "b.de"), tgt_train=str(tmp_path / "b.en"),
                     output=str(tmp_path / "mb")), log=lambda m: None)
    assert any("3 pairs of weight 0 left out" in m for m in logs)
    assert ia["pairs"] == ib["pairs"] == 117 and ia["weighted"] and not ib["weighted"]
    a = MarianMTModel.from_pretrained(str(tmp_path / "ma")).state_dict()
    b = MarianMTModel.from_pretrained(str(tmp_path / "mb")).state_dict()
    for name in a:
        assert torch.equal(a[name], b[name]), name
    # and a real weight changes what is learned
    (tmp_path / "c.w").write_text("\n".join("3" if i < 40 else "1" for i in range(len(de)))
                                  + "\n", encoding="utf-8")
    train(_opts(tmp_path, src_train=str(tmp_path / "a.de"), tgt_train=str(tmp_path / "a.en"),
                train_weights=str(tmp_path / "c.w"), output=str(tmp_path / "mc")),
          log=lambda m: None)
    c = MarianMTModel.from_pretrained(str(tmp_path / "mc")).state_dict()
    assert any(not torch.equal(a[n], c[n]) for n in a)


@pytest.mark.parametrize("content, message", [
    ("1\n1\n", "has 2 weights but the training corpus has 12 pairs"),
    ("1\n" * 5 + "x\n" + "1\n" * 6, "w.txt:6: 'x' is not a number"),
    ("1\n" * 11 + "-1\n", "w.txt:12: weight -1 must be a finite number >= 0"),
    ("1\n" * 11 + "nan\n", "w.txt:12: weight nan must be a finite number >= 0"),
])
def test_bad_weights_file_is_one_line_naming_it_and_nothing_is_written(tmp_path, pair_files,
                                                                        content, message):
    from bitextforge.plugins.nmt.train import train

    s, t = pair_files([f"Satz {i}." for i in range(12)], [f"Sentence {i}." for i in range(12)])
    (tmp_path / "w.txt").write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        train(_opts(tmp_path, src_train=str(s), tgt_train=str(t),
                    train_weights=str(tmp_path / "w.txt"), output=str(tmp_path / "m")))
    assert not (tmp_path / "m").exists()


def test_train_nmt_cli_reads_weights_and_fails_cleanly(tmp_path, pair_files, capsys):
    from bitextforge.cli.main import main

    s, t = pair_files([f"Satz {i}." for i in range(12)], [f"Sentence {i}." for i in range(12)])
    code = main(["train-nmt", "--src-train", str(s), "--tgt-train", str(t), "--src-lang", "de",
                 "--tgt-lang", "en", "--output", str(tmp_path / "m"), "--train-weights",
                 str(tmp_path / "missing.w")])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.w: no such weights file" in err[0]
    assert not (tmp_path / "m").exists()
