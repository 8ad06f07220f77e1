"Worker processes share the cores: torch in a stage worker of `jobs` runs its share of threads, unless the user chose."
import os, subprocess, sys

import pytest

torch = pytest.importorskip("torch", reason="the dense extra (torch) is not installed")

CHILD = """
import os, sys
from brightpro.report import stage_workers
def threads():
    import torch   # loaded after the worker started, as a dense retrieval loads it
    return torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
if __name__ == "__main__":
    with stage_workers(int(sys.argv[1])) as pool: print(*pool.submit(threads).result())
"""


def run_child(jobs: int, **env) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-c", CHILD, str(jobs)], capture_output=True, text=True, env={**clean, **env}, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_a_stage_worker_runs_torch_on_its_share_of_the_cores():
    share = max(1, cores() // 2)
    assert run_child(2) == [str(share), str(share)]


def test_the_users_thread_count_stands():
    if cores() < 2: pytest.skip("one core: the user's count and a worker's share are the same")
    n = str(cores())   # more than a worker's share
    assert run_child(2, OMP_NUM_THREADS=n) == [n, n]


ENCODE = """
import hashlib, sys
import torch
torch.set_num_threads(int(sys.argv[1]))
from brightpro.data import load_domains
from brightpro.dense import Dense
texts = load_domains("earth_science")["earth_science"].documents.column("content").to_pylist()   # its last batch, one text, differed on AVX-512
print(hashlib.sha256(Dense().encode(texts).tobytes()).hexdigest())
"""


def test_one_thread_and_two_encode_the_same_bits():
    "A dense run must not depend on --jobs: a stage worker encodes on its share of the cores, one process alone on all of them. torch imported first, then brightpro, as in a notebook."
    clean = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    def digest(threads):
        r = subprocess.run([sys.executable, "-c", ENCODE, str(threads)], capture_output=True, text=True, env=clean, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        return r.stdout.split()[-1]
    assert digest(1) == digest(2)
