"""The kernel world: workloads, targets and the harness that judges untrusted kernels.

Framework-free (no Django). See docs/ARCHITECTURE.md for the map.
"""
