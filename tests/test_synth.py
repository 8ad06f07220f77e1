"""The synthetic generator against the published sizes (the Bright-Pro dataset card), through the command line."""
import gzip, json, subprocess
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from brightpro import synth
from brightpro.core import BrightproError
from brightpro.data import load_domain, validate_dataset
from brightpro.synth import synth_dataset, synth_domain

# The dataset card: documents and queries per domain, 2,763 aspects and 5,272 gold docs over 739 queries.
PUBLISHED = {"biology": (59_513, 103), "robotics": (63_920, 101)}
# The real BRIGHT query texts, beside the repository; synth generates query texts when the folder is absent.
TOPICS = Path(__file__).resolve().parents[1].parent/"shared"/"data"/"bright-topics"


def test_full_scale_biology_has_the_published_sizes(tmp_path, cli):
    r = cli("data", "synth", "--domain", "biology", "--scale", "1.0", "--seed", "3", "--out", tmp_path, "--topics", TOPICS)
    assert r.returncode == 0, r.stderr
    docs = pq.read_table(tmp_path/"documents"/"biology.parquet")
    examples = pq.read_table(tmp_path/"examples"/"biology.parquet")
    aspects = pq.read_table(tmp_path/"aspects"/"biology.parquet")
    assert docs.num_rows == PUBLISHED["biology"][0] and examples.num_rows == PUBLISHED["biology"][1]
    assert 430 <= pc.mean(pc.utf8_length(docs["content"])).as_py() <= 600
    assert abs(aspects.num_rows / examples.num_rows - 2763 / 739) < 0.6
    gold = examples.column("gold_ids").to_pylist()
    assert abs(sum(map(len, gold)) / len(gold) - 5272 / 739) < 1.0
    assert not [p for p in validate_dataset(str(tmp_path), "biology") if p.level == "error"]


def test_same_seed_same_bytes_other_seed_other_text(tmp_path, cli):
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        assert cli("data", "synth", "--domain", "economics", "--scale", "0.02", "--seed", seed, "--out", tmp_path/name,
                   "--topics", TOPICS).returncode == 0
    read = lambda n: pq.read_table(tmp_path/n/"documents"/"economics.parquet")
    assert read("a").equals(read("b")) and not read("a").equals(read("c"))


def test_real_query_texts_are_used(tmp_path, cli, bright_topics):
    assert cli("data", "synth", "--domain", "robotics", "--scale", "0.01", "--out", tmp_path, "--topics", bright_topics).returncode == 0
    with gzip.open(bright_topics/"topics.bright-robotics-original.jsonl.gz", "rt") as f:
        real = [json.loads(l) for l in f][:PUBLISHED["robotics"][1]]
    d = load_domain("robotics", dataset=str(tmp_path))
    assert d.qids == [r["id"] for r in real][:len(d.qids)]
    assert [d.query_text[q] for q in d.qids] == [r["query"] for r in real][:len(d.qids)]


def test_default_query_texts_are_generated_wherever_it_runs(tmp_path, monkeypatch, bright_topics):
    "topics_dir=None means generated texts, even run from the repository root, where ../shared/data/bright-topics exists."
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    synth_domain("robotics", tmp_path/"a", scale=0.01)
    with gzip.open(bright_topics/"topics.bright-robotics-original.jsonl.gz", "rt") as f:
        real = {json.loads(l)["query"] for l in f}
    d = load_domain("robotics", dataset=str(tmp_path/"a"))
    assert d.qids == [str(i) for i in range(len(d.qids))] and not set(d.query_text.values()) & real


def test_synth_dataset_summarises_each_domain(tmp_path):
    summary = synth_dataset("robotics,biology", tmp_path, scale=0.01)
    lines = [json.loads(line) for line in summary.to_text().splitlines()]
    assert [x["domain"] for x in lines] == ["biology", "robotics"] and json.loads(summary.to_json()) == lines
    for x in lines:
        assert pq.ParquetFile(tmp_path/"documents"/f"{x['domain']}.parquet").metadata.num_rows == x["documents"]


# ---------------------------------------------------------------- issue 8: --out checked before any compute
@pytest.fixture
def tmpfs(tmp_path):
    "mount(name, options): a tiny tmpfs under tmp_path (needs root), unmounted after the test; skips where mount is refused."
    mounted = []
    def mount(name, options):
        d = tmp_path/name
        d.mkdir()
        try: r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], capture_output=True, text=True)
        except FileNotFoundError: pytest.skip("no mount command here")
        if r.returncode: pytest.skip(f"mounting a tmpfs is not permitted here ({r.stderr.strip() or r.returncode})")
        mounted.append(d)
        return d
    yield mount
    for d in reversed(mounted): subprocess.run(["umount", str(d)], check=False)


def test_synth_out_is_checked_before_any_compute(tmp_path, cli, monkeypatch):
    (tmp_path/"afile").write_text("x")
    for out, message in ((tmp_path/"afile", f"{tmp_path}/afile: exists and is not a folder"),
                         (tmp_path/"afile"/"sub", f"{tmp_path}/afile/sub: cannot write this folder: {tmp_path}/afile is a file")):
        r = cli("data", "synth", "--domain", "earth_science", "--scale", "1.0", "--out", out)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        assert r.returncode == 2 and r.stdout == "" and len(lines) == 1 and lines[0].startswith(f"brightpro: error: {message}"), r.stderr
    monkeypatch.setattr(synth, "_word_model", lambda rng: pytest.fail("computed before checking --out"))
    with pytest.raises(BrightproError, match="exists and is not a folder"): synth_dataset("earth_science", tmp_path/"afile")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_synth_into_a_read_only_or_full_place_is_one_line(tmp_path, cli, tmpfs):
    ro = tmpfs("ro", "ro,size=64k")
    r = cli("data", "synth", "--domain", "earth_science", "--scale", "1.0", "--out", ro/"out")
    assert r.returncode == 2 and r.stderr.strip() == (f"brightpro: error: {ro}/out: cannot write this folder: {ro} is not writable "
                                                      "(Read-only file system)"), r.stderr
    full = tmpfs("full", "size=256k")
    r = cli("data", "synth", "--domain", "earth_science", "--scale", "0.05", "--out", full)
    assert r.returncode == 2 and r.stderr.strip() == (f"brightpro: error: {full}: cannot write the earth_science tables "
                                                      "(No space left on device)"), r.stderr
    left = sorted(p.relative_to(full).as_posix() for p in full.rglob("*") if p.is_file())
    assert "documents/earth_science.parquet" not in left and not [p for p in left if p.endswith(".tmp")], left
    for p in left: pq.read_table(full/p)   # what was written is whole
