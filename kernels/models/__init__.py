"""The Engine Factory's model side, framework-free (imports neither Django nor swarm).

- :mod:`kernels.models.decoder`    the built-in decoder family in plain PyTorch (phases, KV layout)
- :mod:`kernels.models.problem`    a family member as a KernelBench-format problem file
- :mod:`kernels.models.checkpoint` local safetensors + config.json checkpoints (read, save)
- :mod:`kernels.models.peers`      what a user would deploy instead, as baseline factories
- :mod:`kernels.models.greedy`     the trusted greedy-decode check

See docs/engine.md. Submodules import torch; this package does not, so importing it is free.
"""
