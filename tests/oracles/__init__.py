"""Exact references the tests compare against: enumerations, closed forms and dense
computations written independently of the code under test (import as
``tests.oracles.<module>``; every test folder may, and they import no test folder)."""
