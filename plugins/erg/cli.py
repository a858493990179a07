"""The ``bitextforge nichols-split`` command: Nichols et al.'s section 5.2 bitext sentence
splitting applied to a pair of line-aligned files (in a recipe, the same splitting is the
``split: nichols_split.v1`` step; see :mod:`bitextforge.plugins.erg.split`)."""

from __future__ import annotations



def nichols_split_command(p):
    """Add the nichols-split arguments and return its handler."""
    p.add_argument("src", help="source-side file, one segment per line (.gz ok)")
    p.add_argument("tgt", help="target-side file, line-aligned (.gz ok)")
    p.add_argument("out_src", help="source-side output (.gz ok)")
    p.add_argument("out_tgt", help="target-side output (.gz ok)")
    p.add_argument("--titles", default="Mr.,Ms.,Mrs.,Dr.",
                   help="comma-separated abbreviations after which no split happens")

    def handler(args) -> int:
        from .split import split_pair
        return run_split(args.src, args.tgt, args.out_src, args.out_tgt,
                         [t for t in args.titles.split(",") if t], split_pair)

    return handler


def _open_out(path: str):
    import gzip

    if path.endswith(".gz"):
        return gzip.open(path, "wt", encoding="utf-8")
    return open(path, "w", encoding="utf-8", newline="\n")


def run_split(src: str, tgt: str, out_src: str, out_tgt: str, titles, split_pair) -> int:
    """Split the files and print how many pairs were read, split and written."""
    from itertools import zip_longest

    from bitextforge import InputError
    from bitextforge.api import open_binary, text_lines

    pairs = split = written = 0
    for path in (src, tgt):  # a missing input fails before any output file is created
        open_binary(path).close()
    try:
        fs, ft = text_lines(src), text_lines(tgt)
        with _open_out(out_src) as os_, _open_out(out_tgt) as ot:
            for i, (s, t) in enumerate(zip_longest(fs, ft), 1):
                if s is None or t is None:
                    raise InputError(f"{src if s is None else tgt}: ends at line {i - 1} while "
                                     f"the other side goes on; the files must be line-aligned")
                pairs += 1
                pieces = split_pair(s, t, titles)
                if len(pieces) > 1:
                    split += 1
                for a, b in pieces:
                    os_.write(a + "\n")
                    ot.write(b + "\n")
                    written += 1
    except OSError as exc:
        raise InputError(f"{exc.filename}: {exc.strerror}") from None
    print(f"{pairs} pairs read, {split} split, {written} pairs written -> {out_src}, {out_tgt}")
    return 0
