"""The frontier store's durability contract (module docstring of store_local):
writes are batched in one LMDB transaction, and a killed process resumes from
the last commit as a whole — queue, leases, seen set and sequence together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap

from scrapy_focus.frontier.store_local import LmdbFrontierStore


def kill(store: LmdbFrontierStore) -> None:
    """Like a killed process: no commit, no orderly close()."""
    store.env.close()


def test_committed_leases_come_back_after_a_kill(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f")
    for n in range(3):
        store.push("h", 0, 0.5, f"r{n}".encode())
    taken = store.pop("h")
    acked = store.pop("h")
    store.ack(acked.lease)
    store.commit()
    kill(store)

    reopened = LmdbFrontierStore(tmp_path / "f")
    assert len(reopened) == 2
    assert {reopened.pop("h").payload for _ in range(2)} == {taken.payload, b"r2"}
    reopened.close()


def test_a_kill_undoes_queue_leases_and_seen_set_together(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f", commit_interval=3600)
    for name in (b"a", b"b"):
        assert store.seen_add(name * 20)
        store.push("h", 0, 0.5, name)
    store.commit()
    popped = store.pop("h")  # taken after the commit ...
    assert store.seen_add(b"c" * 20)  # ... and a link found since
    store.push("h", 0, 0.9, b"c")
    store.ack(popped.lease)
    kill(store)

    reopened = LmdbFrontierStore(tmp_path / "f")
    assert len(reopened) == 2  # the pop is undone: the request is back in line
    assert reopened.leased() == 0
    assert {reopened.pop("h").payload for _ in range(2)} == {b"a", b"b"}
    assert reopened.seen_add(b"c" * 20) is True  # undone with its push: found again
    assert reopened.seen_add(b"a" * 20) is False
    reopened.close()


def test_no_commit_falls_inside_atomic_so_a_seen_mark_is_durable_only_with_its_entry(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f", commit_every=1)  # every write due
    block = store.atomic()
    block.__enter__()  # a block the kill never leaves
    assert store.seen_add(b"a" * 20)
    kill(store)  # between the mark and its push

    reopened = LmdbFrontierStore(tmp_path / "f", commit_every=1)
    assert reopened.seen_add(b"a" * 20) is True  # not marked: the link is found again
    with reopened.atomic():
        with reopened.atomic():  # nested: still one commit, at the outer end
            assert reopened.seen_add(b"b" * 20)
        reopened.push("h", 0, 0.5, b"b")
    kill(reopened)  # after the block: what fell due inside is committed

    again = LmdbFrontierStore(tmp_path / "f")
    assert again.seen_add(b"b" * 20) is False
    assert len(again) == 1 and again.pop("h").payload == b"b"
    again.close()


def test_reads_see_writes_not_yet_committed(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f", commit_every=10**6, commit_interval=3600)
    key = store.push("h", 0, 0.5, b"x")
    assert store.best("h") == key
    assert store.seen_add(b"f" * 20) is True
    assert store.seen_add(b"f" * 20) is False
    entry = store.pop("h")
    assert entry is not None and entry.payload == b"x"
    assert store.leased() == 1
    store.close()


def test_writes_are_committed_every_commit_every_writes(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f", commit_every=100, commit_interval=3600)
    for n in range(250):
        store.push("h", 0, 0.5, str(n).encode())
    kill(store)

    reopened = LmdbFrontierStore(tmp_path / "f")
    assert len(reopened) == 200
    assert [reopened.pop("h").payload for _ in range(200)] == [
        str(n).encode() for n in range(200)
    ]  # FIFO among equals, and exactly the first 200: a prefix
    reopened.close()


def test_sequence_numbers_are_never_reused_after_a_kill(tmp_path):
    # Same host, priority and score: only the sequence keeps keys apart, so a
    # sequence restored behind the stored keys would overwrite entries.
    store = LmdbFrontierStore(tmp_path / "f", commit_every=700, commit_interval=3600)
    for _ in range(2500):
        store.push("h", 0, 0.5, b"old")
    kill(store)

    reopened = LmdbFrontierStore(tmp_path / "f")
    committed = len(reopened)
    assert committed == 2100
    for _ in range(10):
        reopened.push("h", 0, 0.5, b"new")
    reopened.commit()
    assert len(reopened) == committed + 10
    payloads = [reopened.pop("h").payload for _ in range(committed + 10)]
    assert payloads.count(b"old") == committed
    reopened.close()


def test_a_sigkilled_process_resumes_from_its_last_commit(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal
        from scrapy_focus.frontier.store_local import LmdbFrontierStore
        store = LmdbFrontierStore({str(tmp_path / "f")!r}, commit_every=1000,
                                  commit_interval=3600)
        for n in range(5300):
            store.seen_add(n.to_bytes(20, "big"))
            store.push(f"h{{n % 7}}", 0, 0.5, str(n).encode())
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], check=False, env=os.environ.copy())
    assert proc.returncode == -signal.SIGKILL

    reopened = LmdbFrontierStore(tmp_path / "f")
    # Two writes an entry (seen, push), a commit every 1,000 writes: of 10,600
    # writes, the first 10,000 are on disk, that is entries 0-4,999, whole.
    assert len(reopened) == 5000
    assert reopened.seen_count() == 5000
    payloads = set()
    for host in reopened.hosts():
        while (entry := reopened.pop(host)) is not None:
            payloads.add(int(entry.payload))
    assert payloads == set(range(5000))
    reopened.close()


def test_variants_beyond_the_limit_are_refused_and_known_ones_accepted(tmp_path):
    store = LmdbFrontierStore(tmp_path / "f")
    assert all(store.variant_add("h/search", f"q={n}", 3) for n in range(3))
    assert store.variant_add("h/search", "q=3", 3) is False
    assert store.variant_add("h/search", "q=1", 3) is True  # already counted
    assert store.variant_add("h/other", "q=3", 3) is True  # per group
    store.close()
    reopened = LmdbFrontierStore(tmp_path / "f")
    assert reopened.variant_add("h/search", "q=4", 3) is False  # kept across a resume
    reopened.close()


def test_a_killed_crawls_temporary_store_is_removed_by_the_next_one(tmp_path, monkeypatch):
    # Without JOBDIR the store is a temporary directory named after its process;
    # a SIGKILL leaves it behind, and the next store opened removes it, never the
    # store of a process still running.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f"focus-frontier-{int(finished.stdout)}-x1"
    running = tmp_path / f"focus-frontier-{os.getpid()}-x2"
    unnamed = tmp_path / "focus-frontier-x3"  # an older name: whose it is is unknown
    for directory in (dead, running, unnamed):
        directory.mkdir()
    store = LmdbFrontierStore(None)
    assert store.path.parent == tmp_path
    assert store.path.name.startswith(f"focus-frontier-{os.getpid()}-")
    assert not dead.exists()
    assert running.exists() and unnamed.exists()
    store.close()
    assert not store.path.exists()
