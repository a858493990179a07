"""The message and progress channel: progress in a log file is plain lines, not bars."""

import re
import subprocess
import sys

from conftest import ROOT


def test_progress_into_a_log_file_is_plain_lines(tmp_path):
    """Issue #35: a run's progress bar (recipes show one by default) wrote tqdm's carriage-return
    frames into log files. Where stderr is not a terminal, a line every PLAIN_EVERY seconds and
    one at the end; a loop shorter than the interval stays silent."""
    code = ("import time\n"
            "from bitextforge import log\n"
            "log.PLAIN_EVERY = 0.05\n"
            "for _ in log.progress(range(4), total=4, unit=' rows', show=True): time.sleep(0.06)\n"
            "log.PLAIN_EVERY = 60\n"
            "for _ in log.progress(range(4), 'quick', unit=' rows', show=True): pass\n")
    with open(tmp_path / "run.log", "w") as fh:
        subprocess.run([sys.executable, "-c", code], stderr=fh, check=True, cwd=ROOT)
    text = (tmp_path / "run.log").read_bytes().decode()  # read_text() would turn \r into \n
    assert "\r" not in text
    lines = text.splitlines()
    assert len(lines) == 5
    for n, line in enumerate(lines[:4], 1):
        assert re.fullmatch(rf"bitextforge: {n} rows of 4 \({25 * n}%\), [\d,]+ rows/s, \d+ s",
                            line), line
    assert re.fullmatch(r"bitextforge: 4 rows of 4 \(100%\), [\d,]+ rows/s, \d+ s \(done\)",
                        lines[4]), lines[4]
