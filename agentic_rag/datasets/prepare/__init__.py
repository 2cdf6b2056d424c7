"""Converters from public QA sets to CRAG's JSON-lines format.

Every other command reads one format: a file of :class:`~agentic_rag.datasets.crag.CragRecord` lines. The
functions here turn the CRAG distribution itself (filtered and sampled) and four other evaluation sets
(SQuAD 2.0, RGB, Natural Questions open, HotpotQA) into that format. Each returns ``(output path(s), stats)`` where
``stats`` is a small JSON-friendly dict of counts.

* Deterministic: the same input and ``seed`` give byte-identical output. Samples are drawn with
  ``random.Random(seed)`` and every per-question choice (distractor paragraphs, shuffles) uses its own
  generator seeded from ``(seed, source, question id)``, so a question's pages do not depend on which other
  questions were sampled.
* Nothing is dropped silently: a line that is not JSON, or lacks what a record needs, is reported with its
  file and line number as a :class:`~agentic_rag.datasets.crag.BadRecord` in the caller's
  :class:`~agentic_rag.datasets.crag.ReadReport` (``on_bad='skip'``) or raised as
  :class:`~agentic_rag.datasets.crag.DataError` (``on_bad='fail'``). The number of bad lines is in the stats.
* Extra fields (allowed by ``CragRecord``): ``source`` (the data set), ``source_id`` (its own id),
  ``gold_page_urls`` (the ``page_url`` of the pages that answer: SQuAD's own paragraph, NQ's gold passage,
  RGB's positive snippets, HotpotQA's supporting paragraphs; empty when nothing answers), RGB's and HotpotQA's
  ``variant``, RGB's ``fake_answer`` and HotpotQA's ``removed_paragraph``.
"""

from agentic_rag.datasets.prepare.crag import normalise_split, prepare_crag
from agentic_rag.datasets.prepare.hotpotqa import prepare_hotpotqa
from agentic_rag.datasets.prepare.nq import prepare_nq
from agentic_rag.datasets.prepare.rgb import prepare_rgb
from agentic_rag.datasets.prepare.squad2 import prepare_squad2

__all__ = ["normalise_split", "prepare_crag", "prepare_hotpotqa", "prepare_nq", "prepare_rgb", "prepare_squad2"]
