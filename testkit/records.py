"""Toy records and datasets: the Oscars question over four small pages, a toy dataset of it, a folder
of documents to ingest, and the CRAG kit's batches of records."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from agentic_rag.datasets.crag import CragRecord, write_records

PAGES = {
    "Oscars 2004": (
        "At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for Best Animated Feature. "
        "The ceremony took place at the Kodak Theatre in Hollywood. Pixar produced the film."
    ),
    "Oscars 2005": (
        "At the 77th Academy Awards in 2005, The Incredibles won the Oscar for Best Animated Feature. "
        "Brad Bird directed The Incredibles for Pixar."
    ),
    "Pixar history": (
        "Pixar Animation Studios is an American animation studio based in Emeryville, California. "
        "It was founded in 1986 and was bought by Disney in 2006."
    ),
    "Gardening": "Tomatoes grow best in warm soil with six hours of sun a day and regular watering.",
}
QUESTION = "which movie won best animated feature at the 2004 oscars?"
QUOTE_2004 = "At the 76th Academy Awards, held in 2004, Finding Nemo won the Oscar for Best Animated Feature"
QUOTE_2005 = "At the 77th Academy Awards in 2005, The Incredibles won the Oscar for Best Animated Feature"


def record(question: str = QUESTION, pages: dict[str, str] = PAGES) -> CragRecord:
    return CragRecord(
        interaction_id="toy-1",
        query=question,
        answer="finding nemo",
        search_results=[
            {"page_name": name, "page_url": f"toy://{i}", "page_result": text} for i, (name, text) in enumerate(pages.items())
        ],
    )


def toy_dataset(folder: Path, n: int = 5) -> Path:
    """``n`` copies of the Oscars record as folder/toy.jsonl; every other gold is "i don't know"."""
    recs = []
    for i in range(n):
        r = record()
        r.interaction_id = f"toy-{i}"
        if i % 2:
            r.answer = "i don't know"
        recs.append(r)
    path = Path(folder) / "toy.jsonl"
    write_records(recs, path)
    return path


def lightest_examples(folder: Path, n: int) -> Path:
    """A dataset of the ``n`` bundled CRAG records with the least page text, lightest first: real CRAG
    prompts (the context budget fills the same), at a fraction of the extraction and embedding that the
    first records' pages cost."""
    from agentic_rag.datasets.crag import EXAMPLE_DATASET, iter_records

    records = sorted(iter_records(EXAMPLE_DATASET), key=lambda r: sum(len(p.page_result or "") for p in r.search_results))
    path = folder / f"lightest_{n}.jsonl"
    write_records(records[:n], path)
    return path


REGATTA = ("The {i}th annual regatta on Lake Minnetonka was won by crew {i} in a time of {m} minutes, "
           "a record for the {i}th edition of the race held every summer since 1901. ")


def docs_folder(path: Path, n: int) -> Path:
    """A folder of ``n`` text documents to ingest, each a different regatta."""
    path.mkdir()
    for i in range(n):
        (path / f"doc{i:04d}.txt").write_text(REGATTA.format(i=i, m=40 + i % 9) * 12)
    return path


def kit_batches(records: list[CragRecord], batch_size: int) -> Iterator[dict[str, list[Any]]]:
    """As the CRAG kit's ``local_evaluation.py`` does: chunk the stream, and turn each chunk into a dict of lists."""
    for i in range(0, len(records), batch_size):
        chunk = records[i : i + batch_size]
        yield {
            "interaction_id": [r.interaction_id for r in chunk],
            "query": [r.query for r in chunk],
            "search_results": [[s.model_dump() for s in r.search_results] for r in chunk],
            "query_time": [r.query_time for r in chunk],
        }


UNIVERSAL = "DreamWorks Animation is owned by Universal Pictures {cite:universal}. "
