"""Own ops: a PyTorch problem captured (untrusted, sandboxed) into our IR, run by a trusted
float64 interpreter, and turned into generated C by :mod:`kernels.codegen`.

    capture.py        the trusted side of the sandboxed capture (capture_child.py is the child)
    aten.py           core-ATen FX records → IR, through a table of supported targets
    ir.py             the IR: inputs, params, nodes, outputs; JSON; content digest
    opset.py          IR ops: shape rules and float64 NumPy semantics
    interpreter.py    runs a graph in float64 (the imported workload's reference)
    check.py          the import check and the tolerance derived from the graph
    store.py          imported problems on disk, content-addressed (INT21_OPS_DIR)
    workload.py       a stored import → kernels.spec.Workload
    service.py        import_problem / preview: the one entry point for the CLI, web and API
    baselines.py      torch eager and torch.compile of the user's model (timing child only)

Nothing here imports Django or swarm.
"""
