"""Dense recipes: `brightpro models --json` against the authors' config files, the environment check, and the
constraints files that give a recipe's environment."""
import json, subprocess, sys
from pathlib import Path

import pytest

from brightpro.cli import main
from brightpro.core import DOMAINS, BrightproError
from brightpro.recipes import CONSTRAINTS, check_environment, recipe

# BRIGHT's twelve splits
BRIGHT_SPLITS = ['aops', 'biology', 'earth_science', 'economics', 'leetcode', 'pony', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living', 'theoremqa_questions', 'theoremqa_theorems']

# {(benchmark, config folder): [(domains, the config JSON those domains share), ...]}, copied from
# yale-nlp/Bright-Pro@5df9e9baf5a0525a2b962d73f213c9dee63c5f3e retrieval/configs/<folder>/<domain>.json and
# xlang-ai/BRIGHT@d99e8391d967d4c2b3a74732530d2309e2fc92b6 configs/<folder>/<domain>.json
AUTHORS_CONFIGS = {
    ('bright-pro', 'diver-retriever'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery:'}, 'instructions_long': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery:'}}),
    ],
    ('bright-pro', 'diver-1020'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery:'}, 'instructions_long': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery:'}}),
    ],
    ('bright-pro', 'bge-reasoner'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery:'}, 'instructions_long': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery:'}}),
    ],
    ('bright-pro', 'rtriever-4b'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery:'}, 'instructions_long': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery:'}}),
    ],
    ('bright-pro', 'inf-retriever-pro'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery:'}, 'instructions_long': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery:'}}),
    ],
    ('bright-pro', 'qwen3-embed'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery:'}, 'instructions_long': {'document': '', 'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery:'}}),
    ],
    ('bright-pro', 'gte-qwen2'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery: '}}),
    ],
    ('bright-pro', 'grit'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} post, retrieve relevant passages that help answer the post\n<|embed|>\n'}, 'instructions_long': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} post, retrieve relevant documents that help answer the post\n<|embed|>\n'}}),
    ],
    ('bright-pro', 'reasonir'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} post, retrieve relevant passages that help answer the post\n<|embed|>\n'}, 'instructions_long': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} post, retrieve relevant documents that help answer the post\n<|embed|>\n'}}),
    ],
    ('bright-pro', 'inst-xl'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': 'Represent the {task} paragraph for retrieval: ', 'query': 'Represent the {task} post for retrieving relevant paragraphs: '}, 'instructions_long': {'document': 'Represent the {task} document for retrieval: ', 'query': 'Represent the {task} post for retrieving relevant documents: '}}),
    ],
    ('bright-pro', 'embeddinggemma'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '', 'query': ''}, 'instructions_long': {'document': '', 'query': ''}}),
    ],
    ('bright-pro', 'openai'): [
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {}, 'instructions_long': {}}),
    ],
    ('bright', 'e5'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery: '}}),
        (['leetcode'],
         {'instructions': {'query': 'Instruct: Given a coding problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['pony'],
         {'instructions': {'query': 'Instruct: Given a {task} question, retrieve relevant passages that help answer the question\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} question, retrieve relevant documents that help answer the question\nQuery: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant theorems that help answer the problem\nQuery: '}}),
    ],
    ('bright', 'sf'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery: '}}),
        (['leetcode'],
         {'instructions': {'query': 'Instruct: Given a coding problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['pony'],
         {'instructions': {'query': 'Instruct: Given a {task} question, retrieve relevant passages that help answer the question\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} question, retrieve relevant documents that help answer the question\nQuery: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant theorems that help answer the problem\nQuery: '}}),
    ],
    ('bright', 'qwen'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery: '}}),
        (['leetcode'],
         {'instructions': {'query': 'Instruct: Given a coding problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['pony'],
         {'instructions': {'query': 'Instruct: Given a {task} question, retrieve relevant passages that help answer the question\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} question, retrieve relevant documents that help answer the question\nQuery: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant theorems that help answer the problem\nQuery: '}}),
    ],
    ('bright', 'qwen2'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'query': 'Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery: '}}),
        (['leetcode'],
         {'instructions': {'query': 'Instruct: Given a coding problem, retrieve relevant examples that help answer the problem\nQuery: '}}),
        (['pony'],
         {'instructions': {'query': 'Instruct: Given a {task} question, retrieve relevant passages that help answer the question\nQuery: '}, 'instructions_long': {'query': 'Instruct: Given a {task} question, retrieve relevant documents that help answer the question\nQuery: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'query': 'Instruct: Given a Math problem, retrieve relevant theorems that help answer the problem\nQuery: '}}),
    ],
    ('bright', 'grit'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a Math problem, retrieve relevant examples that help answer the problem\n<|embed|>\n'}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} post, retrieve relevant passages that help answer the post\n<|embed|>\n'}, 'instructions_long': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} post, retrieve relevant documents that help answer the post\n<|embed|>\n'}}),
        (['leetcode'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a coding problem, retrieve relevant examples that help answer the problem\n<|embed|>\n'}}),
        (['pony'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} question, retrieve relevant passages that help answer the question\n<|embed|>\n'}, 'instructions_long': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a {task} question, retrieve relevant documents that help answer the question\n<|embed|>\n'}}),
        (['theoremqa_theorems'],
         {'instructions': {'document': '<|embed|>\n', 'query': '<|user|>\nGiven a Math problem, retrieve relevant theorems that help answer the problem\n<|embed|>\n'}}),
    ],
    ('bright', 'inst-l'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'document': 'Represent the Math example for retrieval: ', 'query': 'Represent the Math problem for retrieving relevant examples: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': 'Represent the {task} paragraph for retrieval: ', 'query': 'Represent the {task} post for retrieving relevant paragraphs: '}, 'instructions_long': {'document': 'Represent the {task} document for retrieval: ', 'query': 'Represent the {task} post for retrieving relevant documents: '}}),
        (['leetcode'],
         {'instructions': {'document': 'Represent the Coding example for retrieval: ', 'query': 'Represent the Coding problem for retrieving relevant examples: '}}),
        (['pony'],
         {'instructions': {'document': 'Represent the Pony paragraph for retrieval: ', 'query': 'Represent the Pony question for retrieving relevant paragraphs: '}, 'instructions_long': {'document': 'Represent the Pony document for retrieval: ', 'query': 'Represent the Pony question for retrieving relevant documents: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'document': 'Represent the Math theorem for retrieval: ', 'query': 'Represent the Math problem for retrieving relevant theorems: '}}),
    ],
    ('bright', 'inst-xl'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'document': 'Represent the Math example for retrieval: ', 'query': 'Represent the Math problem for retrieving relevant examples: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'document': 'Represent the {task} paragraph for retrieval: ', 'query': 'Represent the {task} post for retrieving relevant paragraphs: '}, 'instructions_long': {'document': 'Represent the {task} document for retrieval: ', 'query': 'Represent the {task} post for retrieving relevant documents: '}}),
        (['leetcode'],
         {'instructions': {'document': 'Represent the Coding example for retrieval: ', 'query': 'Represent the Coding problem for retrieving relevant examples: '}}),
        (['pony'],
         {'instructions': {'document': 'Represent the Pony paragraph for retrieval: ', 'query': 'Represent the Pony question for retrieving relevant paragraphs: '}, 'instructions_long': {'document': 'Represent the Pony document for retrieval: ', 'query': 'Represent the Pony question for retrieving relevant documents: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'document': 'Represent the Math theorem for retrieval: ', 'query': 'Represent the Math problem for retrieving relevant theorems: '}}),
    ],
    ('bright', 'bge'): [
        (['aops', 'theoremqa_questions'],
         {'instructions': {'query': 'Represent this Math problem for searching relevant examples: '}}),
        (['biology', 'earth_science', 'economics', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living'],
         {'instructions': {'query': 'Represent this {task} post for searching relevant passages: '}, 'instructions_long': {'query': 'Represent this {task} post for searching relevant documents: '}}),
        (['leetcode'],
         {'instructions': {'query': 'Represent this Coding problem for searching relevant examples: '}}),
        (['pony'],
         {'instructions': {'query': 'Represent this Pony question for searching relevant passages: '}, 'instructions_long': {'query': 'Represent this Pony question for searching relevant documents: '}}),
        (['theoremqa_theorems'],
         {'instructions': {'query': 'Represent this Math problem for searching relevant theorems: '}}),
    ],
    ('bright', 'sbert'): [
        (['aops', 'biology', 'earth_science', 'economics', 'leetcode', 'pony', 'psychology', 'robotics', 'stackoverflow', 'sustainable_living', 'theoremqa_questions', 'theoremqa_theorems'],
         {'instructions': {}, 'instructions_long': {}}),
    ],
    # BRIGHT's four API embedders: configs/<folder>/<task>.json hold no instruction in any split or setting
    **{('bright', api): [(BRIGHT_SPLITS, {'instructions': {}, 'instructions_long': {}})] for api in ('openai', 'cohere', 'voyage', 'google')},
}

# The model each config folder runs, from the same harnesses' retrievers.py (Bright-Pro: the model paths of
# retrieval_*; BRIGHT: the ids retrieval_sf_qwen_e5, retrieval_sbert_bge, retrieval_instructor and retrieval_grit load).
FOLDER_MODEL = {
    ("bright-pro", "diver-retriever"): "AQ-MedAI/Diver-Retriever-4B", ("bright-pro", "diver-1020"): "AQ-MedAI/Diver-Retriever-4B-1020",
    ("bright-pro", "bge-reasoner"): "BAAI/bge-reasoner-embed-qwen3-8b-0923", ("bright-pro", "rtriever-4b"): "yale-nlp/RTriever-4B",
    ("bright-pro", "inf-retriever-pro"): "infly/inf-retriever-v1-pro", ("bright-pro", "qwen3-embed"): "Qwen/Qwen3-Embedding-8B",
    ("bright-pro", "gte-qwen2"): "Alibaba-NLP/gte-Qwen2-7B-instruct", ("bright-pro", "grit"): "GritLM/GritLM-7B",
    ("bright-pro", "reasonir"): "reasonir/ReasonIR-8B", ("bright-pro", "inst-xl"): "hkunlp/instructor-xl",
    ("bright-pro", "embeddinggemma"): "google/embeddinggemma-300m", ("bright-pro", "openai"): "text-embedding-3-large",
    ("bright", "e5"): "intfloat/e5-mistral-7b-instruct", ("bright", "sf"): "Salesforce/SFR-Embedding-Mistral",
    ("bright", "qwen"): "Alibaba-NLP/gte-Qwen1.5-7B-instruct", ("bright", "qwen2"): "Alibaba-NLP/gte-Qwen2-7B-instruct",
    ("bright", "grit"): "GritLM/GritLM-7B", ("bright", "inst-l"): "hkunlp/instructor-large", ("bright", "inst-xl"): "hkunlp/instructor-xl",
    ("bright", "bge"): "BAAI/bge-large-en-v1.5", ("bright", "sbert"): "sentence-transformers/all-mpnet-base-v2",
    # retrieval_openai, retrieval_cohere (model="embed-english-v3.0"), retrieval_voyage ("voyage-large-2-instruct"),
    # retrieval_google (TextEmbeddingModel "text-embedding-preview-0409")
    ("bright", "openai"): "text-embedding-3-large", ("bright", "cohere"): "embed-english-v3.0",
    ("bright", "voyage"): "voyage-large-2-instruct", ("bright", "google"): "text-embedding-preview-0409",
}


@pytest.fixture(scope="module")
def listed():
    "`brightpro models --json`, by (model, benchmark)."
    out = subprocess.run([sys.executable, "-m", "brightpro.cli", "models", "--json"], capture_output=True, text=True, check=True).stdout
    return {(r["model"], r["benchmark"]): r for r in json.loads(out)}


def _ours(r: dict, domain: str, setting: str):
    "(query, doc) instructions of a listed recipe for one domain and setting, filled as the harness fills {task}; None: no such setting."
    d = r["per_domain"].get(domain, r)
    q, doc = (d["query_instruction"], d["doc_instruction"]) if setting == "instructions" else (d["query_instruction_long"], d["doc_instruction_long"])
    if q is None: return None
    return q.replace("{domain}", domain), (doc or "").replace("{domain}", domain)


def test_every_recipe_equals_the_authors_configs_for_every_domain_and_setting(listed):
    checked = 0
    for (bench, folder), groups in AUTHORS_CONFIGS.items():
        r = listed[(FOLDER_MODEL[(bench, folder)], bench)]
        for domains, cfg in groups:
            for domain in domains:
                for setting in ("instructions", "instructions_long"):
                    theirs = cfg.get(setting)
                    expected = None if theirs is None else (theirs.get("query", "").format(task=domain), theirs.get("document", "").format(task=domain))
                    assert _ours(r, domain, setting) == expected, (bench, folder, domain, setting)
                    checked += 1
    assert checked == 12 * 7 * 2 + 13 * 12 * 2 == 480
    assert len(listed) == len(FOLDER_MODEL) == 25   # every listed recipe is one of the authors' configs


def test_listing_has_the_keys_tools_need(listed):
    keys = {"model", "benchmark", "query_instruction", "doc_instruction", "query_instruction_long", "doc_instruction_long",
            "max_length", "dtype", "pooling", "trust_remote_code", "encoder", "published"}
    for r in listed.values():
        assert keys <= set(r)
        assert "{task}" not in json.dumps(r)   # the harness's placeholder is always ours: {domain}
    assert listed[("AQ-MedAI/Diver-Retriever-4B", "bright-pro")]["published"][0] == {
        "metric": "alpha_ndcg@25", "scope": "overall (7 domains)", "value": 59.9, "second_hand": True,
        "source": "Bright-Pro final paper (ACL 2026), overall alpha-nDCG@25 x 100, quoted second-hand (issue 17)"}


def test_the_authors_settings_beyond_the_instructions(listed):
    bp = lambda m: listed[(m, "bright-pro")]
    assert [bp("GritLM/GritLM-7B")[k] for k in ("encoder", "query_max_length", "doc_max_length")] == ["instruction_excluded", 256, 2048]
    assert [bp("Qwen/Qwen3-Embedding-8B")[k] for k in ("dtype", "max_length", "padding_side")] == ["bfloat16", 4096, "left"]
    gte = bp("Alibaba-NLP/gte-Qwen2-7B-instruct")
    assert (gte["trust_remote_code"], gte["pooling"], gte["padding_side"], gte["max_length"], gte["dtype"]) == (True, "lasttoken", "left", 8192, "float32")
    assert bp("google/embeddinggemma-300m")["encoder"] == "query_document"
    assert bp("hkunlp/instructor-xl")["pooling_include_prompt"] is False
    # retrieval_openai: tiktoken cl100k_base, cut_text_openai(threshold=6000), batch_size 1024
    assert [bp("text-embedding-3-large")[k] for k in ("library", "max_length", "query_max_length", "batch_size")] == ["openai", 6000, 6000, 1024]
    assert bp("reasonir/ReasonIR-8B")["environment"] == {"transformers": "4.55.2", "sentence-transformers": "5.4.1"}


def test_models_table_and_json_from_the_cli(capsys):
    assert main(["models", "--benchmark", "bright-pro"]) == 0
    text = capsys.readouterr().out
    assert "AQ-MedAI/Diver-Retriever-4B " in text and "59.9 alpha_ndcg@25 (second-hand)" in text and "hkunlp/instructor-large" not in text
    assert main(["models", "--benchmark", "bright", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 13   # nine local models and four API embedders


def test_a_run_outside_the_environment_is_refused_with_one_line():
    r = recipe("GritLM/GritLM-7B")
    with pytest.raises(BrightproError) as e:
        check_environment(r, installed={"transformers": "5.24.0", "sentence-transformers": "6.2.0", "gritlm": None})
    msg = str(e.value)
    assert "\n" not in msg and "pip install transformers==4.55.2 sentence-transformers==5.4.1 gritlm==1.0.2" in msg
    assert "gritlm not installed" in msg and "outside_environment=true" in msg
    assert check_environment(r, allow_outside=True, installed={"transformers": "5.24.0"})["transformers"] == "5.24.0"


def test_constraints_files_pin_each_recipe_environment():
    root = Path(__file__).parents[1]
    for bench, path in CONSTRAINTS.items():
        pins = {l.split("==")[0]: l.split("==")[1] for l in (root/path).read_text().splitlines() if "==" in l and not l.startswith("#")}
        for r in (x for x in json.loads(subprocess.run([sys.executable, "-m", "brightpro.cli", "models", "--benchmark", bench, "--json"],
                                                        capture_output=True, text=True, check=True).stdout)):
            assert all(pins.get(p) == v for p, v in r["environment"].items()), (r["model"], r["environment"], pins)


@pytest.mark.slow
@pytest.mark.parametrize("bench", ["bright-pro", "bright"])
def test_constraints_files_resolve(bench, tmp_path):
    "Each environment installs with one pip command: pip resolves it (a dry run, from the package index)."
    path = Path(__file__).parents[1]/CONSTRAINTS[bench]
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-cache-dir", "-q",
                        "--report", str(tmp_path/"r.json"), "-r", str(path)], capture_output=True, text=True, timeout=900)
    if r.returncode and ("Could not fetch" in r.stderr or "NewConnectionError" in r.stderr): pytest.skip("no package index here")
    assert r.returncode == 0, r.stderr[-2000:]
    got = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads((tmp_path/"r.json").read_text())["install"]}
    pins = {l.split("==")[0]: l.split("==")[1] for l in path.read_text().splitlines() if "==" in l and not l.startswith("#")}
    assert all(got[p] == v for p, v in pins.items()), got


# Read by hand from embeddings-benchmark/results at commit 31b72345842423a9297f680f65444b97f7fceca9:
# results/AQ-MedAI__Diver-Retriever-4B-1020/3984377d297f4c3bcf5d625ea7b48feea7f58c57/BrightProEconomicsRetrieval.json,
# scores.standard[0].ndcg_at_10 (= main_score), mteb_version 2.18.6
DIVER_1020_ECONOMICS = 0.5251


def test_mteb_per_domain_numbers_in_the_recipes():
    "Six recipes carry MTEB's nDCG@10 for all seven domains, each naming its results file; one checked against the file read by hand."
    from brightpro.recipes import BRIGHT_PRO_RECIPES, MTEB_NOTE
    per = {r.model: {p["domain"]: p for p in r.published if p.get("domain")} for r in BRIGHT_PRO_RECIPES}
    per = {m: ps for m, ps in per.items() if ps}
    assert len(per) == 6 and all(sorted(ps) == sorted(DOMAINS) for ps in per.values())
    for model, ps in per.items():
        for d, p in ps.items():
            camel = "".join(w.capitalize() for w in d.split("_"))
            assert p["metric"] == "ndcg@10" and 0 < p["value"] < 100 and not p["second_hand"]
            assert MTEB_NOTE in p["source"] and p["source"].endswith(f"/BrightPro{camel}Retrieval.json")
            assert model.split("/")[1].lower() in p["source"].lower()
    e = per["AQ-MedAI/Diver-Retriever-4B-1020"]["economics"]
    assert e["value"] == round(100 * DIVER_1020_ECONOMICS, 3) and "31b7234584" in e["source"]
