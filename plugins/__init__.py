"""Built-in plugins of bitextforge. Each module registers its components through the
``bitextforge`` entry-point group, exactly as a third-party plugin does."""
