"""A run with the llm_coder agent, in the browser, against a scripted model server on loopback
speaking the OpenAI protocol: the run page shows the spend live, and the rewrite's page shows
the prompt, the raw answer, tokens and latency."""
import re

import pytest

from tests.browser.conftest import launch, shot, signer, stop
from tests.swarm.llm_fakes import Answer, OpenAIServer, fenced, online_rewrite

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def llm_world(chromium, tmp_path):
    with OpenAIServer([Answer(fenced(online_rewrite()), tokens_in=812, tokens_out=240)]) as model:
        server = launch(tmp_path, LLM_PROVIDER="openai", LLM_BASE_URL=model.base_url, LLM_MODEL="scripted-coder",
                        LLM_API_KEY="sk-test-not-a-secret")
        contexts = []
        try:
            yield server, signer(chromium, server, contexts), model
        finally:
            for ctx in contexts:
                ctx.close()
            stop(server)


def test_an_llm_run_shows_its_spend_and_each_rewrites_exchange(llm_world):
    server, login, model = llm_world
    page = login("engineer")
    page.goto(server["url"] + "/goals/new/")
    page.fill("#id_name", "softmax with a coder")
    page.fill("#id_shapes", "64x512")
    page.fill("#id_evaluations", "8")
    page.fill("#id_population", "4")
    page.fill("#id_eval_settings", '{"timing_budget_s": 0.25}')     # quick sessions (the host's fast floor)
    for box in page.locator("input[name=team]").all():
        box.set_checked(box.get_attribute("value") in ("explorer", "llm_coder"))
    page.wait_for_function("document.getElementById('validation').textContent.includes('This goal can run')")
    page.click("#save-and-start")
    page.wait_for_url(re.compile(r".*/runs/\d+/$"))
    page.wait_for_function("window.int21Run.state === 'finished'", timeout=300_000)
    spend = page.locator("#llm-spend tbody tr", has_text="llm_coder")
    assert spend.count() == 1
    cells = spend.locator("td").all_inner_texts()
    assert int(cells[1]) >= 1 and int(cells[3]) >= 812          # requests, tokens in
    assert model.requests and "Bearer sk-test-not-a-secret" in str(model.requests[0]["headers"])
    shot(page, "run-llm")
    row = page.locator("#candidates tbody tr", has=page.locator("td", has_text="llm_coder")).first
    row.locator("td a").first.click()
    page.wait_for_selector("#llm-exchange")
    text = page.locator("main").inner_text()
    assert "scripted-coder" in text and "812 in" in text and "240 out" in text
    page.locator("summary", has_text="raw answer").click()
    assert "```c" in page.locator("#llm-answer").inner_text()
