"""Running the entrypoint's tests: the pytest report plugin and the summary it yields."""
