"""The evaluation harness: static checks → compile → audit → verify → benchmark → sanity.

Untrusted kernel code never runs in this process: only in a fresh sandbox child.
"""
