"""The migration pages' peer tests (a package, so that its conftest is not the suite's `conftest`)."""
