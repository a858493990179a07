"""What a plugin builds on: the component base classes (:mod:`.base`), the table of component
kinds (:mod:`.kinds`), the pluggy hooks (:mod:`.hookspecs`) and the registry that finds plugins,
their components by versioned name and their commands (:mod:`.registry`, :mod:`.commands`); what
a component declares it reads (:mod:`.paths`) and what a trainer wrote (:mod:`.trained`). The
built-in plugins themselves live in ``bitextforge.plugins``."""
