"""Defective input files and records: empty pages, wrong field types, binaries named .html, lone
surrogates, Latin-1 lines, a BOM, a 20,000-word question. The tests feed them to the library, the
reliability benchmark to real processes."""

from __future__ import annotations

import json
from pathlib import Path

from testkit.records import QUESTION

PAGE = ("<html><body><article><p>At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for Best "
        "Animated Feature. The ceremony took place at the Kodak Theatre in Hollywood.</p></article></body></html>")
REPLY = ('Finding Nemo won. {cite:76th academy} "At the 76th Academy Awards, held in 2004, Finding Nemo won the '
         'Oscar for Best Animated Feature"')


def rec(rid: str, pages: list[str] | None = None, query: str = QUESTION, **extra) -> dict:
    results = [{"page_name": f"page {i}", "page_url": f"toy://{rid}/{i}", "page_result": p}
               for i, p in enumerate(pages if pages is not None else [PAGE])]
    return {"interaction_id": rid, "query": query, "answer": "finding nemo", "search_results": results, **extra}


def write_jsonl(path: Path, rows: list, raw_lines: dict[int, bytes] | None = None) -> Path:
    """Rows as JSON lines; ``raw_lines`` puts exact bytes at given 0-based positions."""
    lines = [json.dumps(r, ensure_ascii=False).encode() for r in rows]
    for pos, raw in sorted((raw_lines or {}).items()):
        lines.insert(pos, raw)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40
WRONG_TYPES = [  # (field, value, the bad record's reason)
    ("answer", ["finding nemo"], "answer: expected a string or a number, got a list"),
    ("answer", {"text": "finding nemo"}, "answer: expected a string or a number, got an object"),
    ("interaction_id", {"id": 1}, "interaction_id: expected a string or an integer, got dict"),
    ("alternative_answers", [["nemo"]], "alternative_answers: expected a string or a number, got a list"),
    ("search_results", [{"page_result": ["<p>x</p>"]}], "search_results.0.page_result: expected a string or a number, got a list"),
]
LONG = " ".join(["which movie won best animated feature at the oscars"] * 2500)  # 20,000 words
# a string of 100,000 minus signs: Python's parser runs out of stack on it (MemoryError, not a SyntaxError)
UNPARSABLE_LIST = "-" * 100_000 + "1"
LINE_BREAKS = ("\u2028", "\u2029", "\u0085")  # line and paragraph separators, NEL: str.splitlines() breaks at them
# abbreviations the sentence splitter runs on: a page of one of them repeated is one sentence as long as the page
ABBREVIATIONS = ("Mr. X ", "J. ", "No. 1 ")


def abbreviation_page(chars: int, unit: str = ABBREVIATIONS[0]) -> str:
    """A page that addresses the model once ("Answer:", so ingest splits all of it into sentences), then
    ``unit`` repeated to ``chars`` characters."""
    return "Answer: yes\n" + unit * (chars // len(unit))


def empty_files_folder(folder: Path) -> Path:
    folder.mkdir()
    for name in ("a.txt", "b.html", "c.md"):
        (folder / name).write_text("")
    return folder


def folder_with_a_binary(folder: Path) -> Path:
    """An ELF binary named x.html beside a UTF-8 and a Latin-1 text file."""
    folder.mkdir()
    (folder / "x.html").write_bytes(ELF)
    (folder / "nemo.txt").write_text("At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for Best "
                                     "Animated Feature, ahead of Brother Bear and The Triplets of Belleville.")
    (folder / "latin1.txt").write_bytes("Le caf\xe9 de la gare ouvre \xe0 six heures, m\xeame le dimanche matin.".encode("latin-1"))
    return folder


def surrogate_line(rid: str = "sur") -> bytes:
    """A record line whose page holds a lone surrogate escape (valid JSON, not encodable text)."""
    return json.dumps(rec(rid, pages=[PAGE.replace("Kodak", "Kodak \\ud800")])).replace("\\\\ud800", "\\ud800").encode()


def latin1_line(rid: str = "latin") -> bytes:
    return json.dumps(rec(rid, query="qui a gagné le prix en 2004 ?"), ensure_ascii=False).encode("latin-1")


def bom_dataset_with_a_latin1_line(path: Path) -> Path:
    """A UTF-8 file with a BOM, records a and b, and a Latin-1 line between them (line 2)."""
    data = write_jsonl(path, [rec("a"), rec("b")], {1: latin1_line()})
    data.write_bytes(b"\xef\xbb\xbf" + data.read_bytes())
    return data


def latin1_dataset(path: Path, n: int = 3) -> Path:
    rows = [rec(f"q{i}", query=f"où est la gare numéro {i} ?") for i in range(n)]
    path.write_bytes(b"\n".join(json.dumps(r, ensure_ascii=False).encode("latin-1") for r in rows) + b"\n")
    return path


def screen_lines(text: str) -> list[str]:
    """``text`` as a terminal shows it: a carriage return goes back to the line start and overwrites."""
    shown = []
    for line in text.split("\n"):
        screen = ""
        for part in line.split("\r"):
            screen = part + screen[len(part):]
        shown.append(screen.rstrip())
    return shown
