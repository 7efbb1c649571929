"""What a profile becomes besides its table (private): ``report``, the HTML report; ``pprof``,
the pprof file; ``inline``, the report inside a notebook's output; ``run``, what the command
line, the magics and the pytest plugin print and write after a run."""
