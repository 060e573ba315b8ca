"""msviz's version, in a module of its own so every layer can read it (bundles, environments)."""

__version__ = "0.1.0"
