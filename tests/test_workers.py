"Worker processes share the cores: torch in a stage worker of `jobs` runs its share of threads, unless the user chose."
import os, subprocess, sys

import pytest
from conftest import screen

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


TASKS = """
import os, sys, time
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from brightpro.core import progress, start_worker, worker_bars, worker_progress

def count(label, n):
    with worker_progress(label):
        for _ in progress(range(n), desc="counting", unit="step"): time.sleep(0.2)
    return os.getpid()

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    with worker_bars(context) as relay, ProcessPoolExecutor(2, mp_context=context, initializer=start_worker, initargs=(os.getpid(), 2, relay)) as pool:
        print(len(set(pool.map(count, ["biology", "robotics", "economics"], [4, 4, 4]))) >= 1)
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_worker_processes_bars_are_drawn_by_the_parent_under_their_tasks_names(tmp_path, method):
    "Workers started either way send their bars through `worker_bars`' pipe: the parent draws each under its task's name, moving, and clears it; with BRIGHTPRO_PROGRESS=0 nothing is drawn."
    import re
    script = tmp_path/"tasks.py"   # a file: spawned workers import the script's functions from it
    script.write_text(TASKS)
    def run(flag):
        r = subprocess.run([sys.executable, str(script), method], capture_output=True, timeout=300,   # bytes: the bars' \r kept
                           env={**os.environ, "BRIGHTPRO_PROGRESS": flag, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert r.returncode == 0 and r.stdout.split() == [b"True"], r.stderr[-2000:]
        return r.stderr.decode("utf-8", "replace")
    drawn = run("1")
    for task in ("biology", "robotics", "economics"):
        states = re.findall(rf"{task}: counting: +\d+%\|[^|]*\| (\d)/4", drawn)
        assert states and states[0] == "0" and len(set(states)) > 1, (task, states)   # drawn from the start, and moving
    assert not [line for line in screen(drawn) if "counting" in line]   # each cleared when its task ended
    assert "counting" not in run("0")


def test_retrieve_in_workers_draws_each_domains_tokenizing_and_search(tmp_path):
    "`brightpro retrieve --jobs 2` on a terminal: below the bar that counts the domains, each worker's tokenizing and search under its domain's name."
    import re
    cmd = [sys.executable, "-m", "brightpro.cli", "retrieve", "--retriever", "bm25-bright", "--dataset", "sample", "--domain", "biology,economics",
           "--jobs", "2", "--out", str(tmp_path/"runs"), "--cache-dir", str(tmp_path/"cache")]
    r = subprocess.run(cmd, capture_output=True, timeout=300, env={**os.environ, "BRIGHTPRO_PROGRESS": "1"})
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 0, err
    assert {(d, w) for d in ("biology", "economics") for w in ("tokenizing", "search")} <= set(re.findall(r"([a-z_]+): bm25-bright (tokenizing|search):", err)), err
    assert [line.split(":")[0] for line in screen(err) if "|" in line] == ["retrieve bm25-bright"]   # the workers' bars cleared


INTERRUPTED = """
import multiprocessing, os, signal, sys, time
from brightpro.core import worker_processes
from brightpro.report import worker_pool
from contextlib import contextmanager
@contextmanager
def pages_pool(jobs):
    with worker_pool(jobs) as pool: yield pool
if __name__ == "__main__":
    for start in (worker_processes, pages_pool):   # the stages' workers and the pages'
        with start(2) as pool:
            busy = pool.submit(time.sleep, 60)
            idle = pool.submit(os.getpid).result()
            workers = {p.pid: p for p in multiprocessing.active_children()}
            os.kill(next(pid for pid in workers if pid != idle), signal.SIGINT)
            print(type(busy.exception(timeout=60)).__name__)
            os.kill(idle, signal.SIGINT)
            deadline = time.monotonic() + 60   # the status comes once one of the threads that reap it (this one, the pool's) has it
            while workers[idle].exitcode is None and time.monotonic() < deadline: time.sleep(0.05)
            print(workers[idle].exitcode)
"""


def test_ctrl_c_stops_a_workers_task_and_ends_a_waiting_worker_without_a_traceback():
    "SIGINT to a busy worker stops its task (the future fails with KeyboardInterrupt); to a worker waiting for its next task, ends it with status 130 and no traceback (before, each idle worker printed one under the command's 'brightpro: interrupted')."
    r = subprocess.run([sys.executable, "-c", INTERRUPTED], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["KeyboardInterrupt", "130"] * 2, r.stdout
    assert "Traceback" not in r.stderr and "KeyboardInterrupt" not in r.stderr, r.stderr[-3000:]


MASKS = """
import os, re, signal, threading, time
from pathlib import Path
from brightpro.core import worker_processes
from brightpro.report import worker_pool
def blocks_sigint(pid):   # {thread id: whether it blocks SIGINT}, from Linux's /proc
    mask = lambda t: int(re.search(r"SigBlk:\\s*(\\w+)", Path(f"/proc/{pid}/task/{t}/status").read_text())[1], 16)
    return {int(t): bool(mask(t) >> (signal.SIGINT - 1) & 1) for t in os.listdir(f"/proc/{pid}/task")}
def in_a_thread():   # a second thread: worker_processes spawns rather than forks, as in a Jupyter kernel
    for pool in (worker_processes(1), worker_pool(1)):
        with pool as workers:
            pid = workers.submit(os.getpid).result()
            masks = blocks_sigint(pid)
            print(masks.pop(pid), len(masks), sorted(set(masks.values())))
if __name__ == "__main__":
    t = threading.Thread(target=in_a_thread); t.start(); t.join()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the threads' signal masks from Linux's /proc")
def test_a_spawned_workers_other_threads_leave_ctrl_c_to_its_main_thread():
    "A spawned worker imports numpy, whose OpenBLAS starts threads; where one of them took the SIGINT, the main thread, waiting in a lock, never ran the handler and the worker stayed (seen under load: 3 of 20)."
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    r = subprocess.run([sys.executable, "-c", MASKS], capture_output=True, text=True, timeout=300, env={**clean, "OPENBLAS_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr[-3000:]
    for line in r.stdout.strip().splitlines():   # the stages' workers, then the pages'
        main, others, blocked = line.split(" ", 2)
        assert main == "False"   # the main thread takes Ctrl-C
        assert int(others) >= 1, r.stdout   # OpenBLAS's thread is there to test
        assert blocked == "[True]", r.stdout   # and leaves it to the main thread
    assert len(r.stdout.strip().splitlines()) == 2


SLOW_RESULT = """
import os, time
class SlowToSend:   # its result pickles for 2 s: the worker is between its task and the wait for the next
    def __reduce__(self):
        open(os.environ["SENDING"], "w").close()
        time.sleep(2)
        return SlowToSend, ()
def task(): return SlowToSend()
"""

BETWEEN = """
import multiprocessing, os, signal, sys, time
from pathlib import Path
from brightpro.core import worker_processes
import slow_result
if __name__ == "__main__":
    with worker_processes(1) as pool:
        pid = pool.submit(os.getpid).result()
        worker = next(p for p in multiprocessing.active_children() if p.pid == pid)
        future = pool.submit(slow_result.task)
        while not Path(os.environ["SENDING"]).exists(): time.sleep(0.01)
        os.kill(worker.pid, signal.SIGINT)
        print(type(future.result(timeout=60)).__name__)
        deadline = time.monotonic() + 60
        while worker.exitcode is None and time.monotonic() < deadline: time.sleep(0.05)
        print(worker.exitcode)
"""


def test_ctrl_c_while_a_worker_sends_its_result_ends_the_worker_once_the_result_is_sent(tmp_path):
    "Between a task's end and the wait for the next, concurrent.futures catches any exception and goes on waiting; before, a Ctrl-C there became the task's result, and the worker stayed."
    (tmp_path/"slow_result.py").write_text(SLOW_RESULT)
    env = {**os.environ, "SENDING": str(tmp_path/"sending"), "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    r = subprocess.run([sys.executable, "-c", BETWEEN], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]   # before: the KeyboardInterrupt came back as the task's result, and ended this script
    assert r.stdout.split() == ["SlowToSend", "130"], r.stdout + r.stderr[-3000:]   # the result arrives, then the worker ends
    assert "Traceback" not in r.stderr, r.stderr[-3000:]
