"""Engines: a whole model as verified generated programs, one per phase (docs/engine.md).

An engine is the decoder's prefill and decode phases (or a user's module file's forward),
each imported through the own-ops path (:mod:`kernels.graph.service`) as a workload whose
candidates are generated sources: one C program per phase with one entry point (inputs,
then the weights as buffers, then the outputs) whose driver calls the fusion groups' kernels
in order from one arena planned by liveness (:func:`kernels.codegen.program.plan_arena`).
The engine record (:mod:`kernels.engine.store`) ties the phases together with the model they
came from, the arena plans and what validated them.

- :mod:`kernels.engine.service`: ``engine_import``, ``engine_check`` (the harness at every
  shape), ``engine_greedy`` (the greedy-decode check, the engine run in the harness's
  sandbox), ``prepare_peers`` (the ONNX export, trusted, before a timing session).
- :mod:`kernels.engine.store`: the records on disk beside the imports.

Framework-free: nothing here imports Django, ``swarm/`` or ``bench/``.
"""
