"""Bad input and safety: each case gives a one-line error naming the file and line or the recipe
key, a non-zero exit, and no output under a final name (issue: bad-input suite)."""

import gzip
import resource
import signal
import subprocess
import sys

import pytest

FINAL = ("corpus.src", "corpus.tgt", "corpus.tsv", "rejected.tsv", "manifest.json")


def run_cli(recipe, *extra, preexec=None):
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", "run", str(recipe), "-q", *extra],
                          capture_output=True, text=True, preexec_fn=preexec)


def recipe_for(tmp_path, src, tgt, steps=None, extra=""):
    steps = steps or "  - filter: length_ratio.v1\n    keep: {max: 3}\n"
    p = tmp_path / "r.yaml"
    p.write_text(f"name: bad\ninput: {{src: '{src}', tgt: '{tgt}'}}\noutput: '{tmp_path / 'out'}'\n"
                 f"{extra}steps:\n{steps}")
    return p


def assert_clean_failure(res, tmp_path, *needles):
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("bitextforge: error: ")
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert "Traceback" not in res.stderr
    out = tmp_path / "out"
    for name in FINAL:
        assert not (out / name).exists(), name


def write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("case,src,tgt,needles", [
    ("unequal", b"a\nb\nc\n", b"A\nB\n", ["line counts differ", "src.txt has 3 lines", "tgt.txt has 2"]),
    ("utf8", b"a\n\xc3\x28 bad\n", b"A\nB\n", ["src.txt:2: invalid UTF-8"]),
    ("nul", b"a\nb\x00\n", b"A\nB\n", ["src.txt:2: NUL byte"]),
])
def test_corrupt_text_inputs(tmp_path, case, src, tgt, needles):
    s, t = write(tmp_path / "src.txt", src), write(tmp_path / "tgt.txt", tgt)
    assert_clean_failure(run_cli(recipe_for(tmp_path, s, t)), tmp_path, *needles)


def test_truncated_gzip(tmp_path):
    data = "".join(f"Satz Nummer {i} ist hier.\n" for i in range(5000)).encode()
    s = write(tmp_path / "src.gz", gzip.compress(data)[:-100])
    t = write(tmp_path / "tgt.gz", gzip.compress(data))
    assert_clean_failure(run_cli(recipe_for(tmp_path, s, t)), tmp_path, "src.gz: unreadable after line")


def test_bom_crlf_empty_lines_and_empty_input_are_fine(tmp_path):
    s = write(tmp_path / "s.txt", b"\xef\xbb\xbfHallo Welt\r\n\r\nGuten Tag\r\n")
    t = write(tmp_path / "t.txt", b"Hello world\n\nGood day\n")
    steps = "  - filter: length.v1\n    keep: {max: 10}\n"
    res = run_cli(recipe_for(tmp_path, s, t, steps))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "corpus.src").read_bytes() == b"Hallo Welt\n\nGuten Tag\n"
    e1, e2 = write(tmp_path / "e1", b""), write(tmp_path / "e2", b"")
    res = run_cli(recipe_for(tmp_path, e1, e2, steps), "-o", str(tmp_path / "empty"))
    assert res.returncode == 0 and "0 rows in, 0 rows out" in res.stdout
    assert (tmp_path / "empty" / "corpus.tsv").read_text().startswith("id\tvariant")


def test_one_megabyte_line(tmp_path):
    big = ("wort " * 200_000).strip()
    s = write(tmp_path / "s.txt", f"kurz\n{big}\n".encode())
    t = write(tmp_path / "t.txt", b"short\nlong\n")
    steps = "  - filter: length.v1\n    keep: {max: 100}\n"
    res = run_cli(recipe_for(tmp_path, s, t, steps))
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "corpus.src").read_text() == "kurz\n"
    rejected = (tmp_path / "out" / "rejected.tsv").read_text().splitlines()
    assert len(rejected) == 2 and len(rejected[1]) > 1_000_000  # kept with its reason, not lost


def test_tab_inside_tsv_field(tmp_path):
    p = write(tmp_path / "c.tsv", b"src\ttgt\nHallo\tHello\nein\tTab\tzu viel\n")
    r = tmp_path / "r.yaml"
    r.write_text(f"name: t\ninput: {{path: '{p}', header: true}}\noutput: '{tmp_path / 'out'}'\n"
                 "steps:\n  - filter: dedupe.v1\n")
    assert_clean_failure(run_cli(r), tmp_path, "c.tsv:3: 3 tab-separated fields, expected 2")


def test_tabs_in_plain_text_survive_tsv_output(tmp_path):
    s = write(tmp_path / "s.txt", b"a\tb\n")
    t = write(tmp_path / "t.txt", b"x\\y\n")
    res = run_cli(recipe_for(tmp_path, s, t, "  - filter: dedupe.v1\n"))
    assert res.returncode == 0, res.stderr
    row = (tmp_path / "out" / "corpus.tsv").read_text().splitlines()[1].split("\t")
    assert row[3:5] == ["a\\tb", "x\\\\y"]  # escaped, so the TSV keeps its columns
    assert (tmp_path / "out" / "corpus.src").read_text() == "a\tb\n"


@pytest.mark.parametrize("steps,needle", [
    ("  - filter: lenght_ratio.v1\n    keep: {max: 3}\n", "steps[0] (lenght_ratio).filter: unknown filter 'lenght_ratio.v1'; did you mean length_ratio.v1"),
    ("  - filter: length_ratio.v1\n    with: {unti: chars}\n    keep: {max: 3}\n", "steps[0] (length_ratio).with.unti: unknown field; did you mean unit?"),
    ("  - filter: length_ratio.v1\n    keep: {max: three}\n", "steps[0] (length_ratio).keep.max: Input should be a valid number"),
    ("  - filter: length_ratio.v1\n    keep: !!python/object/apply:os.getcwd []\n", "invalid YAML"),
])
def test_bad_recipes(tmp_path, steps, needle):
    s, t = write(tmp_path / "s", b"a\n"), write(tmp_path / "t", b"b\n")
    assert_clean_failure(run_cli(recipe_for(tmp_path, s, t, steps)), tmp_path, "r.yaml", needle)


def test_output_not_writable(tmp_path):
    s, t = write(tmp_path / "s", b"a\n"), write(tmp_path / "t", b"b\n")
    blocker = write(tmp_path / "blocker", b"")
    res = run_cli(recipe_for(tmp_path, s, t), "-o", str(blocker / "out"))
    # a file in the way is called a file (issue #35), before the directory is tried
    assert res.returncode == 2 and f"{blocker} is a file, not a directory" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_disk_fills(tmp_path):
    """A file-size limit makes writes fail like a full disk (ENOSPC and EFBIG take the same path)."""
    line = "Dies ist ein ganz gewöhnlicher Satz mit einigen Wörtern darin.\n"
    s = write(tmp_path / "s", (line * 20000).encode())
    t = write(tmp_path / "t", (line * 20000).encode())

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get an OSError instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))

    steps = "  - filter: length.v1\n    keep: {max: 100}\n"
    res = run_cli(recipe_for(tmp_path, s, t, steps), preexec=limit)
    assert_clean_failure(res, tmp_path, "writing output failed")
    # the first shard never finished: no temporary file and no shard state is left behind
    assert not (tmp_path / "out").exists()
