"""dedupe.v1 with ``max_memory_mb``: the seen keys spill to sorted files on disk past a fixed
in-memory table, and the decisions are those of the in-memory set (same kept rows, same order),
across batches, spills, merges and a resume from a saved state."""

import os
from pathlib import Path

import numpy as np
import pytest

from bitextforge import ComponentError
from bitextforge.plugins.basic_filters import DedupeFilter
from bitextforge.plugins.spilled_keys import FENCE, SpilledKeySet


def _small(tmp_path) -> SpilledKeySet:
    """A set whose table holds 2,048 keys and whose merges move 512 keys a chunk, so that a few
    thousand keys spill and merge many times."""
    s = SpilledKeySet(8, str(tmp_path))
    s.table = type(s.table)(12)
    s.capacity, s.chunk = 2048, FENCE
    return s


def _feed(keyset, batches):
    """Run batches of keys through ``keyset`` as dedupe.v1 does; return the found flags."""
    out = []
    for keys in batches:
        _, found = keyset.lookup(keys)
        out.append(found.copy())
        keyset.insert(np.unique(keys[~found]))
    return out


def test_spilled_set_answers_as_a_plain_set_through_spills_and_merges(tmp_path):
    rng = np.random.default_rng(7)
    # keys drawn from a pool twice the set's table, in both signs: repeats across runs
    pool = rng.integers(1, 2 ** 62, size=40_000) * rng.choice([-1, 1], size=40_000)
    batches = [rng.choice(pool, size=500) for _ in range(200)]
    s = _small(tmp_path)
    found = _feed(s, batches)
    seen: set[int] = set()
    for keys, got in zip(batches, found):
        want = np.array([int(k) in seen for k in keys])
        assert (got == want).all()
        seen.update(int(k) for k in keys)
    assert s.count == len(seen) and sorted(s.stored().tolist()) == sorted(seen)
    assert len(s.spilled) >= 2 and len(s.spilled) <= 7  # merged: about log2(n / 2048) runs
    s.close()
    assert not list(tmp_path.iterdir())  # a finished set leaves nothing behind


def test_extreme_keys_and_a_short_last_block_are_found_and_runs_are_read_not_mapped(tmp_path):
    top, bottom = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    rng = np.random.default_rng(11)
    # the extremes first, then 4,998 others: spills of 2,000 keys merge into a run of 4,000 (its
    # last block shorter than FENCE keys, holding the largest key)
    others = np.unique(rng.integers(-2 ** 62, 2 ** 62, size=4998))
    keys = np.concatenate([[top, bottom], others[others != 0]])
    s = _small(tmp_path)
    s.capacity = 2000
    s.insert(keys)
    assert s.spilled == [4000] and s.spilled[0] % FENCE
    absent = np.array([top - 1, bottom + 1, 1, -1], dtype=np.int64)
    absent = absent[~np.isin(absent, keys)]
    _, found = s.lookup(np.concatenate([keys, absent]))
    assert found[:len(keys)].all() and not found[len(keys):].any()
    maps = Path("/proc/self/maps")
    if maps.exists():  # the run files are read into memory a block at a time, never mapped
        assert str(tmp_path) not in maps.read_text()
    s.close()


def test_a_truncated_run_file_is_an_error_naming_it_not_a_wrong_answer(tmp_path):
    s = _small(tmp_path)
    keys = np.arange(1, 5001, dtype=np.int64)
    s.insert(keys)
    run = s.runs[0]
    os.truncate(run.path, 8 * (run.n - FENCE - 3))
    with pytest.raises(EOFError, match=r"run-\d+\.keys: shorter than its \d+ keys"):
        s.lookup(keys[run.n - 5:run.n])
    s.close()


def _batch(rows):
    return {"id": list(range(len(rows))), "src": [a for a, _ in rows], "tgt": [b for _, b in rows]}


def _rows(n, seed):
    rng = np.random.default_rng(seed)
    # a crawl's duplicates: a fifth of the rows repeat an earlier one, some with other case
    rows = []
    for i in range(n):
        if rows and rng.random() < 0.2:
            a, b = rows[int(rng.integers(len(rows)))]
            rows.append((a.upper() if rng.random() < 0.5 else a, b))
        else:
            rows.append((f"Satz {i} hier", f"sentence {i} here"))
    return rows


def test_dedupe_with_max_memory_keeps_the_same_rows_and_resumes(tmp_path):
    rows = _rows(12_000, 3)
    batches = [_batch(rows[i:i + 400]) for i in range(0, len(rows), 400)]
    plain = DedupeFilter()
    want = [plain.score(b) for b in batches]
    spilling = DedupeFilter(DedupeFilter.Config(max_memory_mb=8, spill_dir=str(tmp_path)))
    spilling.seen = _small(tmp_path)
    got = [spilling.score(b) for b in batches[:15]]
    state = spilling.get_state()
    assert state["spilled"]["runs"] and len(state["spilled"]["table"]) <= 2048
    # a resumed run: a fresh component restores the state and goes on
    resumed = DedupeFilter(DedupeFilter.Config(max_memory_mb=8, spill_dir=str(tmp_path)))
    resumed.set_state(state)
    resumed.seen.capacity, resumed.seen.chunk = 2048, FENCE
    got += [resumed.score(b) for b in batches[15:]]
    assert all((a == b).all() for a, b in zip(want, got))
    assert resumed.manifest_info()["distinct"] == plain.manifest_info()["distinct"]
    resumed.close()
    assert resumed.manifest_info()["distinct"] == plain.manifest_info()["distinct"]
    spilling.close()  # the interrupted process's set, which the resumed one no longer needs


def test_resume_without_the_spilled_files_is_a_one_line_error(tmp_path):
    d = DedupeFilter(DedupeFilter.Config(max_memory_mb=8, spill_dir=str(tmp_path)))
    d.seen = _small(tmp_path)
    for i in range(0, 6000, 500):
        d.score(_batch([(f"a{j}", f"b{j}") for j in range(i, i + 500)]))
    state = d.get_state()
    d.close()  # not failing: the spilled files go
    fresh = DedupeFilter(DedupeFilter.Config(max_memory_mb=8, spill_dir=str(tmp_path)))
    with pytest.raises(ComponentError, match=r"^dedupe.v1: the unfinished run's spilled keys "
                                             r"are gone \(.*run-\d+\.keys is missing"):
        fresh.set_state(state)


def test_a_failing_run_keeps_the_files_its_saved_state_names(tmp_path):
    d = DedupeFilter(DedupeFilter.Config(max_memory_mb=8, spill_dir=str(tmp_path)))
    d.seen = _small(tmp_path)
    for i in range(0, 6000, 500):
        d.score(_batch([(f"a{j}", f"b{j}") for j in range(i, i + 500)]))
    state = d.get_state()
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        d.close()
    fresh = DedupeFilter(DedupeFilter.Config(max_memory_mb=8, spill_dir=str(tmp_path)))
    fresh.set_state(state)
    assert fresh.seen.count == 6000
    fresh.close()


def test_max_memory_below_the_minimum_is_refused():
    with pytest.raises(ValueError, match="max_memory_mb"):
        DedupeFilter.Config(max_memory_mb=1)


def test_a_spill_dir_that_does_not_exist_yet_is_created(tmp_path):
    """A 10M-line run stopped at its first spill with FileNotFoundError when spill_dir was new."""
    where = tmp_path / "not" / "yet"
    s = _small(tmp_path)
    s.directory = str(where)
    _feed(s, [np.arange(i, i + 500, dtype=np.uint64) for i in range(0, 6000, 500)])
    assert s.spilled and where.is_dir()
    s.close()
