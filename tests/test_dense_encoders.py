"""Each dense encoding path on tiny models built here (random weights, a word-level tokenizer): what reaches the model
(input ids, attention and pooling masks, precision, window), never scores. No model is downloaded."""
import sys, textwrap

import numpy as np
import pytest
import torch

from brightpro.dense import Dense, _models
from brightpro.recipes import Recipe
import brightpro.recipes as recipes

WORDS = ["[PAD]", "[UNK]", "instruct", "query", "doc", "a", "volcano", "erupts", "glacier", "melts", "long"] + [f"w{i}" for i in range(40)]


def _tokenizer(path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", model_max_length=64).save_pretrained(path)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    "A sentence-transformers folder around a 2-layer Qwen3 (last-token pooling) and one around a 2-layer BERT (mean pooling)."
    from transformers import BertConfig, BertModel, Qwen3Config, Qwen3Model
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    out = {}
    for name, model, pooling in [("qwen3", Qwen3Model(Qwen3Config(vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                                               num_attention_heads=2, num_key_value_heads=1, head_dim=16, pad_token_id=0)), "lasttoken"),
                                 ("bert", BertModel(BertConfig(vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                                               num_attention_heads=2, max_position_embeddings=64)), "mean")]:
        hf = tmp_path_factory.mktemp(name + "-hf"); model.save_pretrained(hf); _tokenizer(hf)
        t = Transformer(str(hf)); st = tmp_path_factory.mktemp(name)
        SentenceTransformer(modules=[t, Pooling(t.get_embedding_dimension(), pooling)]).save(str(st))
        out[name] = str(st)
    return out


def _with(monkeypatch, path, **kw):
    "A recipe for the tiny model at `path` (the table patched for this test)."
    r = Recipe(path, "bright-pro", **kw)
    monkeypatch.setattr(recipes, "RECIPES", [r])
    _models.clear()
    return r


def _record(st):
    "Capture what reaches the transformer (ids, attention mask, dtype) and the pooling module (its features)."
    seen = {"model": [], "pool": []}
    inner = st[0].model if hasattr(st[0], "model") else st[0].auto_model
    st[0].register_forward_pre_hook(lambda m, a: seen["model"].append({k: v.clone() for k, v in a[0].items() if torch.is_tensor(v)}))
    st[1].register_forward_pre_hook(lambda m, a: seen["pool"].append({k: v.clone() if torch.is_tensor(v) else v for k, v in a[0].items()}))
    seen["dtype"] = next(inner.parameters()).dtype
    return seen


def test_prompt_left_padding_last_token_precision_and_window(tiny, monkeypatch):
    _with(monkeypatch, tiny["qwen3"], query_instruction="instruct {domain} query ", dtype="bfloat16", padding_side="left",
          pooling="lasttoken", query_max_length=6, doc_max_length=8, batch_size=2, environment={})
    r = Dense(tiny["qwen3"], recipe=tiny["qwen3"], domain="volcano")
    seen = _record(r.model)
    assert seen["dtype"] == torch.bfloat16                                   # precision
    r.encode(["a volcano erupts", "glacier"], r.query_instruction, role="query")
    ids, mask = seen["model"][-1]["input_ids"], seen["model"][-1]["attention_mask"]
    v = {w: i for i, w in enumerate(WORDS)}
    assert ids[0].tolist() == [v["instruct"], v["volcano"], v["query"], v["a"], v["volcano"], v["erupts"]]   # the prompt, then the query
    assert ids[1].tolist()[:2] == [0, 0] and mask[1].tolist() == [0, 0, 1, 1, 1, 1]                        # left padding
    assert mask[:, -1].tolist() == [1, 1]                                   # the last position, which last-token pooling takes, is real
    r.encode([" ".join(["long"] * 30)], "")
    assert seen["model"][-1]["input_ids"].shape[1] == 8                      # the document window cuts at 8 tokens
    r.encode([" ".join(["long"] * 30)], r.query_instruction, role="query")
    assert seen["model"][-1]["input_ids"].shape[1] == 6                      # the query window at 6, the instruction kept
    assert seen["model"][-1]["input_ids"][0, 0].item() == v["instruct"]


def test_recipe_pooling_is_checked_against_the_checkpoint(tiny, monkeypatch):
    from brightpro.core import BrightproError
    _with(monkeypatch, tiny["bert"], pooling="lasttoken", environment={})
    with pytest.raises(BrightproError, match="pools by mean, but its recipe pools by lasttoken"):
        Dense(tiny["bert"], recipe=tiny["bert"]).model


def test_instruction_left_out_of_pooling(tiny, monkeypatch):
    _with(monkeypatch, tiny["bert"], query_instruction="instruct {domain} query", pooling="mean", pooling_include_prompt=False, environment={})
    r = Dense(tiny["bert"], recipe=tiny["bert"], domain="doc")
    seen = _record(r.model)
    r.encode(["a volcano erupts"], r.query_instruction, role="query")
    ids = seen["model"][-1]["input_ids"][0].tolist()
    assert WORDS.index("instruct") in ids and WORDS.index("erupts") in ids   # the model sees the instruction...
    feats = seen["pool"][-1]
    n_prompt = feats.get("prompt_length")
    assert n_prompt is not None and int(n_prompt) >= 3                      # ...and pooling is told to leave its tokens out
    assert r.model[1].include_prompt is False
    _with(monkeypatch, tiny["bert"], query_instruction="instruct {domain} query", pooling="mean", environment={})
    a = Dense(tiny["bert"], recipe=tiny["bert"], domain="doc").encode(["a volcano erupts"], "instruct doc query", role="query")
    _with(monkeypatch, tiny["bert"], query_instruction="instruct {domain} query", pooling="mean", pooling_include_prompt=False, environment={})
    b = Dense(tiny["bert"], recipe=tiny["bert"], domain="doc").encode(["a volcano erupts"], "instruct doc query", role="query")
    assert not np.allclose(a, b)                                             # pooled over different tokens


def test_encode_query_and_encode_document(tiny, monkeypatch):
    _with(monkeypatch, tiny["bert"], encoder="query_document", environment={})
    r = Dense(tiny["bert"], recipe=tiny["bert"])
    calls = []
    st = r.model
    monkeypatch.setattr(st, "encode_query", lambda texts, **kw: calls.append(("query", texts)) or np.ones((len(texts), 32)))
    monkeypatch.setattr(st, "encode_document", lambda texts, **kw: calls.append(("document", texts)) or np.ones((len(texts), 32)))
    r.encode(["a volcano"], r.query_instruction, role="query"); r.encode(["glacier melts"], r.doc_instruction)
    assert calls == [("query", ["a volcano"]), ("document", ["glacier melts"])]   # the model's own prompts, no prefix of ours


def test_own_encode_gets_the_instruction_apart_and_its_window(tmp_path, monkeypatch):
    "The instruction_excluded encoder: a tiny custom-code model (trust_remote_code) whose encode records its arguments."
    code = tmp_path/"tinyenc"; code.mkdir()
    (code/"modeling_tiny.py").write_text(textwrap.dedent('''
        import torch
        from transformers import PretrainedConfig, PreTrainedModel
        class TinyConfig(PretrainedConfig):
            model_type = "tiny-own-encode"
        class TinyModel(PreTrainedModel):
            config_class = TinyConfig
            def __init__(self, config):
                super().__init__(config); self.w = torch.nn.Linear(4, 4); self.calls = []; self.post_init()
            def encode(self, sentences, instruction="", batch_size=1, max_length=512):
                self.calls.append({"sentences": list(sentences), "instruction": instruction, "max_length": max_length,
                                   "batch_size": batch_size, "dtype": self.w.weight.dtype})
                return torch.ones(len(sentences), 4).numpy()
    '''))
    sys.path.insert(0, str(code))
    import modeling_tiny
    modeling_tiny.TinyConfig.register_for_auto_class()
    modeling_tiny.TinyModel.register_for_auto_class("AutoModel")
    folder = tmp_path/"model"; modeling_tiny.TinyModel(modeling_tiny.TinyConfig()).save_pretrained(folder)
    sys.path.remove(str(code))
    _with(monkeypatch, str(folder), query_instruction="<|user|>\nGiven a {domain} post\n<|embed|>\n", doc_instruction="<|embed|>\n",
          encoder="instruction_excluded", library="transformers", dtype="bfloat16", query_max_length=5, doc_max_length=9,
          trust_remote_code=True, batch_size=1, environment={})
    r = Dense(str(folder), recipe=str(folder), domain="biology")   # a local folder names its recipe
    r.encode(["a volcano"], r.query_instruction, role="query"); r.encode(["a glacier"], r.doc_instruction)
    q, d = r.model.calls
    assert q == {"sentences": ["a volcano"], "instruction": "<|user|>\nGiven a biology post\n<|embed|>\n", "max_length": 5, "batch_size": 1, "dtype": torch.bfloat16}
    assert (d["sentences"], d["instruction"], d["max_length"]) == (["a glacier"], "<|embed|>\n", 9)   # the text apart from its instruction


def test_packaged_minilm_still_runs_end_to_end(tmp_path):
    r = Dense(cache_dir=tmp_path); r.index(["a", "b"], ["volcanoes erupt", "glaciers melt"])
    assert r.recipe is None and r.search({"q": "why do volcanoes erupt"}, 1)["q"] == ["a"]
    assert "recipe" not in r.metadata()


def test_recipe_run_metadata_records_recipe_options_and_libraries(tiny, monkeypatch):
    _with(monkeypatch, tiny["bert"], environment={"transformers": "0.0.1"})
    from brightpro.core import BrightproError
    with pytest.raises(BrightproError, match="outside_environment=true"):
        Dense(tiny["bert"], recipe=tiny["bert"]).model
    r = Dense(tiny["bert"], recipe=tiny["bert"], outside_environment=True, batch_size=3)
    r.index(["a"], ["volcano"])
    m = r.metadata()
    assert m["recipe"]["model"] == tiny["bert"] and m["outside_environment"] is True
    assert m["options"] == {"batch_size": 3, "recipe": tiny["bert"], "outside_environment": True} and "transformers" in m["libraries"]


@pytest.fixture(scope="module")
def gritlm_package(tmp_path_factory):
    "The authors' `gritlm` 1.0.2 (its code only: its other requirements are torch and transformers, already here)."
    import subprocess
    target = tmp_path_factory.mktemp("gritlm-package")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), "gritlm==1.0.2"],
                          capture_output=True, text=True, timeout=300)
    if done.returncode: pytest.skip(f"gritlm 1.0.2 cannot be installed here: {done.stderr.strip().splitlines()[-1:]}")
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target)); [sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] == "gritlm"]


def test_gritlm_package_leaves_the_instruction_out_of_pooling(gritlm_package, tmp_path, monkeypatch):
    "GritLM's recipe through the `gritlm` package: instruction apart, mean pooling over the text only, 256/2048 windows."
    from transformers import MistralConfig, MistralModel
    import gritlm
    folder = tmp_path/"tiny-grit"
    MistralModel(MistralConfig(vocab_size=len(WORDS), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                               num_key_value_heads=1, head_dim=16, pad_token_id=0)).save_pretrained(folder)
    _tokenizer(folder)
    grit = recipes.recipe("GritLM/GritLM-7B", "bright-pro")
    import dataclasses
    monkeypatch.setattr(recipes, "RECIPES", [dataclasses.replace(grit, model=str(folder))]); _models.clear()
    r = Dense(str(folder), recipe=str(folder), domain="biology", outside_environment=True)
    assert isinstance(r.model, gritlm.GritLM) and r.model.embedding_attr is None   # embedding mode
    seen = []
    r.model.model.register_forward_pre_hook(lambda m, a, kw: seen.append({k: v.clone() for k, v in kw.items() if torch.is_tensor(v)}),
                                            with_kwargs=True)
    long_query = " ".join(["volcano"] * 300)
    q = r.encode(["a volcano erupts", long_query], r.query_instruction, role="query")
    d = r.encode([long_query], r.doc_instruction)
    instr = r.model.tokenizer(r.query_instruction)["input_ids"]
    assert len(seen) == 3 and all(x["input_ids"].shape[0] == 1 for x in seen)   # batch 1 (the recipe's), queries longest first
    short, = [x for x in seen[:2] if x["input_ids"].shape[1] < 256]
    ids = short["input_ids"]
    assert ids[0, :len(instr)].tolist() == instr                     # the instruction reached the model as text...
    assert max(x["input_ids"].shape[1] for x in seen[:2]) == 256     # a query is cut at 256 tokens,
    assert seen[2]["input_ids"].shape[1] == len(r.model.tokenizer(r.doc_instruction)["input_ids"]) + 300   # a document is not
    # ...and the embedding is the mean of the text's hidden states only, as a bare transformers forward gives it
    mask = short["attention_mask"][0].bool()
    with torch.no_grad(): hidden = MistralModel.from_pretrained(folder)(input_ids=ids, attention_mask=short["attention_mask"],
                                                                       is_causal=False).last_hidden_state[0]
    text = mask.clone(); text[:len(instr)] = False
    want = hidden[text].mean(0); want = (want / want.norm()).numpy()
    assert np.allclose(q[0], want, atol=1e-5) and not np.allclose(q[0], (hidden[mask].mean(0) / hidden[mask].mean(0).norm()).numpy(), atol=1e-3)
    assert d.shape == (1, 32) and np.isfinite(d).all()
