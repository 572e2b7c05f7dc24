"""The greedy-decode check: the model agrees with itself on every step, a perturbed
candidate is caught, near-ties count as agreement and are reported, and a bad candidate is
a failure in the report, not an exception."""
import numpy as np
import pytest
import torch

from kernels.models.greedy import embedder, greedy_check, phase_step, torch_step

PROMPT = np.array([[3, 14, 15, 92, 65]])


def test_the_model_agrees_with_itself_on_every_step(tiny_lm):
    report = greedy_check(torch_step(tiny_lm), torch_step(tiny_lm), PROMPT, 16, embed=embedder(tiny_lm))
    assert report.passed and report.failure is None
    assert (report.agreed, report.decisions, report.agreement) == (16, 16, 1.0)
    assert report.max_logit_error == 0.0 and report.near_ties == 0
    assert [s.position for s in report.steps] == list(range(5, 21))


def test_a_float64_reference_sees_only_float32_rounding(tiny_lm):
    report = greedy_check(torch_step(tiny_lm), torch_step(tiny_lm, dtype=torch.float64), np.tile(PROMPT, (2, 1)),
                          8, embed=embedder(tiny_lm))
    assert report.passed and report.decisions == 16
    assert 0 < report.max_logit_error < 1e-4


def test_a_perturbed_candidate_is_caught_at_the_step_it_goes_wrong(tiny_lm):
    good = torch_step(tiny_lm)

    def perturbed(x, kv, pos):
        logits, rows = good(x, kv, pos)
        if pos >= 8:   # from the fourth decode step on, favour a fixed token
            logits = logits.copy()
            logits[..., 7] += 100.0
        return logits, rows
    report = greedy_check(perturbed, good, PROMPT, 10, embed=embedder(tiny_lm))
    assert not report.passed
    assert [s.agreed for s in report.steps[:3]] == [1, 1, 1]
    assert all(s.candidate_tokens == [7] and s.agreed == 0 for s in report.steps[3:] if s.tokens != [7])
    assert report.steps[3].max_abs_error > 50
    assert report.to_json()["agreement"] == report.agreement < 1.0


def test_a_corrupted_cache_shows_in_later_steps_not_only_in_the_step_that_wrote_it(tiny_lm):
    good = torch_step(tiny_lm)

    def bad_cache(x, kv, pos):
        logits, rows = good(x, kv, pos)
        return logits, (rows * 3.0 if pos == 6 else rows)
    report = greedy_check(bad_cache, good, PROMPT, 4, embed=embedder(tiny_lm))
    assert report.steps[1].max_abs_error == 0.0       # position 6's own logits are right
    assert report.steps[2].max_abs_error > 1e-3       # the cache it wrote is not


def test_a_disagreement_within_tolerance_of_the_best_logit_is_a_near_tie(tiny_lm):
    good = torch_step(tiny_lm)

    def tied(x, kv, pos):
        logits, rows = good(x, kv, pos)
        logits = logits.copy()
        if pos == 7:   # make the reference's best and second best equal to within 1e-6
            last = logits[0, -1]
            first, second = np.argsort(last)[-1], np.argsort(last)[-2]
            last[second] = last[first] - 1e-6
        return logits, rows

    def picks_second(x, kv, pos):
        logits, rows = tied(x, kv, pos)
        if pos == 7:
            last = logits[0, -1]
            first, second = np.argsort(last)[-1], np.argsort(last)[-2]
            last[first], last[second] = last[second], last[first]
        return logits, rows
    report = greedy_check(picks_second, tied, PROMPT, 5, embed=embedder(tiny_lm), atol=1e-4)
    step = report.steps[2]
    assert step.tokens != step.candidate_tokens and step.near_ties == [0] and step.agreed == 1
    assert report.passed and report.near_ties == 1 and step.margin < 1e-5
    strict = greedy_check(picks_second, tied, PROMPT, 5, embed=embedder(tiny_lm), atol=1e-9, rtol=0.0)
    assert not strict.passed and strict.near_ties == 0


@pytest.mark.parametrize("fault, message", [
    ("raise", "decode step 2 at position 6: the candidate raised RuntimeError: boom"),
    ("shape", r"decode step 2 at position 6: logits has shape \(1, 2, 128\), expected \(1, 1, 128\)"),
    ("nan", "decode step 2 at position 6: kv has non-finite values"),
])
def test_a_broken_candidate_is_a_failure_in_the_report(tiny_lm, fault, message):
    good = torch_step(tiny_lm)

    def broken(x, kv, pos):
        logits, rows = good(x, kv, pos)
        if pos == 6:
            if fault == "raise":
                raise RuntimeError("boom")
            if fault == "shape":
                logits = np.concatenate((logits, logits), axis=1)
            if fault == "nan":
                rows = rows.copy()
                rows[0, 0, 0, 0, 0, 0] = np.nan
        return logits, rows
    report = greedy_check(broken, good, PROMPT, 4, embed=embedder(tiny_lm))
    assert not report.passed and len(report.steps) == 1
    assert report.failure is not None
    import re
    assert re.fullmatch(message, report.failure)


def test_an_engine_plugs_in_as_two_phase_callables_and_ids_work_without_embed(tiny_lm):
    def prefill(x):
        with torch.no_grad():
            return [t.numpy() for t in tiny_lm.prefill(torch.from_numpy(x))]

    def decode(x, kv):
        with torch.no_grad():
            return [t.numpy() for t in tiny_lm.decode(torch.from_numpy(x), torch.from_numpy(kv))]
    assert greedy_check(phase_step(prefill, decode), torch_step(tiny_lm), PROMPT, 6, embed=embedder(tiny_lm)).passed

    def ids_step(ids, kv, pos):
        with torch.no_grad():
            out = (tiny_lm.prefill_ids(torch.from_numpy(ids)) if kv is None
                   else tiny_lm.decode_ids(torch.from_numpy(ids), torch.from_numpy(kv)))
        return [t.numpy() for t in out]
    assert greedy_check(ids_step, ids_step, PROMPT, 6).passed


def test_a_prompt_must_be_token_ids_in_rows(tiny_lm):
    with pytest.raises(ValueError, match=r"prompt must be token ids \[batch, t\]"):
        greedy_check(torch_step(tiny_lm), torch_step(tiny_lm), np.array([1, 2, 3]), 2)
