"""The bitextforge_plugin fixture (bitextforge.testing) for these tests."""

pytest_plugins = ["bitextforge.testing"]
