"""What a plugin builds on: the component base classes (:mod:`.base`), the pluggy hooks
(:mod:`.hookspecs`) and the registry that finds plugins and their components by versioned name
(:mod:`.registry`). The built-in plugins themselves live in ``bitextforge.plugins``."""
