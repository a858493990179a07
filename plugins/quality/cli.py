"""Subcommands of the quality filters: ``train-lm`` (KenLM model for ``kenlm_perplexity.v1``),
``train-word-vectors`` (vectors for ``paraphrase_score.v1``, ParaNMT-50M section 5.4) and
``train-reference-classifier`` (model for ``reference_classifier.v1``, Wieting et al. 2017,
section 5.6.1). Heavy libraries are imported inside the handlers so ``bitextforge --help`` stays
fast."""

from __future__ import annotations

from bitextforge.cli import register_command


@register_command("train-lm", help="train a KenLM model (lmplz + build_binary) for "
                  "kenlm_perplexity.v1")
def _train_lm(sp):
    sp.add_argument("--text", required=True, help="training text, one sentence per line (.gz ok)")
    sp.add_argument("--output", required=True, help="binary model to write (settings go to "
                    "<output>.json)")
    sp.add_argument("--order", type=int, default=3, help="n-gram order (default 3)")
    sp.add_argument("--lang", default="en", help="sacremoses tokenizer language (default en)")
    sp.add_argument("--no-tokenize", action="store_true", help="train on the text as is "
                    "(already tokenised)")
    sp.add_argument("--lowercase", action="store_true", help="lowercase before training")
    sp.add_argument("--memory", default="20%", help="lmplz -S memory limit (default 20%%)")
    sp.add_argument("--prune", type=int, nargs="*", help="lmplz --prune thresholds per order")

    def handler(args) -> int:
        import time

        from .lm import train_lm

        t0 = time.perf_counter()
        out = train_lm(args.text, args.output, order=args.order, lang=args.lang,
                       tokenize=not args.no_tokenize, lowercase=args.lowercase,
                       memory=args.memory, prune=args.prune)
        print(f"wrote {out} ({out.stat().st_size} bytes, order {args.order}) in "
              f"{time.perf_counter() - t0:.1f} s")
        return 0
    return handler


@register_command("train-reference-classifier", help="train the human-reference vs "
                  "machine-translation classifier for reference_classifier.v1")
def _train_refclf(sp):
    sp.add_argument("--references", required=True, help="human references, one per line")
    sp.add_argument("--translations", required=True, help="machine translations, one per line")
    sp.add_argument("--output", required=True, help="joblib model to write")
    sp.add_argument("--C", type=float, default=1.0, dest="c", help="inverse regularisation "
                    "strength of the logistic regression (default 1)")
    sp.add_argument("--heldout", type=float, default=0.1, help="share held out to report "
                    "accuracy and ROC-AUC before training on everything (0 = none; default 0.1)")
    sp.add_argument("--seed", type=int, default=0, help="random seed of the held-out split")

    def handler(args) -> int:
        import random

        from .classifier import read_text_lines, save_model, train_reference_classifier

        refs, mts = read_text_lines(args.references), read_text_lines(args.translations)
        info = {"references": args.references, "translations": args.translations,
                "n_references": len(refs), "n_translations": len(mts), "C": args.c}
        if args.heldout > 0:
            from sklearn.metrics import accuracy_score, roc_auc_score

            rng = random.Random(args.seed)
            data = [(t, 1) for t in refs] + [(t, 0) for t in mts]
            rng.shuffle(data)
            k = max(2, int(len(data) * args.heldout))
            test, train = data[:k], data[k:]
            model = train_reference_classifier([t for t, y in train if y],
                                               [t for t, y in train if not y], args.c, args.seed)
            p = model.predict_proba([t for t, _ in test])[:, list(model.classes_).index(1)]
            gold = [y for _, y in test]
            acc = accuracy_score(gold, (p >= 0.5).astype(int))
            auc = roc_auc_score(gold, p) if len(set(gold)) == 2 else float("nan")
            info.update(heldout=len(test), heldout_accuracy=acc, heldout_auc=auc)
            print(f"held out {len(test)} random lines: accuracy {acc:.3f}, ROC-AUC {auc:.3f} "
                  f"(lines are split at random; split by document yourself for a stricter test)")
        model = train_reference_classifier(refs, mts, args.c, args.seed)
        out = save_model(model, args.output, info)
        print(f"wrote {out} ({len(refs)} references, {len(mts)} translations)")
        return 0
    return handler


@register_command("train-word-vectors", help="train count-based word vectors (PPMI + SVD) in "
                  "word2vec text format for paraphrase_score.v1")
def _train_word_vectors(sp):
    sp.add_argument("--text", required=True, help="training text, one sentence per line (.gz ok)")
    sp.add_argument("--output", required=True, help=".vec file to write")
    sp.add_argument("--dim", type=int, default=100, help="dimensions (default 100)")
    sp.add_argument("--window", type=int, default=5, help="context window in tokens (default 5)")
    sp.add_argument("--min-count", type=int, default=3, help="ignore rarer words (default 3)")
    sp.add_argument("--lang", default="en", help="sacremoses tokenizer language (default en)")
    sp.add_argument("--keep-case", action="store_true", help="do not lowercase")

    def handler(args) -> int:
        from .wordvec import train_word_vectors

        out, n = train_word_vectors(args.text, args.output, dim=args.dim, window=args.window,
                                    min_count=args.min_count, lang=args.lang,
                                    lowercase=not args.keep_case)
        print(f"wrote {out} ({n} words, {args.dim} dimensions)")
        return 0
    return handler
