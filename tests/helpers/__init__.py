"""Helpers shared by the test modules (import as ``tests.helpers.<module>``)."""
