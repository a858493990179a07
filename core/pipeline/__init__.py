"""The stages of a run, in the order a recipe goes through them.

:mod:`.plan` builds one executor per step through the step-kind table (:mod:`.kinds`);
:mod:`.source` reads the input as batches; :mod:`.runners` drive the batches through the
executors (:mod:`.executors`, whose filter decisions live in :mod:`.decide`); :mod:`.sink` writes
what comes out; :mod:`.driver` runs these stages for :mod:`bitextforge.run` (``run_recipe``) and
:mod:`.scoring` (``bitextforge score``), after :mod:`.prepare` has trained the recipe's models.
``docs/architecture.md`` draws a run.
"""
