"""Child processes of a ``--subprocesses`` run (private): ``files``, the run's folder of
per-process files that the tracer and the sampler both write; ``traced``, the tracer started
in every child process and saved at its exit."""
