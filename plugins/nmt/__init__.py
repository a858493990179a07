"""NMT back-translation (Wieting et al. 2017, ParaNMT-50M) and round-trip paraphrasing through pivot
languages (BET, Corbeil & Abdi Ghavidel), with transformers and CTranslate2 backends and offline
Marian training (``bitextforge train-nmt``).

Registers ``backtranslate.v1``, ``roundtrip.v1``, the ``translate.v1`` generator
(back-translation of monolingual text, Sennrich et al. 2016; Edunov et al. 2018), the ``nmt_logprob.v1`` filter (NMT
log-probability and dual conditional cross-entropy, Junczys-Dowmunt 2018), the ``nmt_model.v1``
trainer, the ``train_and_test.v1`` evaluator (train on a run's output, test, compare with a
baseline) and the ``expansion_curve.v1`` evaluator (Nichols et al.'s learning curves of expanded
corpora); heavy
libraries load only when a component is built.
"""

import bitextforge

from .paraphrasers import BackTranslateParaphraser, RoundTripParaphraser


@bitextforge.hookimpl
def register_paraphrasers(register):
    """Register the NMT paraphrasers."""
    register(BackTranslateParaphraser)
    register(RoundTripParaphraser)


@bitextforge.hookimpl
def register_generators(register):
    """Register translate.v1 (back- and forward translation of monolingual text)."""
    from .generators import TranslateGenerator

    register(TranslateGenerator)


@bitextforge.hookimpl
def register_filters(register):
    """Register nmt_logprob.v1 (NMT log-probability / dual conditional cross-entropy)."""
    from .filters import NmtLogprobFilter

    register(NmtLogprobFilter)


@bitextforge.hookimpl
def register_trainers(register):
    """Register nmt_model.v1 (the train-nmt training, for a recipe's prepare list)."""
    from .trainers import NmtModelTrainer

    register(NmtModelTrainer)


@bitextforge.hookimpl
def register_evaluators(register):
    """Register train_and_test.v1 (train a model on the run's output and test it) and
    expansion_curve.v1 (its learning curve over sizes and expansion schemes)."""
    from .evaluators import TrainAndTestEvaluator
    from .expansion_curve import ExpansionCurveEvaluator

    register(TrainAndTestEvaluator)
    register(ExpansionCurveEvaluator)


@bitextforge.hookimpl
def register_commands(register):
    """train-nmt (the nmt_model.v1 trainer), evaluate-nmt and build-vocab-map."""
    from bitextforge.api import trainer_command

    from .cli import build_vocab_map_command, evaluate_nmt_command

    register("train-nmt", "train a small Marian translation model (offline, CPU; = train "
             "nmt_model.v1)", trainer_command("nmt_model.v1", _test_flags, _tests))
    register("evaluate-nmt", "BLEU/chrF of a translation model on a test set (either backend)",
             evaluate_nmt_command)
    register("build-vocab-map", "build the lexical shortlist (vmap.txt) the ctranslate2 "
             "backend's vocab_map option reads", build_vocab_map_command)


def _test_flags(parser):
    parser.add_argument("--test-src", action="append", default=[],
                        help="test source for sacrebleu BLEU after training (repeatable)")
    parser.add_argument("--test-tgt", action="append", default=[],
                        help="test reference, one per --test-src")


def _tests(args):
    if len(args.test_src) != len(args.test_tgt):
        raise bitextforge.InputError("train-nmt: give one --test-tgt per --test-src")
    return {"tests": list(zip(args.test_src, args.test_tgt))} if args.test_src else {}
