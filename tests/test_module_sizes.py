"""Big files split by concern: no function in core/ or plugins/ over 120 lines, no module over 800;
the old import paths of what was split still work, and the pair classifier's negative kinds are a
table checked before any work."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from bitextforge import ComponentError

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 120
MAX_MODULE_LINES = 800


def _sources():
    for folder in ("core", "plugins"):
        yield from sorted((ROOT / folder).rglob("*.py"))


def test_no_function_over_120_lines():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


def test_no_module_over_800_lines():
    big = [f"{p.relative_to(ROOT)} ({n} lines)" for p in _sources()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert big == []


# every name these modules had before they were split, as benchmarks, tests and users import them
OLD_NAMES = {
    "bitextforge.plugins.nmt.train": (
        "TrainOptions", "train", "read_weights", "weighted_loss", "budget_lr_factor",
        "LOG_SECONDS", "RESUME_FILE", "NEAR_UNIFORM", "training_warnings", "warmup_steps",
        "budget_warning", "time_to_go", "resume_key", "has_resume_state", "load_resume",
        "describe_state", "SaveOnSigterm", "save_resume", "train_spm", "write_tokenizer",
        "check_spm_ids", "encode", "WeightAverage", "make_batches", "collate", "build_model",
        "translate", "evaluate_bleu", "valid_loss", "check_init_model", "detokenize",
        "option_paths", "EOS_ID", "UNK_ID", "resolve_precision", "resolve_device"),
    "bitextforge.plugins.nmt.evaluators": (
        "TrainAndTestEvaluator", "TRAIN_SETTINGS", "FAIR_SETTINGS", "RECORD", "STAMP",
        "OFF_UNLESS_RECORDED", "models_root", "models_of", "stop_workers"),
    "bitextforge.plugins.lexical.pair_classifier": (
        "NEGATIVES", "MORE_NEGATIVES", "make_negatives", "PairClassifierTrainer",
        "PairClassifierFilter", "FeatureFilter", "FeatureScorer", "SURFACE", "EXTRA_SURFACE",
        "ALL_SURFACE", "surface_features", "translate_best", "openmp_threads",
        "tilt_probability", "AveragedClassifier", "TiltedClassifier"),
    "bitextforge.plugins.hardrules": (
        "RULES", "BICLEANER_DEFAULT", "HardrulesFilter", "RuleFilter", "SideRule", "PairRule",
        "SideConfig", "CJK", "WORD_LANGS", "BICLEANER_REPEATED_WORDS", "could_repeat",
        "RepeatedWordsFilter", "RepetitionFilter", "RegexpFilter", "CharacterScriptFilter",
        "register_filters"),
    "bitextforge.pipeline.executors": (
        "NAN", "ADDS", "REPLACES", "Rejected", "Changed", "StepResult", "StepStats",
        "component_call", "as_scores", "check_candidate_columns", "group_bounds", "Executor",
        "SplitExec", "ParaphraseExec", "GenerateExec", "repetition_loop", "DuplicateOutputs",
        "FilterExec", "WeightExec", "CleanExec", "within_bounds"),
}


@pytest.mark.parametrize("module", sorted(OLD_NAMES))
def test_split_modules_keep_their_old_names(module):
    mod = importlib.import_module(module)
    assert [n for n in OLD_NAMES[module] if not hasattr(mod, n)] == []


def test_every_negative_kind_has_one_maker():
    from bitextforge.plugins.lexical.negatives import (MORE_NEGATIVES, NEGATIVE_MAKERS,
                                                       NEGATIVES)

    assert sorted(NEGATIVE_MAKERS) == sorted(NEGATIVES + MORE_NEGATIVES)


def test_an_unknown_negative_kind_is_refused_before_any_translation():
    from bitextforge.plugins.lexical.pair_classifier import make_negatives

    calls = []

    def translate(texts):
        calls.append(texts)
        return texts

    with pytest.raises(ComponentError, match="unknown negative kind 'typo'; choose from"):
        make_negatives(["a b", "c d"], ["e f", "g h"], ("machine_translated", "typo"),
                       translate=translate)
    assert calls == []  # an MT model would have run (minutes) only to fail afterwards
