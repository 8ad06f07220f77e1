"""Second-stage reranking: a cross-encoder built here (tiny random BERT, 1 label; what reaches the model, checked against
the tokenizer and a bare transformers loop), the listwise LLM path against the scripted local server (bad, repeated and
missing ids; sliding windows checked prompt by prompt; the cache making a repeat send nothing), a run killed and
resumed, bad input in one line, and the sample's bm25-bright run reranked by a gold-first and a reversing model."""
import json, os, re, signal, subprocess, sys, time

import numpy as np
import pytest
import torch

from brightpro.core import BrightproError
from brightpro.data import load_domain, load_domains
from brightpro.llm import LLMClient
from brightpro.rerank import (CrossEncoderReranker, LLMReranker, RerankingRetriever, get_reranker, mmr_order, passage_text,
                              rerank, term_similarity)
from brightpro.runs import read_run
from brightpro.scripted_llm import text_reply
from brightpro.compare import evaluate_and_compare

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "why", "volcano", "erupts", "glacier", "melts", "rock", "lava", "ice"] + [f"w{i}" for i in range(20)]


@pytest.fixture(scope="module")
def tiny_ce(tmp_path_factory):
    "A randomly initialised 1-label BERT with a word-level tokenizer, saved as a Hugging Face folder."
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast
    path = tmp_path_factory.mktemp("tiny-ce")
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                            model_max_length=64).save_pretrained(path)
    torch.manual_seed(0)
    BertForSequenceClassification(BertConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, max_position_embeddings=64, num_labels=1)).save_pretrained(path)
    return path


def test_cross_encoder_gets_query_document_pairs_cut_to_the_window_and_orders_by_score(tiny_ce):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    ce = CrossEncoderReranker(str(tiny_ce), max_length=7, batch_size=2)
    seen = []
    # what the transformer module receives (sentence-transformers tokenized the pairs)
    ce.model[0].register_forward_pre_hook(lambda mod, args: seen.extend(args[0]["input_ids"].tolist()))
    query, docs = "why volcano", ["volcano erupts lava lava lava", "glacier melts", "rock ice", "lava"]
    order, scores, _ = ce.rerank(query, docs)
    tok = AutoTokenizer.from_pretrained(tiny_ce)
    expected = tok([query] * 4, docs, truncation=True, max_length=7)["input_ids"]   # the pair, the document's side cut
    test_rows = [[t for t in row if t != 0] for row in seen]
    assert test_rows == expected and max(map(len, expected)) == 7
    assert tok.decode(expected[0]) == "[CLS] why volcano [SEP] volcano erupts [SEP]"
    # the scores: a bare transformers loop over the same pairs (sigmoid of the one logit, as CrossEncoder does for 1 label)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_ce).eval()
    with torch.no_grad():
        logits = model(**tok([query] * 4, docs, truncation=True, max_length=7, padding=True, return_tensors="pt")).logits[:, 0]
    np.testing.assert_allclose(scores, torch.sigmoid(logits).numpy(), rtol=1e-5)
    assert order == sorted(range(4), key=lambda i: -float(logits[i]))


def test_cross_encoder_reranks_the_top_n_and_keeps_the_rest(tiny_ce, tmp_path):
    domains = load_domains("biology", "sample")
    res = rerank(domains, "bm25-bright", f"cross-encoder:{tiny_ce}", depth=5, out=tmp_path, top=30)
    first, second = read_run(tmp_path/"bm25-bright"/"biology.score.json"), read_run(res.folder/"biology.trec")
    d = domains["biology"]
    text = dict(zip(d.doc_ids, d.documents.column("content").to_pylist()))
    ce = CrossEncoderReranker(str(tiny_ce))
    for q in first:
        top = first[q][:5]
        s = ce.model.predict([(d.query_text[q], text[x]) for x in top])
        assert second[q][:5] == [top[i] for i in np.argsort(-s, kind="stable")]
        assert second[q][5:] == first[q][5:]
    meta = json.loads((res.folder/"biology.meta.json").read_text())
    assert meta["reranker"]["batch_size"] == 8 and meta["fingerprint"]["depth"] == 5


# --- the LLM ------------------------------------------------------------------------------------------------------------

def passages(request) -> list[str]:
    return re.findall(r"^\[\d+\]\. (.*)$", request["messages"][1]["content"], re.M)


def noisy_reverse(request):
    "The passages reversed, the last one left out, the first repeated, and two ids that name none."
    n = len(passages(request))
    ids = list(range(n, 1, -1)) + [n, 0, n + 5]
    return text_reply("thinking\n```json\n" + json.dumps(ids) + "\n```")


def test_llm_windows_prompts_and_id_fixes(server):
    srv = server(noisy_reverse)
    with LLMClient(srv.base_url, "m", max_retries=0) as c:
        order, _, counts = LLMReranker(c, window=4, step=2).rerank("q?", list("abcdefgh"))
    # windows (4, 8), (2, 6), (0, 4), each reversed (its first passage is missing from the ids, so it goes last)
    assert [passages(r) for r in srv.requests] == [list("efgh"), list("cdhg"), list("abgh")]
    assert "".join("abcdefgh"[i] for i in order) == "hgbadcfe"
    assert (counts["prompts"], counts["unknown"], counts["duplicates"], counts["missing"]) == (3, 6, 3, 3)
    assert srv.requests[0]["messages"][0] == {"role": "system", "content": "You are a helpful assistant"}
    assert srv.requests[0]["messages"][1]["content"].startswith("The following passages are related to query: q?\n\n[1]. e\n\n")


def test_llm_unreadable_reply_keeps_first_stage_order(server):
    srv = server([text_reply("I cannot rank these.")])
    with LLMClient(srv.base_url, "m", max_retries=0) as c:
        order, _, counts = LLMReranker(c).rerank("q", ["x", "y", "z"])
    assert order == [0, 1, 2] and counts["unparsed"] == 1


def _sample_rerank(srv, tmp_path, model, cache, **kw):
    domains = load_domains("biology,economics", "sample")
    with LLMClient(srv.base_url, model, max_retries=0, cache=cache) as c:
        return rerank(domains, "bm25-bright", f"llm:{model}", client=c, depth=10, out=tmp_path, options=dict(window=6, step=3), **kw)


def test_cache_makes_a_repeat_send_nothing_and_meta_counts(server, tmp_path):
    srv = server(noisy_reverse)
    first = _sample_rerank(srv, tmp_path/"a", "m", tmp_path/"c.sqlite")
    sent = srv.count
    assert sent == 2 * 6 * 3   # 2 domains x 6 queries x windows (4, 10), (1, 7), (0, 6)
    again = _sample_rerank(srv, tmp_path/"b", "m", tmp_path/"c.sqlite")
    assert srv.count == sent and again[0]["counts"]["cached"] == 18
    for d in ("biology", "economics"):
        assert (tmp_path/"a"/first.folder.name/f"{d}.trec").read_text() == (tmp_path/"b"/again.folder.name/f"{d}.trec").read_text()
    meta = json.loads((first.folder/"biology.meta.json").read_text())
    assert meta["counts"]["duplicates"] == 18 and meta["counts"]["unknown"] == 36 and meta["counts"]["missing"] == 18
    assert _sample_rerank(srv, tmp_path/"a", "m", None)[0]["status"] == "up to date" and srv.count == sent


DRIVER = '''
import sys
from brightpro.data import load_domains
from brightpro.llm import LLMClient
from brightpro.rerank import rerank
base_url, out, cache = sys.argv[1:4]
with LLMClient(base_url, "m", cache=cache, max_retries=0) as c:
    r = rerank(load_domains("biology,economics", "sample"), "bm25-bright", "llm:m", client=c, depth=10, out=out, options=dict(window=6, step=3))
print(r.to_text())
'''


def test_killed_rerank_resumes_to_the_same_run(server, tmp_path):
    srv = server(noisy_reverse, delay=0.05)
    (tmp_path/"rerank_driver.py").write_text(DRIVER)
    env = {**os.environ, "BRIGHTPRO_PROGRESS": "0"}
    args = lambda name: [sys.executable, "-m", "rerank_driver", srv.base_url, str(tmp_path/name), str(tmp_path/f"{name}.sqlite")]
    proc = subprocess.Popen(args("killed"), cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    meta, deadline = tmp_path/"killed"/"bm25-bright+llm-m"/"biology.meta.json", time.time() + 120
    while time.time() < deadline and proc.poll() is None and not meta.exists(): time.sleep(0.005)
    proc.send_signal(signal.SIGKILL); proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    assert not (tmp_path/"killed"/"bm25-bright+llm-m"/"economics.meta.json").exists()
    resumed = subprocess.run(args("killed"), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "biology: up to date" in resumed.stdout and "economics: written" in resumed.stdout
    subprocess.run(args("whole"), cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)
    for d in ("biology", "economics"):
        for ext in ("trec", "score.json"):
            assert (tmp_path/"killed"/"bm25-bright+llm-m"/f"{d}.{ext}").read_bytes() == (tmp_path/"whole"/"bm25-bright+llm-m"/f"{d}.{ext}").read_bytes()


# --- bad input ----------------------------------------------------------------------------------------------------------

def test_bad_input_is_one_line(tmp_path, cli):
    domains = load_domains("biology", "sample")
    q0 = domains["biology"].qids[0]
    (tmp_path/"run.trec").write_text(f"{q0} Q0 not-a-doc 1 3.0 x\n")
    with pytest.raises(BrightproError, match="ranks document not-a-doc, which is not in the corpus"):
        rerank(domains, tmp_path/"run.trec", get_reranker("llm:m", LLMClient("http://127.0.0.1:9/v1", "m")), out=tmp_path)
    for args, message in [(["--reranker", "monot5:x"], "unknown reranker 'monot5:x'"),
                          (["--reranker", "llm:m", "--run", "no/such/run"], "not a retriever name"),
                          (["--reranker", "llm:m", "--window", "4", "--step", "5"], "step (5) must not exceed window (4)"),
                          (["--reranker", "llm:m", "--diversity", "mmr", "--lambda", "2"], "lambda must be a number between 0 and 1")]:
        full = ["rerank", "--run", "bm25-bright", "--domain", "biology", "--out", str(tmp_path), "--llm-base-url", "http://127.0.0.1:9/v1"]
        r = cli(*full, *args)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], r.stderr


# --- MMR and the agent's search tool ------------------------------------------------------------------------------------

def test_mmr_matches_a_brute_force_reading_of_the_definition():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n, lam = 6, float(rng.uniform(0, 1))
        rel = np.sort(rng.uniform(size=n))[::-1]; x = rng.uniform(size=(n, 3)); sim = x @ x.T
        r = (rel - rel.min()) / (rel.max() - rel.min())
        picked = []
        while len(picked) < n:   # the definition, written out again
            gains = {i: lam * r[i] - (1 - lam) * max([sim[i, j] for j in picked], default=0) for i in range(n) if i not in picked}
            picked.append(max(gains, key=lambda i: (gains[i], -i)))
        assert mmr_order(rel, sim, lam) == picked
    s = term_similarity(["a b b", "b c"])
    assert s[0, 1] == pytest.approx(2 / (np.sqrt(5) * np.sqrt(2)))


def test_a_reranker_is_the_agents_search_tool(server):
    from brightpro.agent import SearchTool
    srv = server(noisy_reverse)
    biology = load_domain("biology")
    with LLMClient(srv.base_url, "m", max_retries=0) as c:
        tool = SearchTool(RerankingRetriever("bm25-bright", LLMReranker(c, window=5, step=5), depth=5), biology, k=3, tokenizer="approx")
        plain = SearchTool("bm25-bright", biology, k=5, tokenizer="approx")
        q = biology.query_text[biology.qids[0]]
        top = [h["docid"] for h in plain.search(q)]
        got = [h["docid"] for h in tool.search(q)]
    assert got == [top[4], top[3], top[2]] and srv.count == 1   # reversed but the first, which is missing and goes last


# --- the sample: what a reranker buys on alpha-nDCG ---------------------------------------------------------------------

def test_sample_gold_first_beats_bm25_and_reverse_loses(server, tmp_path):
    domains = load_domains("all", "sample")
    asked = {d.query_text[q].replace("\n", "  "): (d, q) for d in domains.values() for q in d.qids}
    def gold_first(request):
        prompt = request["messages"][1]["content"]
        d, q = asked[prompt.split("\n\n")[0].removeprefix("The following passages are related to query: ")]
        text = dict(zip(d.doc_ids, d.documents.column("content").to_pylist()))
        gold = {passage_text(text[g]) for g in d.gold[q] if g in text}
        ps = passages(request)
        good = [i + 1 for i, p in enumerate(ps) if p in gold]
        return text_reply(json.dumps(good + [i + 1 for i in range(len(ps)) if i + 1 not in good]))
    folders = {}
    for model, responder in (("gold", gold_first), ("rev", noisy_reverse)):
        srv = server(responder)
        with LLMClient(srv.base_url, model, max_retries=0) as c:
            folders[model] = rerank(domains, "bm25-bright", f"llm:{model}", client=c, depth=20, out=tmp_path, options=dict(window=20, step=10)).folder
    # the gold-first run, read back, is each query's gold documents of the top 20 in first-stage order, then the rest
    first, gold_run = read_run(tmp_path/"bm25-bright"/"biology.score.json"), read_run(folders["gold"]/"biology.trec")
    g = domains["biology"].gold
    for q in first:
        top = first[q][:20]
        assert gold_run[q] == [x for x in top if x in g[q]] + [x for x in top if x not in g[q]] + first[q][20:]
    report = evaluate_and_compare([tmp_path/"bm25-bright", folders["gold"], folders["rev"]], "sample", k=[25])
    t = report.comparison.table.set_index(["system", "metric"])
    up, down = t.loc[(folders["gold"].name, "alpha_ndcg@25")], t.loc[(folders["rev"].name, "alpha_ndcg@25")]
    assert up["delta"] > 0.1 and up["p_holm"] < 0.05 and up["significant"]
    assert down["delta"] < 0 and down["significant"]
