"""What a run keeps so that it does not compute twice: the score cache across runs
(:mod:`.scores`), the content identity of the files a component reads (:mod:`.identity`), and
in-run tables of keys and text scores (:mod:`.memo`)."""
