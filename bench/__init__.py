"""Benchmarks (not timed tests). Importable parts, framework-free like ``swarm/`` and
``kernels/``: ``measure`` (one measurement per point, shared by every searcher),
``searchers`` (the swarm and its peers on equal terms), ``kernels_vs`` (a kernel against
its baselines and the roofline), ``suite`` (the `manage.py bench` run) and ``report``
(JSON → docs/benchmarks.md and the HTML report)."""
