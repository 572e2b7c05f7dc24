"""Model settings: the environment, a goal's choice on top, strict messages, keys kept out."""
import pytest

from swarm.generation import GoalError, check_goal
from swarm.llm.config import LLMConfigError, NotConfigured, from_env, resolve, status, validate_goal_llm
from swarm.types import Goal

ENV = {"LLM_PROVIDER": "openai", "LLM_MODEL": "qwen-coder", "LLM_BASE_URL": "http://10.0.0.5:8000/v1",
       "LLM_API_KEY": "sk-secret"}


def test_nothing_set_means_not_configured_in_plain_words():
    with pytest.raises(NotConfigured, match="set LLM_PROVIDER and LLM_MODEL"):
        from_env({})


def test_the_environment_sets_model_url_key_and_limits():
    cfg = from_env({**ENV, "LLM_TEMPERATURE": "0.5", "LLM_TIMEOUT": "30", "LLM_MAX_TOKENS": "2048",
                    "LLM_BUDGET_REQUESTS": "10", "LLM_BUDGET_TOKENS": "50000", "LLM_BUDGET_COST": "1.5"})
    assert (cfg.provider, cfg.model, cfg.base_url, cfg.api_key) == ("openai", "qwen-coder", "http://10.0.0.5:8000/v1",
                                                                   "sk-secret")
    assert (cfg.temperature, cfg.timeout, cfg.max_tokens) == (0.5, 30.0, 2048)
    assert (cfg.budget.requests, cfg.budget.tokens, cfg.budget.cost) == (10, 50000, 1.5)


def test_ollama_defaults_to_its_local_url():
    assert from_env({"LLM_PROVIDER": "ollama", "LLM_MODEL": "qwen2.5-coder:7b"}).base_url == "http://localhost:11434"


@pytest.mark.parametrize("env, field", [
    ({"LLM_PROVIDER": "anthropic", "LLM_MODEL": "x"}, "LLM_PROVIDER"),
    ({"LLM_PROVIDER": "openai"}, "LLM_MODEL"),
    ({"LLM_MODEL": "x"}, "LLM_PROVIDER"),
    ({**ENV, "LLM_TEMPERATURE": "hot"}, "LLM_TEMPERATURE"),
    ({**ENV, "LLM_TEMPERATURE": "3"}, "LLM_TEMPERATURE"),
    ({**ENV, "LLM_MAX_TOKENS": "1.5"}, "LLM_MAX_TOKENS"),
    ({**ENV, "LLM_BASE_URL": "localhost:8000"}, "LLM_BASE_URL"),
    ({**ENV, "LLM_API_KEY_FILE": "/nonexistent/key"}, "LLM_API_KEY_FILE"),
])
def test_a_bad_environment_value_names_the_variable(env, field):
    with pytest.raises(LLMConfigError) as info:
        from_env(env)
    assert info.value.field == field


def test_the_key_can_come_from_a_file_and_is_never_shown(tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-from-file\n")
    env = {k: v for k, v in ENV.items() if k != "LLM_API_KEY"} | {"LLM_API_KEY_FILE": str(key)}
    cfg = from_env(env)
    assert cfg.api_key == "sk-from-file"
    assert "sk-from-file" not in repr(cfg) and "sk-from-file" not in str(cfg.public())
    assert cfg.public()["api_key_set"] is True


def test_a_goal_chooses_model_and_budget_but_never_a_key():
    cfg = resolve({"model": "bigger-coder", "temperature": 0, "budget": {"requests": 3}}, ENV)
    assert cfg.model == "bigger-coder" and cfg.temperature == 0 and cfg.budget.requests == 3
    assert cfg.api_key == "sk-secret"            # same server as the environment's: the key goes along
    with pytest.raises(LLMConfigError, match="never from a goal") as info:
        validate_goal_llm({"api_key": "sk-stolen"})
    assert info.value.field == "llm.api_key"


def test_the_key_is_not_sent_to_a_server_a_goal_chose():
    cfg = resolve({"base_url": "http://attacker.example/v1"}, ENV)
    assert cfg.base_url == "http://attacker.example/v1" and cfg.api_key is None


def test_an_allowlist_limits_the_servers_a_goal_may_choose():
    env = {**ENV, "LLM_ALLOWED_BASE_URLS": "http://ollama-box:11434, http://10.0.0.6:8000/v1"}
    assert resolve({"base_url": "http://10.0.0.6:8000/v1"}, env).base_url == "http://10.0.0.6:8000/v1"
    assert resolve({"provider": "ollama", "model": "q", "base_url": "http://ollama-box:11434"}, env).provider == "ollama"
    assert resolve({"model": "other"}, env).api_key == "sk-secret"     # the environment's own server
    with pytest.raises(LLMConfigError, match="LLM_ALLOWED_BASE_URLS") as info:
        resolve({"base_url": "http://169.254.169.254/v1"}, env)
    assert info.value.field == "llm.base_url"


@pytest.mark.parametrize("choice, field", [
    ({"temperature": "warm"}, "llm.temperature"),
    ({"max_tokens": 5}, "llm.max_tokens"),
    ({"provider": "ollama"}, "llm.model"),
    ({"budget": {"requests": -1}}, "llm.budget.requests"),
    ({"budget": {"dollars": 3}}, "llm.budget.dollars"),
    ({"colour": "blue"}, "llm.colour"),
])
def test_a_bad_goal_choice_names_the_field(choice, field):
    with pytest.raises(LLMConfigError) as info:
        validate_goal_llm(choice)
    assert info.value.field == field


def test_check_goal_refuses_a_bad_model_choice_with_the_field_named():
    with pytest.raises(GoalError, match="llm.temperature"):
        check_goal(Goal(workload="softmax", llm={"temperature": 9}))


def test_status_is_what_a_page_may_show():
    assert status({}, {})["configured"] is False
    shown = status({}, ENV)
    assert shown["configured"] and shown["config"]["model"] == "qwen-coder"
    assert "sk-secret" not in str(shown)
