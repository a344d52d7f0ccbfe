"""The package version, in one place (it goes into every score's signature)."""

__version__ = "0.1.0"
