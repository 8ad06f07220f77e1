"""The LLM client against a real OpenAI-compatible HTTP server on 127.0.0.1 (`LocalChatServer`), through the real
`openai` client path: what the requests carry, every misbehaviour of real servers, the cache, the concurrency limit,
and that the API key is never written anywhere."""
import json, socket, threading, time

import pytest

from brightpro.core import BrightproError
from brightpro.llm import ChatReply, LLMCache, LLMClient, LLMError, parse_text_tool_calls
from brightpro.scripted_llm import (drop_connection, empty_reply, error_reply, length_reply, malformed_reply, slow_reply, text_reply,
                                    text_tool_call_reply, tool_calls_reply, tool_reply)

SEARCH = {"type": "function", "function": {"name": "search", "description": "Search the corpus.",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
QUESTION = [{"role": "system", "content": "You are a careful researcher."}, {"role": "user", "content": "Why is the sky blue?"}]
SECRET = "sk-brightpro-DISTINCTIVE-9f3c2e71a8"


def client_for(srv, **kwargs):
    return LLMClient(srv.base_url, kwargs.pop("model", "local-model"), **{"max_retries": 1, "timeout": 5.0, **kwargs})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]


def test_tool_round_trip_carries_schema_and_conversation(server):
    srv = server([tool_reply("search", {"query": "rayleigh scattering"}), text_reply("Scattering [d1].\nAnswer: Rayleigh")])
    client = client_for(srv)
    reply = client.chat(QUESTION, tools=[SEARCH])
    assert srv.requests[0]["tools"] == [SEARCH] and srv.requests[0]["messages"] == QUESTION
    assert srv.requests[0]["model"] == "local-model" and srv.requests[0]["temperature"] == 0.0
    assert reply.finish_reason == "tool_calls" and not reply.parsed_from_text and reply.error is None
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.error) == ("search", {"query": "rayleigh scattering"}, None)
    conversation = QUESTION + [reply.as_message(), {"role": "tool", "tool_call_id": call.id, "content": '[{"docid": "d1"}]'}]
    final = client.chat(conversation, tools=[SEARCH])
    assert srv.requests[1]["messages"] == conversation   # the whole conversation, tool call and result included
    assert srv.requests[1]["messages"][2]["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"query": "rayleigh scattering"}'}
    assert final.content.endswith("Answer: Rayleigh") and final.tool_calls == []
    assert final.prompt_tokens > 0 and final.completion_tokens == 4 and final.latency_s > 0 and final.cost is None


def test_several_tool_calls_in_one_reply(server):
    srv = server([tool_calls_reply([("search", {"query": "a"}), ("search", {"query": "b"})])])
    reply = client_for(srv).chat(QUESTION, tools=[SEARCH])
    assert [c.arguments["query"] for c in reply.tool_calls] == ["a", "b"]
    assert len({c.id for c in reply.tool_calls}) == 2


def test_429_with_retry_after_is_retried(server):
    srv = server([error_reply(429, headers={"Retry-After": "1"}), text_reply("after the wait")])
    start = time.perf_counter()
    reply = client_for(srv, max_retries=2).chat(QUESTION)
    assert reply.content == "after the wait" and srv.count == 2
    assert time.perf_counter() - start >= 0.9   # Retry-After: 1 was honoured


def test_500_is_retried(server):
    srv = server([error_reply(500), text_reply("recovered")])
    assert client_for(srv).chat(QUESTION).content == "recovered" and srv.count == 2


def test_500_every_time_is_one_line_error(server):
    srv = server([error_reply(500), error_reply(502)])
    with pytest.raises(LLMError) as e: client_for(srv).chat(QUESTION)
    msg = str(e.value)
    assert "\n" not in msg and srv.base_url in msg and "local-model" in msg and "HTTP 502" in msg and "2 tries" in msg
    assert srv.count == 2


def test_slower_than_timeout_is_retried_then_fails(server):
    srv = server([slow_reply(2.0), slow_reply(2.0)])
    with pytest.raises(LLMError, match="did not answer within 0.3 s") as e:
        client_for(srv, timeout=0.3, max_retries=1).chat(QUESTION)
    assert srv.count == 2 and "\n" not in str(e.value) and srv.base_url in str(e.value)


def test_slow_reply_then_success(server):
    srv = server([slow_reply(2.0), text_reply("in time")])
    assert client_for(srv, timeout=0.3, max_retries=1).chat(QUESTION).content == "in time" and srv.count == 2


def test_dropped_connection_is_retried(server):
    srv = server([drop_connection(), text_reply("second try")])
    assert client_for(srv).chat(QUESTION).content == "second try" and srv.count == 2


def test_dropped_connection_every_time(server):
    srv = server([drop_connection(), drop_connection()])
    with pytest.raises(LLMError, match="cannot reach the LLM endpoint"): client_for(srv).chat(QUESTION)
    assert srv.count == 2


def test_malformed_json_is_retried_then_fails(server):
    srv = server([malformed_reply(), text_reply("valid now")])
    assert client_for(srv).chat(QUESTION).content == "valid now" and srv.count == 2
    srv = server([malformed_reply(), malformed_reply()])
    with pytest.raises(LLMError, match="not valid JSON") as e: client_for(srv).chat(QUESTION)
    assert srv.count == 2 and "\n" not in str(e.value) and srv.base_url in str(e.value)


@pytest.mark.parametrize("arguments, error", [
    ('{"query": "unterminated', "arguments are not valid JSON"),
    ('["a list"]', "arguments must be a JSON object, not an array"),
    ('{"q": "wrong name"}', "missing argument 'query'"),
    ('{"query": 42}', "argument 'query' must be a string, not a number"),
])
def test_bad_tool_arguments_set_error(server, arguments, error):
    srv = server([tool_reply("search", arguments)])
    (call,) = client_for(srv).chat(QUESTION, tools=[SEARCH]).tool_calls
    assert call.error.startswith(error) and call.raw == arguments and call.name == "search"
    assert json.loads(call.as_openai()["function"]["arguments"]) is not None   # what goes back to the server stays JSON


def test_unknown_tool_name_sets_error(server):
    srv = server([tool_reply("browse", {"url": "x"})])
    (call,) = client_for(srv).chat(QUESTION, tools=[SEARCH]).tool_calls
    assert call.error == "unknown tool 'browse'; the tools are: search"


@pytest.mark.parametrize("style", ["tag", "bare"])
def test_text_tool_calls_are_parsed_and_flagged(server, style):
    srv = server([text_tool_call_reply("search", {"query": "sky colour"}, style=style)] * 2)
    client = client_for(srv)
    reply = client.chat(QUESTION, tools=[SEARCH])
    assert reply.parsed_from_text and reply.error is None and reply.content is None
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.error) == ("search", {"query": "sky colour"}, None)
    assert reply.as_message()["tool_calls"][0]["function"]["name"] == "search"
    plain = client.chat(QUESTION)   # no tools offered: the text is just text
    assert not plain.parsed_from_text and plain.tool_calls == [] and "sky colour" in plain.content


def test_text_tool_call_parsing_rules():
    text = 'Thinking.\n<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>'
    assert [c.arguments for c in parse_text_tool_calls(text)] == [{"query": "x"}]
    assert parse_text_tool_calls(text, names=["browse"]) == []
    assert parse_text_tool_calls('Use {"name": "search"} as the key.') == []   # a bare object needs arguments
    assert parse_text_tool_calls('{"name": "search", "arguments": "{\\"query\\": \\"y\\"}"}')[0].arguments == {"query": "y"}
    assert parse_text_tool_calls('<tool_call>{"name": "search", "arguments": {"query": "x"}}')[0].arguments == {"query": "x"}   # unclosed


def test_text_tool_call_with_other_name_is_not_a_call(server):
    srv = server([text_tool_call_reply("browse", {"url": "x"})])
    reply = client_for(srv).chat(QUESTION, tools=[SEARCH])
    assert reply.tool_calls == [] and not reply.parsed_from_text and "browse" in reply.content


def test_length_and_empty_replies_are_returned_with_error(server):
    srv = server([length_reply("The sky is blue because"), empty_reply()])
    client = client_for(srv)
    cut = client.chat(QUESTION)
    assert (cut.content, cut.finish_reason, cut.error) == ("The sky is blue because", "length", "hit the token limit")
    empty = client.chat(QUESTION)
    assert empty.error == "empty reply" and empty.tool_calls == [] and srv.count == 2


def test_endpoint_down_is_one_line_error():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(LLMError) as e: LLMClient(url, "local-model", max_retries=0, timeout=2.0).chat(QUESTION)
    msg = str(e.value)
    assert msg.startswith(f"cannot reach the LLM endpoint {url}") and "\n" not in msg and "local-model" in msg
    assert isinstance(e.value, BrightproError) and e.value.exit_code == 2


def test_unknown_model_names_the_model_and_what_is_served(server):
    srv = server([text_reply("never sent")], models=["qwen3-4b", "llama-3.1-8b"])
    with pytest.raises(LLMError) as e: client_for(srv, model="gpt-oops").chat(QUESTION)
    assert str(e.value) == f"the endpoint {srv.base_url} does not serve model gpt-oops; it serves: qwen3-4b, llama-3.1-8b"
    assert srv.count == 1   # a 404 is not retried


def test_rejected_key_message_without_the_key(server):
    srv = server([text_reply("never sent")], api_key="sk-the-right-one")
    with pytest.raises(LLMError) as e: client_for(srv, api_key=SECRET).chat(QUESTION)
    msg = str(e.value)
    assert "rejected the API key" in msg and "BRIGHTPRO_LLM_API_KEY" in msg and SECRET not in msg and "\n" not in msg
    assert e.value.status == 401
    assert srv.count == 1


def test_settings_from_environment(monkeypatch, server):
    srv = server([text_reply("from env")], api_key=SECRET)
    for k in ("BRIGHTPRO_LLM_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"): monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("BRIGHTPRO_LLM_BASE_URL", srv.base_url)
    monkeypatch.setenv("BRIGHTPRO_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client = LLMClient()
    assert (client.base_url, client.model) == (srv.base_url, "env-model") and SECRET not in repr(client)
    assert client.chat(QUESTION).content == "from env" and srv.auth_count == 1
    monkeypatch.delenv("BRIGHTPRO_LLM_MODEL")
    with pytest.raises(LLMError, match="BRIGHTPRO_LLM_MODEL"): LLMClient()


def test_no_endpoint_configured(monkeypatch):
    for k in ("BRIGHTPRO_LLM_BASE_URL", "OPENAI_BASE_URL"): monkeypatch.delenv(k, raising=False)
    with pytest.raises(LLMError, match="no LLM endpoint"): LLMClient(model="m")


def test_cache_second_call_makes_no_request(server, tmp_path):
    srv = server(lambda request: tool_reply("search", {"query": request["messages"][-1]["content"]}))
    client = client_for(srv, cache=tmp_path/"llm.sqlite", price_in=1.0, price_out=2.0)
    first = client.chat(QUESTION, tools=[SEARCH])
    again = client.chat(QUESTION, tools=[SEARCH])
    assert srv.count == 1 and not first.cached and again.cached and again.latency_s == 0.0
    assert again.tool_calls == first.tool_calls and again.content == first.content
    assert (again.prompt_tokens, again.completion_tokens, again.cost) == (first.prompt_tokens, first.completion_tokens, first.cost)
    assert first.cost == pytest.approx((first.prompt_tokens * 1.0 + first.completion_tokens * 2.0) / 1e6)
    client.chat(QUESTION, tools=[SEARCH], temperature=0.5)   # another sampling setting: another request
    client.chat(QUESTION)                                    # no tools: another request
    assert srv.count == 3
    fresh = client_for(srv, cache=tmp_path/"llm.sqlite", price_in=1.0, price_out=2.0)   # persisted: a new client, same file
    assert fresh.chat(QUESTION, tools=[SEARCH]).cached and srv.count == 3
    assert len(LLMCache(tmp_path/"llm.sqlite")) == 3


def test_cache_keeps_no_error_replies(server, tmp_path):
    srv = server([empty_reply(), text_reply("the sky scatters blue light")])
    client = client_for(srv, cache=tmp_path/"c.sqlite")
    assert client.chat(QUESTION).error == "empty reply"
    again = client.chat(QUESTION)   # asked again: an empty reply is not a result to replay
    assert again.error is None and not again.cached and srv.count == 2
    assert client.chat(QUESTION).cached and srv.count == 2


def test_cache_is_thread_safe(tmp_path):
    cache = LLMCache(tmp_path/"t.sqlite")
    def write(i):
        for j in range(20): cache.put(f"{i}-{j}", {"n": j})
    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert len(cache) == 160 and cache.get("7-19") == {"n": 19} and "3-4" in cache


def test_key_is_never_written(server, tmp_path):
    srv = server(lambda request: tool_reply("search", {"query": "q"}) if len(request["messages"]) < 3 else text_reply("done"),
                 api_key=SECRET)
    client = client_for(srv, api_key=SECRET, cache=tmp_path/"cache"/"llm.sqlite", price_in=0.5, price_out=1.5)
    reply = client.chat(QUESTION, tools=[SEARCH])
    conversation = QUESTION + [reply.as_message(), {"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": "[]"}]
    client.chat(conversation, tools=[SEARCH])
    client.chat(QUESTION, tools=[SEARCH])   # a cache hit
    (tmp_path/"replies.json").write_text(json.dumps([reply.to_dict(), repr(reply), repr(client), repr(client.cache)]))
    assert srv.auth_count == 2 and srv.count == 2   # the key did reach the server, in the Authorization header only
    assert all(SECRET not in json.dumps(h) for h in srv.headers)
    client.close()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(SECRET.encode() not in p.read_bytes() for p in files)
    assert SECRET not in repr(client)
    echo = server([error_reply(400, {"error": {"message": f"bad request from key {SECRET}"}})], api_key=SECRET)
    with pytest.raises(LLMError) as e: client_for(echo, api_key=SECRET).chat(QUESTION)   # a server that echoes the key
    assert SECRET not in str(e.value) and "bad request from key ***" in str(e.value)
    assert e.value.status == 400


def test_concurrency_limit(server):
    srv = server(lambda request: text_reply("ok"), delay=0.2)
    client = client_for(srv, concurrency=4)
    threads = [threading.Thread(target=client.chat, args=([{"role": "user", "content": f"q{i}"}],)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert srv.count == 8 and srv.max_in_flight <= 4


def test_concurrency_is_real(server):
    "Without a tight limit the requests do overlap: the limit above is what held them back."
    srv = server(lambda request: text_reply("ok"), delay=0.2)
    client = client_for(srv, concurrency=8)
    threads = [threading.Thread(target=client.chat, args=([{"role": "user", "content": f"q{i}"}],)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert srv.count == 8 and srv.max_in_flight > 4


def test_bad_settings_are_refused():
    for kwargs, msg in [({"concurrency": 0}, "concurrency"), ({"timeout": 0}, "timeout"), ({"max_retries": -1}, "max_retries"),
                        ({"price_in": -1.0}, "price_in"), ({"price_out": float("inf")}, "price_out"),
                        ({"timeout": float("inf")}, "timeout"), ({"max_tokens": 0}, "max_tokens")]:
        with pytest.raises(BrightproError, match=msg): LLMClient("http://127.0.0.1:9/v1", "m", **kwargs)


def test_openai_host_gets_max_completion_tokens():
    assert LLMClient("https://api.openai.com/v1", "gpt-5-mini", api_key="x")._tokens_param == "max_completion_tokens"
    assert LLMClient("http://localhost:8000/v1", "m")._tokens_param == "max_tokens"


def test_reply_round_trips_through_dict():
    reply = ChatReply("hi", finish_reason="stop", prompt_tokens=3, completion_tokens=1, cost=0.5)
    assert ChatReply.from_dict(reply.to_dict()) == reply
