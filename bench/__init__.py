"""Benchmarks (not timed tests), run as ``python -m bench <benchmark>`` (``__main__.py`` lists
them). Above the product: they import ``kernels`` and ``swarm``; nothing in ``kernels``,
``swarm`` or ``int21web`` imports them (tests/test_import_direction.py). Importable parts,
framework-free like ``swarm/`` and ``kernels/``: ``measure`` (one measurement per point,
shared by every searcher), ``searchers`` (the swarm and its peers on equal terms),
``kernels_vs`` (a kernel against its baselines and the roofline), ``suite`` (the peers run;
``peers`` is its command line) and ``report`` (JSON → docs/benchmarks.md and the HTML
report). Their own requirements are in requirements-bench.txt."""
