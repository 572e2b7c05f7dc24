"""Unit paths: LangChain's own fake chat model behind our client, the analyst's parsing,
learned variants in a template."""
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from kernels import workloads
from swarm.agents.llm_analyst import parse_lessons
from swarm.knowledge.variants import learned_template
from swarm.llm.client import LangChainClient
from swarm.llm.config import LLMConfig
from swarm.llm.session import LLMSession
from swarm.types import Lesson
from tests.swarm.llm_fakes import online_rewrite


def test_a_langchain_chat_model_answers_through_the_session():
    cfg = LLMConfig(provider="openai", model="fake")
    session = LLMSession(cfg, client=LangChainClient(cfg, model=FakeListChatModel(responses=[online_rewrite()])))
    reply = session.ask([("system", "rules"), ("user", "task")], agent="llm_coder", purpose="rewrite")
    assert reply.text == online_rewrite() and session.usage["requests"] == 1


def test_analyst_lines_need_evidence_from_the_run():
    answer = ("Here are lessons:\n- VEC=16 wins at 4096 columns [#3, #7]\n- Everything is fine\n"
              "- THREADS=8 crashes (#99 and #4)\n* online rewrite is 2x [#5]\n")
    assert parse_lessons(answer, {3, 4, 5, 7}) == [("VEC=16 wins at 4096 columns", [3, 7]),
                                                   ("THREADS=8 crashes (#99 and #4)", [4]),
                                                   ("online rewrite is 2x", [5])]


def test_a_learned_variant_joins_the_variant_param_and_brings_its_source():
    tpl = workloads.get("softmax").template("cpu")
    lesson = Lesson(kind="variant", workload="softmax", target="cpu", fingerprint="", shape_bucket="",
                    text="", data={"variant": "llm_r1_c9", "source": "/* mine */\n"})
    learned = learned_template(tpl, [lesson])
    assert learned.space.param("ALGO").values() == ["two_pass", "online", "staged", "llm_r1_c9"]
    assert learned.source("llm_r1_c9") == "/* mine */\n" and learned.source("online") == tpl.source("online")
    assert learned_template(tpl, []) is tpl
    cuda = workloads.get("softmax").template("cuda")
    assert learned_template(cuda, [lesson]) is cuda       # a CPU variant stays on the CPU target


def test_the_swarm_imports_neither_django_nor_langchain_until_a_request_is_sent():
    import subprocess
    import sys
    code = ("import sys, swarm.generation, swarm.registry as r\n"
            "[r.get(n) for n in r.AGENTS]\n"
            "import swarm.llm.check, swarm.knowledge.variants\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'langchain_core', 'langchain_openai', "
            "'langchain_ollama', 'openai', 'ollama')]\n"
            "assert not bad, bad\n")
    from pathlib import Path
    subprocess.run([sys.executable, "-c", code], check=True, env={"PATH": "/usr/bin:/bin"},
                   cwd=Path(__file__).resolve().parents[2])


def test_the_analyst_writes_lessons_every_n_generations_and_the_coder_reads_them():
    from swarm.agents.llm_analyst import LLMAnalyst
    from swarm.llm.briefs import lessons as lessons_text
    from tests.swarm.llm_fakes import Answer, ScriptedClient
    from tests.swarm.test_agents_contract import make_ctx
    ctx = make_ctx()
    client = ScriptedClient([Answer("- VEC=16 is the fastest width here [#2, #5]\n- no evidence here\n")])
    ctx.llm = LLMSession(LLMConfig(provider="openai", model="m", analyst_every=2), client=client)
    ctx.run_id = 7
    analyst = LLMAnalyst()
    assert analyst.propose(ctx, 3) == [] and "proposes no kernels" in analyst.cannot_act(ctx)
    ctx.generation = 0
    assert analyst.reflect(ctx, ctx.history) == [] and client.calls == []     # not yet: every 2nd generation
    ctx.generation = 1
    [lesson] = analyst.reflect(ctx, ctx.history)
    assert lesson.kind == "insight" and lesson.evidence == [2, 5] and lesson.run_id == 7
    assert lesson.text == "VEC=16 is the fastest width here" and lesson.data["model"] == "scripted"
    assert "#2 by explorer" in client.calls[0][1][1]                          # it saw the candidates
    ctx.lessons = [lesson]
    assert "VEC=16 is the fastest width here [evidence: #2, #5]" in lessons_text(ctx)
