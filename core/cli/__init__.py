"""The ``bitextforge`` command line: the parser, the built-in commands and ``main``
(:mod:`.main`), the commands plugins register and the generic ``train`` command (:mod:`.commands`),
and the generated recipe reference (:mod:`.docgen`). ``python -m bitextforge.cli`` runs it
(:mod:`.__main__`)."""
