"""Agents: one file each, one line here (imported on first use)."""
from importlib import import_module

AGENTS = {
    "explorer": "swarm.agents.explorer:Explorer",
    "mutator": "swarm.agents.mutator:Mutator",
    "crossover": "swarm.agents.crossover:Crossover",
    "tuner": "swarm.agents.tuner:Tuner",
    "variant": "swarm.agents.variant:Variant",
    "seeded": "swarm.agents.seeded:Seeded",
    "llm_coder": "swarm.agents.llm_coder:LLMCoder",
    "llm_analyst": "swarm.agents.llm_analyst:LLMAnalyst",
}


class UnknownAgent(ValueError):
    pass


def get(name: str):
    if name not in AGENTS:
        raise UnknownAgent(f"unknown agent {name!r}; available: {', '.join(AGENTS)}")
    module, _, cls = AGENTS[name].partition(":")
    return getattr(import_module(module), cls)()
