"""The pytest plugin's work once asked (private; ``rprofile.pytest_plugin`` is the entry point
and imports this only for ``--rprofile*``): ``session``, each test's profile; ``report``, the
merge, the HTML report and the terminal summary."""
