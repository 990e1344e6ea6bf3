"""argent/runs/fingerprint.py: the fingerprint a run's stamp records of each file it read (docs/reliability.md
§17). The digests are checked against hashlib directly, the sampled one's blocks against the documented
offsets; the rules of ``compare`` (size first, then time, then digest; at most ``rehash_limit`` re-reads)
one by one."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from argent.runs.fingerprint import BLOCK, BLOCKS, FULL_LIMIT, Fingerprint, compare, fingerprint, read_record, record


def test_a_small_file_is_hashed_whole(tmp_path):
    path = tmp_path / "a.tar"
    path.write_bytes(b"x" * 1000)
    fp = fingerprint(path)
    assert fp.digest == "sha256:" + hashlib.sha256(b"x" * 1000).hexdigest() and fp.size == 1000


def test_a_large_file_is_sampled_at_the_documented_offsets(tmp_path):
    """A sparse file of FULL_LIMIT + 1 MiB: 16 blocks of 64 KiB read, the first and last included."""
    path = tmp_path / "big.tar"
    size = FULL_LIMIT + 2**20
    with open(path, "wb") as f:
        f.truncate(size)
        f.seek(size - 10)
        f.write(b"end-marker")
    offsets = [round(i * (size - BLOCK) / (BLOCKS - 1)) for i in range(BLOCKS)]
    expected = hashlib.sha256(f"{size}:{BLOCKS}x{BLOCK}\n".encode())
    with open(path, "rb") as f:
        for offset in offsets:
            f.seek(offset)
            expected.update(f.read(BLOCK))
    assert fingerprint(path).digest == f"sample:{expected.hexdigest()}"
    with open(path, "r+b") as f:  # a byte inside the third sampled block
        f.seek(offsets[2] + 5)
        f.write(b"!")
    os.utime(path, ns=(1, 1))
    assert fingerprint(path).digest != f"sample:{expected.hexdigest()}"


def _files(folder: Path, n: int, tag: bytes = b"") -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"shard-{i}.tar").write_bytes(b"shard %d " % i + tag)
    return sorted(folder.glob("shard-*.tar"))


def test_compare_size_time_and_digest_in_that_order(tmp_path):
    files = _files(tmp_path / "d", 3)
    recorded = read_record(record(files))
    assert compare(recorded, files) is None
    os.utime(files[0], ns=(5, 5))  # a new time, the same bytes: no change
    assert compare(recorded, files) is None
    files[1].write_bytes(b"shard 1 and more")  # another size: a change, named, nothing read
    change = compare(recorded, files)
    assert change is not None and change.path == str(files[1]) and "bytes" in change.what
    files[1].write_bytes(b"shard 9 ")  # the same size again, other bytes
    assert "other bytes" in compare(recorded, files).what
    (tmp_path / "d" / "shard-7.tar").write_bytes(b"new")
    change = compare(recorded, sorted((tmp_path / "d").glob("shard-*.tar")))
    assert change.count == 2
    files[2].unlink()
    assert "gone now" in compare(recorded, files[:2]).line()


def test_the_dag_rereads_at_most_rehash_limit_files_of_kept_size(tmp_path):
    """Three files touched, one of them with new bytes of the same size: found when every touched file is
    re-read; with a limit of one, only the first by name is, so the change is missed (the documented bound
    on what planning reads; the trainer re-reads every one)."""
    files = _files(tmp_path / "d", 3)
    recorded = read_record(record(files))
    for path in files:
        os.utime(path, ns=(9, 9))
    files[1].write_bytes(b"shard X ")
    os.utime(files[1], ns=(9, 9))
    assert compare(recorded, files) is not None
    assert compare(recorded, files, rehash_limit=1) is None


def test_a_record_this_code_cannot_read_is_no_record():
    assert read_record(None) is None and read_record({}) is None and read_record({"a": [1, 2]}) is None
    assert read_record({"a": [1, 2, "md5:x"]}) is None
    assert read_record({"a": [1, 2, "sha256:ab"]}) == {"a": Fingerprint(1, 2, "sha256:ab")}
