"""The swarm: agents that search a design space generation by generation.

Framework-free (no Django): the engine talks to persistence through ``RunStore``, to
evaluation through ``Executor``, to lessons through ``KnowledgeStore`` and to the world
through an ``EventSink``. Django and Celery implement those seams in ``int21web/``.
"""
