"""Recipes: the YAML file loaded and validated into a ``Recipe`` (:mod:`.load`, the entry points,
with one module per concern: :mod:`.yaml_safe`, :mod:`.overrides`, :mod:`.layering`,
:mod:`.errors`, :mod:`.models`, :mod:`.validate`), the kinds of step (:mod:`.kinds`) and their
models (:mod:`.step_models`), and the checks of the files it names before a run starts
(:mod:`.checks`)."""
