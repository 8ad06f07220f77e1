"""Issue 16, the agentic paths: judgements tied to the answer they judged, traces checked against the dataset and the
domain they record, and trace or judgement lines of the wrong shape refused with one line naming file, line and field.
Everything runs as a user runs it: the command line in a subprocess, against a real OpenAI-compatible server on
127.0.0.1 (LocalChatServer) scripted here."""
import json, shutil

import pandas as pd
import pytest

from brightpro.core import text_digest
from brightpro.data import SAMPLE_ROOT
from brightpro.scripted_llm import LocalChatServer, text_reply, tool_reply
from conftest import run_cli

NOTHING = "I found nothing."


class Scripted:
    "Agent: one search, then an answer ('found' or 'nothing' mode); judge: OQ 4 for a found answer, OQ 1 for nothing."
    def __init__(self): self.mode, self.aspects = "found", True

    def __call__(self, request):
        msgs = request["messages"]
        if request.get("response_format"):
            text, keys = msgs[0]["content"], request["response_format"]["json_schema"]["schema"]["properties"]["aspect_scores"]["required"]
            scores = {k: 1.0 for k in keys} if self.aspects else {}
            return text_reply(json.dumps({"aspect_scores": scores, "overall_quality": 1 if NOTHING in text else 4, "justification": "s"}))
        if request.get("tools") and not any(m["role"] == "tool" for m in msgs):
            return tool_reply("search", {"query": "onions"})
        if self.mode == "nothing": return text_reply(NOTHING)
        first = json.loads(next(m for m in msgs if m["role"] == "tool")["content"])[0]["docid"]
        return text_reply(f"A gas [{first}]. Answer: a gas.")


@pytest.fixture
def scripted():
    s = Scripted()
    with LocalChatServer(s) as srv:
        srv.script = s
        yield srv


def llm(srv): return ["--llm-base-url", srv.base_url, "--llm-model", "scripted", "--llm-retries", "0", "--no-llm-cache"]

def agent(srv, out, *extra): return run_cli("agent", "--domain", "biology", "--qids", "0,1", "--protocol", "adaptive", "--out", out, *llm(srv), *extra)

def one_line_error(r):
    "The run failed with exit 2 and exactly one line on stderr, no traceback."
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, (r.returncode, r.stderr)
    return r.stderr


# --- case 1: judgements reused for answers they never judged --------------------------------------------------------

def test_judgements_of_changed_answers_are_judged_again(scripted, tmp_path):
    out = tmp_path/"run"
    assert agent(scripted, out).returncode == 0
    assert run_cli("judge", out, *llm(scripted)).returncode == 0
    ev = json.loads(run_cli("agentic-eval", out, "--json").stdout)
    assert ev["domains"]["biology"]["metrics"]["oq"] == 4
    # as `agent` advises for a damaged file: move the traces away and run again; the endpoint now answers differently
    (out/"biology"/"traces.jsonl").rename(tmp_path/"old-traces.jsonl")
    scripted.script.mode = "nothing"
    assert agent(scripted, out).returncode == 0
    answers = [json.loads(l)["answer"] for l in (out/"biology"/"traces.jsonl").read_text().splitlines()]
    assert answers == [NOTHING, NOTHING]
    # before judging again, agentic-eval must not give the old answers' scores to the new ones
    ev = json.loads(run_cli("agentic-eval", out, "--json").stdout)
    bio = ev["domains"]["biology"]
    assert bio["metrics"]["oq"] is None and bio["counts"]["judged"] == 0 and bio["counts"]["stale_judgements"] == 2
    assert any("stale" in n and "brightpro judge" in n for n in ev["notes"]), ev["notes"]
    before = scripted.count
    j = run_cli("judge", out, *llm(scripted))
    assert j.returncode == 0, j.stderr
    assert scripted.count == before + 2, j.stdout          # both answers judged again (today: 0 requests, "resumed 2")
    lines = [json.loads(l) for l in (out/"biology"/"judgements.jsonl").read_text().splitlines()]
    assert len(lines) == 2 and all(l["answer_digest"] == text_digest(NOTHING) and l["overall_quality"] == 1 for l in lines)
    assert "2 judgement(s) of answers that changed" in j.stdout, j.stdout
    ev = json.loads(run_cli("agentic-eval", out, "--json").stdout)
    assert ev["domains"]["biology"]["metrics"]["oq"] == 1 and ev["domains"]["biology"]["counts"]["stale_judgements"] == 0
    again = scripted.count
    assert run_cli("judge", out, *llm(scripted)).returncode == 0 and scripted.count == again   # resumed: nothing to do


def test_a_changed_judge_prompt_judges_again(scripted, tmp_path):
    out = tmp_path/"run"
    assert agent(scripted, out).returncode == 0
    assert run_cli("judge", out, *llm(scripted)).returncode == 0
    prompts = tmp_path/"prompts"; prompts.mkdir()
    from brightpro.prompts import load_judge_prompt
    (prompts/"judge.md").write_text(load_judge_prompt() + "\nBe strict.\n")
    before = scripted.count
    assert run_cli("judge", out, "--prompt-dir", prompts, *llm(scripted)).returncode == 0
    assert scripted.count == before + 2
    lines = [json.loads(l) for l in (out/"biology"/"judgements.jsonl").read_text().splitlines()]
    assert {l["prompt_digest"] for l in lines} == {text_digest((prompts/"judge.md").read_text())}


# --- case 2: where the traces came from -------------------------------------------------------------------------

@pytest.fixture
def other_dataset(tmp_path):
    "A copy of the sample whose biology query 0 has other gold documents (so the two datasets score differently)."
    root = tmp_path/"copy"
    shutil.copytree(SAMPLE_ROOT/"bright_pro", root)
    ex = pd.read_parquet(root/"examples"/"biology.parquet")
    docs = pd.read_parquet(root/"documents"/"biology.parquet", columns=["id"])["id"].tolist()
    ex.at[0, "gold_ids"] = [d for d in docs if d not in set(ex.at[0, "gold_ids"])][:3]
    ex.to_parquet(root/"examples"/"biology.parquet")
    return root


def test_the_run_dataset_is_used_and_another_refused(other_dataset, tmp_path):
    out = tmp_path/"run"
    r = run_cli("agent", "--domain", "biology", "--qids", "0,1", "--policy", "prf", "--dataset", other_dataset, "--out", out)
    assert r.returncode == 0, r.stderr
    mine = json.loads(run_cli("agentic-eval", out, "--json", "--dataset", other_dataset).stdout)
    plain = run_cli("agentic-eval", out, "--json")                         # no --dataset: the run's, not the sample
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["domains"] == mine["domains"]
    assert json.loads(plain.stdout)["dataset"] == str(other_dataset)
    err = one_line_error(run_cli("agentic-eval", out, "--dataset", "sample"))
    assert "--dataset" in err and str(other_dataset) in err and "meta.json" in err
    err = one_line_error(run_cli("judge", out, "--dataset", "sample", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"))
    assert "--dataset" in err


def test_the_library_refuses_domains_of_another_dataset(other_dataset, tmp_path):
    from brightpro.agentic import agentic_eval
    from brightpro.core import BrightproError
    from brightpro.data import load_domains
    out = tmp_path/"run"
    assert run_cli("agent", "--domain", "biology", "--qids", "0", "--policy", "prf", "--dataset", other_dataset, "--out", out).returncode == 0
    with pytest.raises(BrightproError, match="meta.json"): agentic_eval(out, load_domains("biology", "sample"))
    assert agentic_eval(out, load_domains("biology", other_dataset)).counts["biology"]["queries"] == 1


def test_a_trace_in_another_domain_folder_is_refused(tmp_path, scripted):
    out = tmp_path/"run"
    r = run_cli("agent", "--domain", "biology,economics", "--qids", "0", "--policy", "prf", "--out", out)
    assert r.returncode == 0, r.stderr
    bio, eco = out/"biology"/"traces.jsonl", out/"economics"/"traces.jsonl"
    eco.write_text(bio.read_text())                               # biology's trace under economics/
    err = one_line_error(run_cli("agentic-eval", out))
    assert "economics/traces.jsonl" in err and "line 1" in err and "biology" in err, err
    err = one_line_error(run_cli("judge", out, *llm(scripted)))
    assert "economics/traces.jsonl" in err and "line 1" in err, err


# --- Low: lines of the wrong shape ----------------------------------------------------------------------------------

@pytest.fixture
def prf_run(tmp_path):
    out = tmp_path/"run"
    r = run_cli("agent", "--domain", "biology", "--qids", "0,1", "--policy", "prf", "--out", out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("line, field", [("[1, 2]", "object"), ('"text"', "object"), ('{"qid": 0}', "status"),
                                         ('{"qid": "0", "status": "ok", "rounds": "x"}', "rounds"),
                                         ('{"qid": "0", "status": "ok", "rounds": [], "answers": [{"round": "one", "answer": "a"}]}', "answers"),
                                         ('{"qid": true, "status": "ok"}', "qid")])
def test_a_trace_line_of_the_wrong_shape_is_named(prf_run, scripted, line, field):
    path = prf_run/"biology"/"traces.jsonl"
    path.write_text(path.read_text() + line + "\n")
    for r in (run_cli("agentic-eval", prf_run), run_cli("judge", prf_run, *llm(scripted))):
        err = one_line_error(r)
        assert "biology/traces.jsonl" in err and "line 3" in err and field in err, err


@pytest.mark.parametrize("line, field", [("[1]", "object"), ('{"qid": "0", "round": 1, "rep": 1}', "status"),
                                         ('{"qid": "0", "round": 1, "rep": 1, "status": "ok", "overall_quality": "high"}', "overall_quality"),
                                         ('{"qid": "0", "round": "1", "status": "ok"}', "round")])
def test_a_judgement_line_of_the_wrong_shape_is_named(prf_run, scripted, line, field):
    (prf_run/"biology"/"judgements.jsonl").write_text(line + "\n")
    for r in (run_cli("agentic-eval", prf_run), run_cli("judge", prf_run, *llm(scripted))):
        err = one_line_error(r)
        assert "biology/judgements.jsonl" in err and "line 1" in err and field in err, err


def test_a_damaged_middle_line_names_that_line_and_the_rest_is_kept(scripted, tmp_path):
    out = tmp_path/"run"
    assert run_cli("agent", "--domain", "biology", "--qids", "0,1,2", "--protocol", "adaptive", "--out", out, *llm(scripted)).returncode == 0
    path = out/"biology"/"traces.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + '{"qid": "1", "sta\n' + lines[2])
    args = ("agent", "--domain", "biology", "--qids", "0,1,2", "--protocol", "adaptive", "--out", out, *llm(scripted))
    err = one_line_error(run_cli(*args))
    assert "line 2" in err and "only that line" in err and "move the file away" not in err, err
    # as the message says: delete that line; the other queries are kept, only query 1 runs again
    path.write_text(lines[0] + lines[2])
    before = scripted.count
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    assert "2 skipped" in r.stdout and scripted.count - before == 2, r.stdout       # query 1: a search and an answer
    assert [json.loads(l)["qid"] for l in path.read_text().splitlines()] == ["0", "1", "2"]


def test_judge_replies_without_aspect_scores_are_counted(scripted, tmp_path):
    out = tmp_path/"run"
    assert agent(scripted, out).returncode == 0
    scripted.script.aspects = False
    j = run_cli("judge", out, *llm(scripted))
    assert j.returncode == 0, j.stderr
    assert "biology: 2 judgement(s) gave no score to some aspect" in j.stdout, j.stdout
    ev = json.loads(run_cli("agentic-eval", out, "--json").stdout)
    assert ev["domains"]["biology"]["counts"]["omitted_aspects"] == 2
    assert any("gave no score to some aspect" in n for n in ev["notes"]), ev["notes"]
    text = run_cli("agentic-eval", out).stdout
    assert "biology: 2 judgement(s) gave no score to some aspect" in text
