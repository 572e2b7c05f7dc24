"""Language models for the LLM agents: configuration (``config``), one request through
LangChain (``client``), a run's budget and ledger (``session``), answers as kernels
(``answers``), prompt texts (``prompts``, data in ``swarm/prompts/``). Nothing here imports
LangChain until a request is sent."""
