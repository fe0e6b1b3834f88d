"""``iowatt tree snapshot`` and ``recreate`` on real directories: hashed names and nothing of the
originals in the manifest, a recreation that snapshots the same, sparse and random content,
resume, and refusals that leave everything outside DEST untouched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iowatt.keys import load_keys
from support.cli import assert_user_error, iowatt

T = 1_500_000_000_000_000_000  # ns
NAMES = [
    b"www",
    b"exams",
    b"answers.pdf",
    b"syllabus.txt",
    b"shortcut",
    b"caf\xe9-\xff.html",
    b"drafts",
]


@pytest.fixture
def key(tmp_path: Path) -> Path:
    k = tmp_path / "tree.key"
    k.write_bytes(bytes(range(32)))
    return k


def _make_src(root: Path) -> Path:
    src = root / "src"
    b = os.fsencode(src)
    os.makedirs(b + b"/www/exams/drafts")
    with open(b + b"/www/exams/answers.pdf", "wb") as f:
        f.write(os.urandom(5000))
    os.chmod(b + b"/www/exams/answers.pdf", 0o600)
    os.utime(b + b"/www/exams/answers.pdf", ns=(T - 10**9, T))
    open(b + b"/www/syllabus.txt", "wb").close()
    with open(b + b"/www/caf\xe9-\xff.html", "wb") as f:
        f.write(b"<html>")
    os.symlink(b"exams/answers.pdf", b + b"/www/shortcut")
    return src


def _snapshot(capsys, key: Path, src: Path, out: Path, *extra: str) -> None:
    r = iowatt(capsys, "tree", "snapshot", src, "--key-file", key, "-o", out, *extra)
    assert r.code == 0, r.err


def _rows(path: Path) -> list[dict]:
    return pq.read_table(path).to_pylist()


def test_snapshot_records_every_entry_with_hashed_names(capsys, tmp_path, key):
    src = _make_src(tmp_path)
    out = tmp_path / "m.parquet"
    _snapshot(capsys, key, src, out, "--keep-extensions")
    keys = load_keys(key)
    h = dict(zip(NAMES, keys.hash_names(NAMES, keep_extensions=True), strict=True))
    rows = {r["path"]: r for r in _rows(out)}
    www, exams, odd = h[b"www"], f"{h[b'www']}/{h[b'exams']}", h[NAMES[5]]
    assert set(rows) == {
        www, exams, f"{exams}/{h[b'drafts']}", f"{exams}/{h[b'answers.pdf']}",
        f"{www}/{h[b'syllabus.txt']}", f"{www}/{h[b'shortcut']}", f"{www}/{odd}",
    }  # fmt: skip
    pdf = rows[f"{exams}/{h[b'answers.pdf']}"]
    assert pdf["path"].endswith(".pdf")
    assert (pdf["type"], pdf["size"], pdf["mode"], pdf["mtime_ns"], pdf["atime_ns"]) == (
        "file", 5000, 0o600, T, T - 10**9,
    )  # fmt: skip
    assert rows[f"{www}/{h[b'syllabus.txt']}"]["size"] == 0
    link = rows[f"{www}/{h[b'shortcut']}"]
    assert (link["type"], link["size"]) == ("symlink", len(b"exams/answers.pdf"))
    assert link["target"] == f"{h[b'exams']}/{h[b'answers.pdf']}"
    assert rows[www]["type"] == "dir" and rows[www]["size"] == 0 and rows[www]["target"] is None
    # Parents come before their entries.
    order = [r["path"] for r in _rows(out)]
    for i, p in enumerate(order):
        if "/" in p:
            assert order.index(p.rsplit("/", 1)[0]) < i
    meta = json.loads(pq.read_schema(out).metadata[b"iowatt"])
    assert meta["format"] == "iowatt-tree/1" and meta["key_id"] == keys.id
    assert meta["keep_extensions"] is True
    assert meta["counts"]["files"] == 3 and meta["counts"]["links"] == 1
    schema = pq.read_schema(out)
    assert schema.field("size").type == pa.int64() and schema.field("mode").type == pa.int32()
    data = out.read_bytes()
    for name in NAMES:
        stem = name.rsplit(b".", 1)[0]
        assert stem not in data, name


def test_a_recreated_tree_snapshots_like_the_original(capsys, tmp_path, key):
    src = _make_src(tmp_path)
    out, again, dest = tmp_path / "m.parquet", tmp_path / "again.parquet", tmp_path / "dest"
    _snapshot(capsys, key, src, out)
    r = iowatt(capsys, "tree", "recreate", out, dest, "--seed", "3", "--json")
    assert r.code == 0, r.err
    s = json.loads(r.out)
    assert (s["files"], s["dirs"], s["links"], s["seed"]) == (3, 3, 1, 3)
    _snapshot(capsys, key, dest, again)
    keys = load_keys(key)

    def rehash(path: str) -> str:
        # DEST's names are the hashes, so its snapshot hashes them once more.
        return "/".join(keys.hash_names(path.split("/")))

    def listing(rows: list[dict], hashed: bool) -> set[tuple]:
        return {
            (rehash(r["path"]) if hashed else r["path"], r["type"],
             r["size"] if r["type"] != "symlink" else None, r["mode"], r["mtime_ns"])
            for r in rows
        }  # fmt: skip

    assert listing(_rows(again), hashed=False) == listing(_rows(out), hashed=True)
    pdf = next(p for p in dest.rglob("*") if p.is_file() and p.stat().st_size == 5000)
    data = pdf.read_bytes()
    assert len(zlib.compress(data, 9)) > 0.99 * len(data)


def test_sparse_files_take_no_space(capsys, tmp_path, key):
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "big", "wb") as f:
        f.truncate(256 << 20)
    out, dest = tmp_path / "m.parquet", tmp_path / "dest"
    _snapshot(capsys, key, src, out)
    r = iowatt(capsys, "tree", "recreate", out, dest, "--sparse")
    assert r.code == 0, r.err
    (big,) = dest.iterdir()
    assert big.stat().st_size == 256 << 20 and big.stat().st_blocks < 64


def test_resume_finishes_a_partial_recreation(capsys, tmp_path, key):
    src = _make_src(tmp_path)
    for i in range(50):
        (src / "www" / f"f{i}").write_bytes(b"x" * i)
    out, dest = tmp_path / "m.parquet", tmp_path / "dest"
    _snapshot(capsys, key, src, out)
    assert iowatt(capsys, "tree", "recreate", out, dest).code == 0
    files = sorted(p for p in dest.rglob("*") if p.is_file() and not p.is_symlink())
    files[0].write_bytes(b"wrong")  # wrong size and time
    files[1].unlink()  # missing
    os.truncate(files[2], 0)
    (link,) = [p for p in dest.rglob("*") if p.is_symlink()]
    link.unlink()
    r = iowatt(capsys, "tree", "recreate", out, dest, "--resume", "--json")
    assert r.code == 0, r.err
    s = json.loads(r.out)
    assert s["files"] >= 2 and s["links"] == 1 and s["skipped"] > 40
    again = tmp_path / "again.parquet"
    _snapshot(capsys, key, dest, again)
    fresh = tmp_path / "fresh"
    assert iowatt(capsys, "tree", "recreate", out, fresh).code == 0
    fresh_m = tmp_path / "fresh.parquet"
    _snapshot(capsys, key, fresh, fresh_m)

    def listing(p: Path) -> list[tuple]:
        return sorted((r["path"], r["type"], r["size"], r["mode"], r["mtime_ns"]) for r in _rows(p))

    assert listing(again) == listing(fresh_m)


def test_a_killed_recreation_resumes_to_the_complete_tree(capsys, tmp_path, key):
    src = tmp_path / "src"
    for d in range(20):
        (src / f"d{d}").mkdir(parents=True)
        for f in range(40):
            (src / f"d{d}" / f"f{f}").write_bytes(b"")
            os.truncate(src / f"d{d}" / f"f{f}", 128 << 10)
    out, dest = tmp_path / "m.parquet", tmp_path / "dest"
    _snapshot(capsys, key, src, out)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from iowatt.cli import main; main()", "tree", "recreate",
         str(out), str(dest), "--threads", "2", "--quiet"]
    )  # fmt: skip
    # Killed once some entries exist (polling the tree, not sleeping for a time).
    while proc.poll() is None and sum(1 for _ in dest.rglob("*")) < 100:
        pass
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    r = iowatt(capsys, "tree", "recreate", out, dest, "--resume", "--json")
    assert r.code == 0, r.err
    again, fresh_m = tmp_path / "again.parquet", tmp_path / "fresh.parquet"
    _snapshot(capsys, key, dest, again)
    assert iowatt(capsys, "tree", "recreate", out, tmp_path / "fresh", "--sparse").code == 0
    _snapshot(capsys, key, tmp_path / "fresh", fresh_m)
    strip = lambda p: sorted(  # noqa: E731
        (r["path"], r["type"], r["size"], r["mode"], r["mtime_ns"]) for r in _rows(p)
    )
    assert strip(again) == strip(fresh_m)


def _manifest(tmp_path: Path, rows: list[dict], meta: dict | None = None) -> Path:
    from iowatt.tree import manifest

    cols = {c: [r.get(c) for r in rows] for c in manifest.schema({}).names}
    for c in ("size", "mode", "mtime_ns", "atime_ns", "allocated", "ctime_ns", "nlink"):
        cols[c] = [r.get(c, 0o644 if c == "mode" else 0) for r in rows]
    out = tmp_path / "bad.parquet"
    manifest.write(cols, meta or {"format": "iowatt-tree/1", "key_id": "x"}, out)
    return out


@pytest.mark.parametrize(
    ("rows", "fragment"),
    [
        ([{"path": "../x", "type": "file"}], "`../x`"),
        ([{"path": "d", "type": "dir"}, {"path": "d/../../x", "type": "file"}], "d/../../x"),
        ([{"path": "/etc/x", "type": "file"}], "/etc/x"),
        ([{"path": "l", "type": "symlink", "target": ".."}, {"path": "l/x", "type": "file"}],
         "l/x"),
        ([{"path": "f", "type": "file"}, {"path": "f/x", "type": "file"}], "f/x"),
        ([{"path": "x", "type": "fifo"}], "fifo"),
    ],
)  # fmt: skip
def test_manifests_reaching_outside_dest_are_refused(capsys, tmp_path, rows, fragment):
    bad = _manifest(tmp_path, rows)
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (sibling / "keep").write_text("x")
    r = iowatt(capsys, "tree", "recreate", bad, tmp_path / "dest")
    assert_user_error(r, str(bad), fragment)
    assert not (tmp_path / "dest").exists()
    assert not (tmp_path / "x").exists() and not Path("/etc/x").exists()
    assert [p.name for p in sibling.iterdir()] == ["keep"]


def test_a_planted_symlink_in_dest_does_not_lead_outside(capsys, tmp_path, key):
    src = _make_src(tmp_path)
    out, dest, outside = tmp_path / "m.parquet", tmp_path / "dest", tmp_path / "outside"
    _snapshot(capsys, key, src, out)
    outside.mkdir()
    dest.mkdir()
    www = next(r["path"] for r in _rows(out) if "/" not in r["path"])
    (dest / www).symlink_to(outside)
    r = iowatt(capsys, "tree", "recreate", out, dest, "--resume")
    assert r.code == 0, r.err
    assert list(outside.iterdir()) == []
    assert (dest / www).is_dir() and not (dest / www).is_symlink()


def test_refusals_name_the_value(capsys, tmp_path, key):
    src = _make_src(tmp_path)
    out = tmp_path / "m.parquet"
    r = iowatt(capsys, "tree", "snapshot", src, "--key-file", tmp_path / "nokey", "-o", out)
    assert_user_error(r, "nokey")
    r = iowatt(capsys, "tree", "snapshot", src, "--key-file", key, "-o", tmp_path / "no/m.pq")
    assert_user_error(r, "no/m.pq")
    _snapshot(capsys, key, src, out)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "mine").write_text("x")
    r = iowatt(capsys, "tree", "recreate", out, dest)
    assert_user_error(r, str(dest), "not empty")
    assert "--resume" in r.err
    assert [p.name for p in dest.iterdir()] == ["mine"]
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"path": ["a"]}), plain)
    text = tmp_path / "notes.txt"
    text.write_text("not parquet")
    for bad in (plain, text, tmp_path / "missing.parquet"):
        r = iowatt(capsys, "tree", "recreate", bad, tmp_path / "d2")
        assert_user_error(r, str(bad))
    assert not (tmp_path / "d2").exists()


def test_a_tree_too_big_for_dest_is_refused_unless_sparse(capsys, tmp_path):
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    bad = _manifest(tmp_path, [{"path": "huge", "type": "file", "size": free + (1 << 40)}])
    r = iowatt(capsys, "tree", "recreate", bad, tmp_path / "dest")
    assert_user_error(r, str(tmp_path / "dest"))
    assert "--sparse" in r.err
    r = iowatt(capsys, "tree", "recreate", bad, tmp_path / "dest", "--sparse")
    assert r.code == 0, r.err
