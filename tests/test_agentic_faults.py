"""Issue 16's faults of the agentic commands, each against real things: `brightpro agent` and `judge` run as processes (the
`cli` fixture), a real OpenAI-compatible server on 127.0.0.1 that answers from a script (`server`), real signals, a real
tmpfs. A result is either right or refused with one line, and nothing written is lost."""
import json, os, signal, subprocess, sys, time

import pytest

from brightpro.llm import LLMClient, LLMError
from brightpro.scripted_llm import Reply, error_reply, slow_reply, text_reply, tool_reply
from conftest import ROOT

JUDGEMENT = json.dumps({"aspect_scores": {"a1": 1.0, "a2": 0.5, "a3": 0.0, "a4": 1.0}, "overall_quality": 4, "justification": "ok"})


def scripted(request: dict):
    "Agent: one search, then an answer; judge: fixed scores."
    msgs = request["messages"]
    if request.get("response_format") or "REASONING_ASPECTS" in msgs[0]["content"] + msgs[-1]["content"]:
        return text_reply(JUDGEMENT)
    if request.get("tools") and not any(m["role"] == "tool" for m in msgs): return tool_reply("search", {"query": "onions cry"})
    return text_reply("Answer: a gas. Confidence: 70%")


def llm(url, *more):
    return ["--llm-base-url", url, "--llm-model", "m", "--llm-retries", "0", *more]


def one_line_error(r, code=2):
    "The process exited with `code` and wrote exactly one line to stderr, no traceback."
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    return r.stderr


def popen(*args):
    env = {**os.environ, "BRIGHTPRO_PROGRESS": "0"}
    return subprocess.Popen([sys.executable, "-m", "brightpro.cli", *map(str, args)], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def wait_for(cond, timeout=60):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end: raise AssertionError("timed out waiting")
        time.sleep(0.05)


@pytest.fixture
def agent_run(server, cli, tmp_path):
    "A small agent run (biology, queries 0 and 1, one round) to judge."
    srv = server(scripted)
    out = tmp_path/"run"
    r = cli("agent", "--domain", "biology", "--qids", "0,1", "--rounds", "1", "--out", out, *llm(srv.base_url), "--no-llm-cache")
    assert r.returncode == 0, r.stderr
    return out


# --- 3: one writer per output folder --------------------------------------------------------------------------------

def test_second_agent_on_one_folder_stops_at_once(server, cli, tmp_path):
    srv = server(lambda req: slow_reply(30))
    out = tmp_path/"run"
    first = popen("agent", "--domain", "biology", "--qids", "0", "--out", out, *llm(srv.base_url))
    try:
        wait_for(lambda: srv.count >= 1)
        start = time.monotonic()
        r = cli("agent", "--domain", "biology", "--qids", "0", "--out", out, *llm(srv.base_url))
        assert "in use by another brightpro agent run" in one_line_error(r)
        assert time.monotonic() - start < 20 and srv.count == 1   # the second made no request
    finally: first.kill(); first.wait()


def test_second_judge_on_one_folder_stops_at_once(server, cli, agent_run):
    srv = server(lambda req: slow_reply(30))
    first = popen("judge", agent_run, *llm(srv.base_url))
    try:
        wait_for(lambda: srv.count >= 1)
        r = cli("judge", agent_run, *llm(srv.base_url))
        assert "in use by another brightpro judge run" in one_line_error(r)
        assert srv.count <= 2   # the first's requests only (concurrency)
    finally: first.kill(); first.wait()


# --- 4: credentials in the base URL ---------------------------------------------------------------------------------

def secret_url(srv):
    return srv.base_url.replace("http://", "http://alice:PW-s3cret@") + "?token=TOK-s3cret"


def no_secret(*texts, folder=None):
    for t in texts: assert "s3cret" not in t, t
    for f in (folder.rglob("*") if folder else []):
        if f.is_file(): assert b"s3cret" not in f.read_bytes(), f


def test_credentials_in_the_url_reach_no_file_and_no_message(server, cli, agent_run, tmp_path):
    srv = server(lambda req: error_reply(400))
    user = srv.base_url.replace("http://", "http://alice:PW-s3cret@")   # reaches the server: every request refused
    a = cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"a", *llm(user))
    j = cli("judge", agent_run, *llm(user), "--no-llm-cache")
    assert srv.count >= 2
    q = cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"q", *llm(secret_url(srv)))   # a query: the server says 404
    down = cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"b",
               *llm("http://alice:PW-s3cret@127.0.0.1:9/v1?token=TOK-s3cret"))
    assert "cannot reach the LLM endpoint http://127.0.0.1:9/v1" in down.stderr, down.stderr
    no_secret(a.stdout, a.stderr, j.stdout, j.stderr, q.stdout, q.stderr, down.stdout, down.stderr, folder=tmp_path)
    for run in ("a", "q"):
        errors = [json.loads(l)["errors"] for l in (tmp_path/run/"biology"/"traces.jsonl").read_text().splitlines()]
        assert srv.base_url in errors[0][0], errors   # the URL is named, without what it carried
    judged = (agent_run/"biology"/"judgements.jsonl").read_text()
    assert "HTTP 400" in judged and srv.base_url in judged


def test_llm_error_messages_carry_no_credentials(server):
    srv = server([error_reply(404)])
    with LLMClient(secret_url(srv), "m", max_retries=0) as c:
        assert "s3cret" not in repr(c) and c.base_url == srv.base_url
        with pytest.raises(LLMError) as e: c.chat([{"role": "user", "content": "hi"}])
    no_secret(str(e.value))


# --- 6: a 200 reply of the wrong shape ------------------------------------------------------------------------------

def completion(message=None, usage=None, choices=None):
    body = {"id": "x", "object": "chat.completion", "choices": choices if choices is not None else
            [{"index": 0, "message": message, "finish_reason": "stop"}]}
    if usage is not None: body["usage"] = usage
    return Reply(body=body)

SHAPES = [
    (completion("just a string"), "message"),
    (completion({"role": "assistant", "content": 42}), "content"),
    (completion({"role": "assistant", "content": "hi"}, usage={"prompt_tokens": "ten", "completion_tokens": 3}), "prompt_tokens"),
    (completion({"role": "assistant", "content": None, "tool_calls": {"id": "c", "function": {"name": "search"}}}), "tool_calls"),
    (completion({"role": "assistant", "content": None, "tool_calls": ["search"]}), "tool_calls"),
    (completion({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": "search"}]}), "function"),
    (completion(choices=["x"]), "choices"),
    (Reply(body=[1, 2]), "choices"),
]

@pytest.mark.parametrize("reply,field", SHAPES)
def test_a_reply_of_the_wrong_shape_is_retried_then_named(server, reply, field):
    srv = server(lambda req: reply)
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    with LLMClient(srv.base_url, "m", max_retries=1) as c:
        with pytest.raises(LLMError) as e: c.chat([{"role": "user", "content": "hi"}], tools=tools)
    assert srv.count == 2, "a malformed reply is retried like a missing one"
    msg = str(e.value)
    assert ("malformed" in msg or "a reply without choices" in msg) and field in msg and "2 tries" in msg, msg
    assert "attribute" not in msg and "object has no" not in msg, msg


def test_agent_and_judge_on_malformed_replies_say_so_in_one_line(server, cli, agent_run, tmp_path):
    srv = server(lambda req: completion("just a string"))
    a = cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"a", *llm(srv.base_url))
    assert "malformed" in one_line_error(a)
    j = cli("judge", agent_run, *llm(srv.base_url))
    assert "malformed" in one_line_error(j)
    for f in tmp_path.rglob("*.jsonl"): assert "has no attribute" not in f.read_text(), f


# --- 7: nothing succeeded: a non-zero exit ---------------------------------------------------------------------------

def test_agent_and_judge_exit_2_when_every_query_failed(server, cli, agent_run, tmp_path):
    srv = server(lambda req: error_reply(400))
    a = cli("agent", "--domain", "biology", "--qids", "0,1", "--out", tmp_path/"a", *llm(srv.base_url))
    line = one_line_error(a)
    assert "every query failed" in line and "2 of 2" in line and "HTTP 400" in line, line
    assert len((tmp_path/"a"/"biology"/"traces.jsonl").read_text().splitlines()) == 2   # the failed traces are kept
    j = cli("judge", agent_run, *llm(srv.base_url), "--no-llm-cache")
    line = one_line_error(j)
    assert "every judging failed" in line and "2 of 2" in line and "HTTP 400" in line, line


# --- 8: failed or invalid replies are never cached --------------------------------------------------------------------

def test_an_empty_reply_is_not_cached(server, tmp_path):
    srv = server(lambda req: text_reply(""))
    with LLMClient(srv.base_url, "m", max_retries=0, cache=tmp_path/"c.sqlite") as c:
        assert c.chat([{"role": "user", "content": "hi"}]).error == "empty reply"
        c.chat([{"role": "user", "content": "hi"}])
        assert srv.count == 2 and len(c.cache) == 0


def test_rerunning_the_judge_retries_invalid_judgements(server, cli, agent_run):
    srv = server(lambda req: text_reply("I think it is fine."))
    j = cli("judge", agent_run, *llm(srv.base_url))
    assert srv.count == 6 and "run the judge again to retry them" in j.stdout, j.stdout   # 2 answers x 3 tries
    cli("judge", agent_run, *llm(srv.base_url))
    assert srv.count == 12, "the rerun asks again: nothing invalid was cached"
    good = server(scripted)
    fixed = cli("judge", agent_run, "--llm-base-url", good.base_url, "--llm-model", "m")
    assert fixed.returncode == 0 and good.count == 2, fixed.stderr


# --- 9: Ctrl-C against a hanging endpoint ----------------------------------------------------------------------------

def interrupt(proc, srv, requests):
    "SIGINT once the server holds `requests` requests; (seconds to exit, stderr)."
    wait_for(lambda: srv.count >= requests)
    time.sleep(0.3)
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try: _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired: proc.kill(); _, err = proc.communicate(); return 99.0, err
    return time.monotonic() - start, err


def test_ctrl_c_stops_the_agent_at_once_and_keeps_its_traces(server, tmp_path):
    # query 0: a search and an answer; query 1's first request hangs
    srv = server([tool_reply("search", {"query": "onions"}), text_reply("Answer: a gas."), slow_reply(120)])
    out = tmp_path/"run"
    p = popen("agent", "--domain", "biology", "--qids", "0,1", "--rounds", "1", "--concurrency", "1", "--out", out,
              *llm(srv.base_url, "--llm-timeout", "100"))
    seconds, err = interrupt(p, srv, 3)
    assert p.returncode == 130 and err.strip() == "brightpro: interrupted" and seconds < 3, (p.returncode, seconds, err)
    traces = [json.loads(l) for l in (out/"biology"/"traces.jsonl").read_text().splitlines()]
    assert [(t["qid"], t["status"]) for t in traces] == [("0", "ok")]


def test_ctrl_c_stops_the_judge_at_once_and_keeps_its_judgements(server, agent_run):
    srv = server([text_reply(JUDGEMENT), slow_reply(120)])
    p = popen("judge", agent_run, *llm(srv.base_url, "--concurrency", "1", "--llm-timeout", "100"))
    seconds, err = interrupt(p, srv, 2)
    assert p.returncode == 130 and err.strip() == "brightpro: interrupted" and seconds < 3, (p.returncode, seconds, err)
    lines = (agent_run/"biology"/"judgements.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["status"] == "ok"


# --- 10: a bad URL or timeout ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/v1", "http://127.0.0.1:port/v1", "localhost:8000/v1"])
def test_a_bad_base_url_is_one_line(cli, tmp_path, url):
    r = cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"x", *llm(url))
    assert "base URL" in one_line_error(r)
    assert not (tmp_path/"x"/"llm-cache.sqlite").exists()


@pytest.mark.parametrize("flag,value,says", [("--llm-timeout", "inf", "timeout"), ("--llm-timeout", "nan", "timeout"),
                                             ("--llm-timeout", "0", "timeout"), ("--llm-timeout", "-5", "timeout"),
                                             ("--price-in", "inf", "price_in"), ("--price-out", "-1", "price_out"),
                                             ("--max-tokens", "0", "max_tokens"), ("--temperature", "nan", "temperature")])
def test_a_bad_llm_setting_is_refused_before_any_file(server, cli, tmp_path, flag, value, says):
    srv = server(scripted)
    r = cli("agent", "--domain", "biology", "--qids", "0", "--out", tmp_path/"x", *llm(srv.base_url), flag, value)
    assert says in one_line_error(r) and srv.count == 0
    assert not (tmp_path/"x"/"llm-cache.sqlite").exists()


def test_a_refused_agent_setting_creates_no_cache(server, cli, tmp_path):
    srv = server(scripted)
    r = cli("agent", "--domain", "biology", "--qids", "0", "--rounds", "5", "--out", tmp_path/"x", *llm(srv.base_url))
    assert "1, 2 or 3 rounds" in one_line_error(r)
    assert not (tmp_path/"x"/"llm-cache.sqlite").exists()


# --- 11: a folder that cannot be written -------------------------------------------------------------------------------

def places(tmp_path, tmpfs):
    "(name, folder) pairs that cannot be written: a read-only mount, a file, a dangling symlink, a full disk."
    ro = tmpfs("ro", "ro,size=1m")
    (tmp_path/"file").write_text("x")
    (tmp_path/"dangling").symlink_to(tmp_path/"nowhere"/"deeper")
    full = tmpfs("full", "size=64k")
    with open(full/"filler", "wb", buffering=0) as f:
        try:
            while True: f.write(b"x" * 4096); f.flush()
        except OSError: pass
    return [("read-only", ro/"run"), ("file", tmp_path/"file"), ("dangling", tmp_path/"dangling"), ("full", full/"run")]


def test_agent_checks_that_it_can_write(server, cli, tmp_path, tmpfs):
    srv = server(scripted)
    for name, out in places(tmp_path, tmpfs):
        for how in (["--policy", "prf"], llm(srv.base_url, "--no-llm-cache")):
            r = cli("agent", "--domain", "biology", "--qids", "0", "--rounds", "1", "--out", out, *how)
            line = one_line_error(r)
            assert str(out) in line, (name, line)
    assert srv.count == 0


def test_judge_checks_that_it_can_write(server, cli, agent_run, tmpfs):
    srv = server(scripted)
    ro = tmpfs("ro_judge", "size=1m")
    subprocess.run(["cp", "-r", str(agent_run), str(ro)], check=True)
    subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
    r = cli("judge", ro/"run", *llm(srv.base_url))
    assert "cannot write" in one_line_error(r) and srv.count == 0, r.stderr
    full = tmpfs("full_judge", "size=256k")
    subprocess.run(["cp", "-r", str(agent_run), str(full)], check=True)
    with open(full/"filler", "wb", buffering=0) as f:
        try:
            while True: f.write(b"x" * 4096); f.flush()
        except OSError: pass
    r = cli("judge", full/"run", *llm(srv.base_url))
    assert "disk is full" in one_line_error(r), r.stderr


# --- low: caps and waits -------------------------------------------------------------------------------------------

def test_a_huge_answer_is_cut_in_the_trace(server, cli, tmp_path):
    huge = "word " * 400_000   # 2 MB
    srv = server(lambda req: tool_reply("search", {"query": "onions"}) if req.get("tools") and len(req["messages"]) == 2
                 else text_reply(huge) if not req.get("tools") else text_reply("done"))
    out = tmp_path/"run"
    r = cli("agent", "--domain", "biology", "--qids", "0", "--rounds", "3", "--out", out, *llm(srv.base_url))
    assert r.returncode == 0, r.stderr
    size = (out/"biology"/"traces.jsonl").stat().st_size
    trace = json.loads((out/"biology"/"traces.jsonl").read_text())
    assert size < 300_000, size
    assert any("cut" in e and "characters" in e for e in trace["errors"]), trace["errors"]


def test_a_query_that_hits_the_adaptive_cap_is_counted(server, cli, tmp_path):
    srv = server(lambda req: tool_reply("search", {"query": f"onions {len(req['messages'])}"}))
    r = cli("agent", "--domain", "biology", "--qids", "0,1", "--protocol", "adaptive", "--max-iterations", "2", "--out", tmp_path/"a",
            *llm(srv.base_url))
    assert r.returncode == 0, r.stderr
    assert "0 done" in r.stdout and "2 capped" in r.stdout, r.stdout


def test_a_long_retry_after_is_named_truthfully(server):
    srv = server(lambda req: error_reply(429, headers={"Retry-After": "3600"}))
    with LLMClient(srv.base_url, "m", max_retries=3) as c:
        start = time.monotonic()
        with pytest.raises(LLMError) as e: c.chat([{"role": "user", "content": "hi"}])
    assert "Retry-After" in str(e.value) and "3600" in str(e.value) and "try again later" in str(e.value), str(e.value)
    assert srv.count == 1 and time.monotonic() - start < 5   # not retried: the endpoint asked for an hour
