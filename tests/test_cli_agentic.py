"""`brightpro agent`, `judge` and `agentic-eval` end to end, as a user runs them, against a real OpenAI-compatible
HTTP server on 127.0.0.1 that this test scripts (the real `openai` client path, not a mock). Expected scores are
worked out by hand from protocol.ipynb §5 in the comments."""
import json, math

import pytest

from brightpro.data import load_domain
from brightpro.scripted_llm import LocalChatServer
from conftest import run_cli, scripted_agent_and_judge

KEY = "sk-test-NEVER-ON-DISK-4242"


def scripted(request: dict):
    "The shared script, citing a made-up id beside the first hit."
    return scripted_agent_and_judge(request, cited=" [made/up_id.txt]")


@pytest.fixture(scope="module")
def server():
    with LocalChatServer(scripted) as srv: yield srv


def llm(server):
    return ["--llm-base-url", server.base_url, "--llm-model", "scripted-model", "--llm-retries", "0"]


def test_adaptive_agent_judge_and_eval(server, tmp_path):
    out = tmp_path/"run"
    env = {"BRIGHTPRO_LLM_API_KEY": KEY}
    a = run_cli("agent", "--domain", "biology", "--qids", "0", "--protocol", "adaptive", "--out", out, *llm(server), env=env)
    assert a.returncode == 0, a.stderr
    trace = json.loads((out/"biology"/"traces.jsonl").read_text().splitlines()[0])
    assert trace["qid"] == "0" and trace["R"] == 1 and trace["status"] == "ok"
    assert trace["rounds"][0]["query"] == "why do onions make you cry" and len(trace["rounds"][0]["docids"]) == 5
    # the first request carried the search tool and the question
    first = next(r for r in server.requests if r.get("tools"))
    assert first["tools"][0]["function"]["name"] == "search"
    assert any(load_domain("biology").query_text["0"] in (m.get("content") or "") for m in first["messages"])

    j = run_cli("judge", out, *llm(server), env=env)
    assert j.returncode == 0, j.stderr
    ev = json.loads(run_cli("agentic-eval", out, "--json").stdout)
    m = ev["domains"]["biology"]["metrics"]
    # biology-0's aspects weigh 3, 3, 2, 1; scores 1, .5, 0, 1: coverage (3 + 1.5 + 0 + 1) / 9 = 0.6111
    # RC = round(4 * 0.6111 + 1) = round(3.444) = 3; OQ = 4; AER = 4 * exp(-0.05 * (R - 1)) with R = 1 -> 4
    assert m["rc"] == 3 and m["oq"] == 4 and math.isclose(m["aer"], 4.0)
    # one citation is a retrieved document, the other was never retrieved: one hallucinated citation
    assert m["hallucinated"] == 1
    requests_before = server.count
    again = run_cli("judge", out, *llm(server), env=env)       # resumed: everything judged, no request
    assert again.returncode == 0 and server.count == requests_before
    for f in tmp_path.rglob("*"):
        if f.is_file(): assert KEY.encode() not in f.read_bytes(), f


def test_fixed_rounds_answer_after_each_round(server, tmp_path):
    out = tmp_path/"fixed"
    r = run_cli("agent", "--domain", "biology", "--qids", "1", "--rounds", "2", "--out", out, *llm(server))
    assert r.returncode == 0, r.stderr
    trace = json.loads((out/"biology"/"traces.jsonl").read_text())
    # the agent stopped after its one search: round 2's answer repeats round 1's evidence (protocol.ipynb §5)
    assert [a["round"] for a in trace["answers"]] == [1, 2] and trace["stopped_early"] is True
    assert trace["answers"][0]["evidence"] == trace["answers"][1]["evidence"] == trace["rounds"][0]["docids"]


def test_endpoint_down_is_one_line(tmp_path):
    r = run_cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"x",
                "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m", "--llm-retries", "0")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert "cannot reach" in r.stderr


def test_judge_without_an_endpoint_says_what_to_give(tmp_path):
    r = run_cli("judge", tmp_path)
    assert r.returncode == 2 and "--llm-base-url" in r.stderr and "Traceback" not in r.stderr


def test_prf_needs_no_llm(tmp_path):
    r = run_cli("agent", "--policy", "prf", "--domain", "economics", "--subset", "agentic", "--out", tmp_path/"prf")
    # the sample has 6 queries per domain: the 25-query agentic subset cannot be drawn, and it says so
    assert r.returncode == 2 and "25 queries per domain" in r.stderr
    r = run_cli("agent", "--policy", "prf", "--domain", "economics", "--out", tmp_path/"prf")
    assert r.returncode == 0, r.stderr
    assert len((tmp_path/"prf"/"economics"/"traces.jsonl").read_text().splitlines()) == 6
