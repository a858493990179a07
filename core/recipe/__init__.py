"""Recipes: the YAML file loaded and validated into a ``Recipe`` (:mod:`.load`), the models of
its steps (:mod:`.step_models`), and the checks of the files it names before a run starts
(:mod:`.checks`)."""
