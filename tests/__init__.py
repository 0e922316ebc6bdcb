"""Tests as a package, so configs can name test helpers as ``tests.helpers.<Class>``."""
