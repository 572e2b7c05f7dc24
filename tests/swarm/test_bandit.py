from swarm.selection.bandit import AgentStats, allocate

AGENTS = ["explorer", "mutator", "tuner", "variant"]


def test_no_agent_starves_when_there_are_enough_slots():
    stats = {a: AgentStats() for a in AGENTS}
    stats["tuner"] = AgentStats(evaluations=20, improvements=0)
    alloc = allocate(stats, AGENTS, 8)
    assert sum(alloc.values()) == 8 and all(alloc[a] >= 1 for a in AGENTS)


def test_slots_follow_payoff():
    stats = {a: AgentStats(evaluations=10, improvements=0.2) for a in AGENTS}
    stats["mutator"] = AgentStats(evaluations=10, improvements=6)
    alloc = allocate(stats, AGENTS, 12)
    assert alloc["mutator"] == max(alloc.values()) and alloc["mutator"] > alloc["explorer"]


def test_muted_agents_get_nothing_and_favoured_agents_get_more():
    stats = {a: AgentStats() for a in AGENTS}
    alloc = allocate(stats, AGENTS, 9, favoured={"variant"}, muted={"explorer"})
    assert alloc["explorer"] == 0 and alloc["variant"] == max(alloc.values()) and sum(alloc.values()) == 9


def test_payoff_decays_so_recent_work_counts_more():
    s = AgentStats(evaluations=10, improvements=5)
    before = s.payoff()
    for _ in range(5):
        s.decay()
        s.evaluations += 2
    assert s.payoff() < before
