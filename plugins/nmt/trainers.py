"""``nmt_model.v1``: the Marian training of ``bitextforge train-nmt`` as a trainer for a recipe's
``prepare:`` list, so a back-translation (Wieting et al. 2017; ParaNMT-50M) or round-trip (BET)
recipe can build its own models offline on first run."""

from __future__ import annotations


from bitextforge import Trainer

from .train import TrainOptions, option_paths


class NmtModelTrainer(Trainer):
    """Train a small Marian model on a parallel corpus, from scratch (joint sentencepiece
    vocabulary, token-bucketed batches, budget learning-rate schedule) or continuing a model it
    wrote (``init_model``, domain adaptation), and save a normal Hugging Face model directory;
    options and defaults are those of ``bitextforge train-nmt`` (docs/nmt.md)."""

    name = "nmt_model.v1"
    # how often the state is saved and what is tested after training do not change the model
    run_options = frozenset({"resume_every", "resume_every_steps", "snapshots", "tests",
                             "test_backend", "beam"})
    extra = "nmt"
    resumable = True  # train() continues the resume.pt a killed training left

    class Config(Trainer.Config, TrainOptions):
        """Options of nmt_model.v1: exactly those of ``bitextforge train-nmt``."""

    @classmethod
    def describe_unfinished(cls, directory):
        """The update, epoch and minutes of the resumable state in ``directory``, if any."""
        from .train import describe_state

        return describe_state(directory)

    @classmethod
    def input_paths(cls, config):
        """Every corpus, validation and test file, and a reused sentencepiece model."""
        return option_paths(config)

    def train(self):
        """Train, keep the best checkpoint, evaluate on the tests."""
        from .train import train

        # the Config is a TrainOptions (plus nothing): train() takes it as it is
        info = train(self.config, log=self.log, where=self.name)
        return {k: info[k] for k in ("parameters", "steps", "train_minutes", "device", "precision",
                                     "tests", "warnings")
                if k in info}
