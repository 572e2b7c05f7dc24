"""Own ops: a PyTorch problem captured (untrusted, sandboxed) into our IR, run by a trusted
float64 interpreter, and turned into generated C by :mod:`kernels.codegen`. See docs/ownops.md.

    problem.py        the problem file as text: module constants, overrides (parsed, never run)
    capture.py        the trusted side of the sandboxed capture (strict parse of the child's data)
    capture_child.py  the child: warm up, isolate, seccomp, then run the user's file and export
    capture_server.py fork server: torch warmed up once, one forked capture child per request
    translate.py      the translation machinery (values, folding, ABI names)
    aten*.py          the trusted table of supported core-ATen targets and the walk
    ir.py             the IR: inputs, params, nodes, outputs; JSON; content digest
    opset.py          IR ops: shape rules and float64 NumPy semantics
    interpreter.py    runs a graph in float64 (the imported workload's reference)
    check.py          the import check and the tolerance derived from the graph
    inputs.py         input distributions inferred from the samples; stress distributions
    store.py          imported problems on disk, content-addressed (INT21_OPS_DIR)
    workload.py       a stored import → kernels.spec.Workload
    service.py        import_problem / preview: the one entry point for the CLI, web and API
    baselines.py      torch eager and torch.compile of the user's model (timing child only)

Nothing here imports Django or swarm.
"""
