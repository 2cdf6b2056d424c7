import numpy as np
import pytest

from agentic_rag.configuration import Settings
from agentic_rag.datasets.crag import CragRecord, iter_records
from agentic_rag.ingest import ingest
from agentic_rag.ingest.ingest import build_corpus_index, index_for_record, pages_from_record, record_cache_key
from agentic_rag.ingest.pages import html_to_text, make_page
from agentic_rag.retrieval.chunks import chunk_page
from agentic_rag.retrieval.embeddings import get_embedder
from agentic_rag.retrieval.hybrid import HybridIndex
from agentic_rag.text import tokenize
from agentic_rag.workers.source import retrieve
from testkit.hostile import article, too_deep
from testkit.shown_pages import SHOWN, shown_page

HTML = """<html><head><title>T</title><script>var tracking = 'SCRIPTJUNK';</script>
<style>.x{color:red}</style></head><body><nav>Home | About | NAVJUNK</nav>
<article><h1>Giraffes</h1><p>The giraffe is the tallest living terrestrial animal. Adult giraffes are
4.3 to 5.7 metres tall. They live in African savannas and eat acacia leaves.</p>
<p>Giraffes have long necks with seven vertebrae, the same number as humans.
A giraffe's heart weighs about 11 kilograms.</p></article><footer>Copyright FOOTJUNK</footer></body></html>"""


def test_html_main_text_drops_scripts_and_boilerplate():
    text = html_to_text(HTML)
    assert "tallest living terrestrial animal" in text
    assert "SCRIPTJUNK" not in text and "color:red" not in text
    assert html_to_text("plain   text\n\n\n\nkept") == "plain text\n\nkept"


@pytest.mark.parametrize("kind", sorted(SHOWN))
def test_text_a_reader_sees_is_extracted(kind):
    # before: the main extractor dropped each (trafilatura drops buttons, figures, dialogs, inputs, SVG and
    # frames by their tag, and never sees CSS generated content); the flat path dropped some too
    markup, sentence = SHOWN[kind]
    pages = {"tree": article(markup), "flat (nested past the tree parser's depth)": too_deep(markup)}
    assert [path for path, page in pages.items() if sentence not in html_to_text(page)] == []


def test_a_page_holding_every_kind_of_drawn_text_keeps_each_and_no_unselected_option():
    text = html_to_text(shown_page())
    assert [k for k, (_, sentence) in SHOWN.items() if sentence not in text] == []
    assert "Lockwood" not in text  # the drop-down's other option is not on screen


def test_chunks_keep_metadata_and_exact_offsets():
    page = make_page(HTML * 1, page_name="Giraffe", page_url="https://x/g", page_last_modified="2024-01-01", page_index=3)
    long_page = make_page(" ".join(f"Sentence number {i} about giraffes." for i in range(200)), page_url="u")
    for pg in (page, long_page):
        chunks = chunk_page(pg, chunk_size=200, overlap=40, min_chars=10)
        assert chunks
        for c in chunks:
            assert pg.text[c.start : c.end] == c.text
            assert c.page_url == pg.page_url and c.page_index == pg.page_index
    chunks = chunk_page(long_page, chunk_size=200, overlap=40, min_chars=10)
    assert len(chunks) > 10
    assert all(b.start < a.end for a, b in zip(chunks, chunks[1:]))  # consecutive chunks overlap


@pytest.fixture(scope="module")
def toy_index():
    """Five one-sentence pages, built once: the tests below only search them."""
    settings = Settings.load()
    docs = {
        "cats": "Cats are small domesticated carnivores that purr and chase mice.",
        "dogs": "Dogs are loyal domesticated animals that bark and fetch sticks.",
        "tax": "The 2023 corporate tax rate in Ireland is 12.5 percent for trading income.",
        "rain": "Rainfall in the Amazon basin exceeds 2000 millimetres per year.",
        "cats2": "Cats purr when content and are small domesticated carnivores hunting mice.",
    }
    pages = [make_page(t, page_name=k, page_url=f"toy://{k}", page_index=i) for i, (k, t) in enumerate(docs.items())]
    return HybridIndex.build(pages, get_embedder(settings), 500, 50, 10)


def test_hybrid_search_returns_all_three_scores(toy_index):
    hits = toy_index.search("What is the corporate tax rate in Ireland?", k=3, pool_k=5, mmr_lambda=1.0)
    assert hits[0].chunk.page_name == "tax"
    assert hits[0].bm25_score > 0 and hits[0].vector_score > 0.3 and hits[0].fused_score > 0
    assert [h.rank for h in hits] == [1, 2, 3]
    # a BM25-only term: the exact number only matches lexically
    assert toy_index.search("12.5", k=1, pool_k=5)[0].chunk.page_name == "tax"


def test_rrf_fusion_beats_each_single_ranking_for_mixed_queries(toy_index):
    hits = toy_index.search("purring pets that hunt mice", k=5, pool_k=5, mmr_lambda=1.0)
    fused = [h.fused_score for h in hits]
    assert fused == sorted(fused, reverse=True)
    assert {hits[0].chunk.page_name, hits[1].chunk.page_name} == {"cats", "cats2"}


def test_mmr_prefers_diversity(toy_index):
    relevance_only = toy_index.search("cats purr and chase mice", k=2, pool_k=5, mmr_lambda=1.0)
    diverse = toy_index.search("cats purr and chase mice", k=2, pool_k=5, mmr_lambda=0.1)
    assert {h.chunk.page_name for h in relevance_only} == {"cats", "cats2"}
    assert len({h.chunk.page_name for h in diverse} & {"cats", "cats2"}) == 1


def test_bonus_hook_reorders(toy_index):
    plain = toy_index.search("domesticated animals", k=5, pool_k=5, mmr_lambda=1.0)
    boosted = toy_index.search(
        "domesticated animals", k=5, pool_k=5, mmr_lambda=1.0,
        bonus=lambda c: 1.0 if "Amazon" in c.text else 0.0,
    )
    assert plain[0].chunk.page_name != "rain"
    assert boosted[0].chunk.page_name == "rain" and boosted[0].bonus == 1.0
    assert all(0.0 <= h.fused_score <= 1.0 for h in plain)  # fused scores are scaled to [0, 1]


def test_save_load_roundtrip(settings, tmp_path, toy_index):
    toy_index.save(tmp_path / "idx")
    again = HybridIndex.load(tmp_path / "idx", get_embedder(settings))
    a = toy_index.search("tax in Ireland", k=3, pool_k=5)
    b = again.search("tax in Ireland", k=3, pool_k=5)
    assert [p.chunk_id for p in a] == [p.chunk_id for p in b]
    assert np.allclose([p.fused_score for p in a], [p.fused_score for p in b])
    with pytest.raises(FileNotFoundError, match="not an index folder"):
        HybridIndex.load(tmp_path, get_embedder(settings))


def test_per_question_index_is_cached_on_disk(own_index_cache):
    settings = own_index_cache
    record = list(iter_records("example"))[6]  # the example record with the least text to embed
    pages = pages_from_record(record, settings)
    assert len(pages) == 5 and all(p.text for p in pages)
    index = index_for_record(record, settings)
    cache = list((settings.paths.ARTIFACTS_DIR / "cache" / "questions").iterdir())
    assert len(cache) == 1 and (cache[0] / "manifest.json").is_file()
    hits = retrieve(index, record.query, settings)
    assert 0 < len(hits) <= settings.retrieval.RETRIEVAL_K
    for h in hits:
        page = index.page(h.chunk.page_id)
        assert page.text[h.chunk.start : h.chunk.end] == h.text


def test_index_cache_dir_moves_the_per_question_cache_and_is_read_back(own_index_cache, tmp_path, monkeypatch):
    elsewhere = own_index_cache.replace(INDEX_CACHE_DIR=str(tmp_path / "shared"))
    record = CragRecord(interaction_id="toy-cache", query="how tall is the eiffel tower?", search_results=[
        {"page_name": "Eiffel", "page_url": "toy://eiffel", "page_result": "The Eiffel Tower is 330 metres tall."}])
    built = index_for_record(record, elsewhere)
    key = record_cache_key(record, elsewhere)
    assert [p.name for p in (tmp_path / "shared" / "questions").iterdir()] == [key]
    assert not (elsewhere.paths.ARTIFACTS_DIR / "cache").exists()
    ingest._MEMORY.clear()  # as a new process would: read from the folder, not rebuilt
    monkeypatch.setattr(HybridIndex, "build", lambda *a, **k: pytest.fail("rebuilt instead of read from the cache"))
    again = index_for_record(record, elsewhere)
    assert again is not built and [c.text for c in again.chunks] == [c.text for c in built.chunks]


def test_corpus_ingest_from_a_folder(settings, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "giraffe.html").write_text(HTML)
    (folder / "notes.md").write_text("# Notes\n\nThe Eiffel Tower is 330 metres tall and stands in Paris.")
    (folder / "ignored.bin").write_bytes(b"\x00\x01")
    stats = build_corpus_index(folder, tmp_path / "idx", settings, progress=False)
    assert stats["pages"] == 2 and stats["chunks"] >= 2
    index = HybridIndex.load(tmp_path / "idx", get_embedder(settings))
    assert retrieve(index, "How tall is the Eiffel Tower?", settings, k=1)[0].chunk.page_name == "notes"


def test_tokenizer_drops_stop_words_keeps_numbers():
    assert tokenize("The 50-40-90 club in Q1 2024") == ["50", "40", "90", "club", "q1", "2024"]


def test_parallel_first_use_loads_the_embedding_model_once(monkeypatch):
    """Workers fan out in threads and all reach for the model on their first question: one load."""
    import threading
    import time

    import sentence_transformers

    from agentic_rag.retrieval import embeddings

    loads = []
    real = sentence_transformers.SentenceTransformer

    def slow_counting_load(*args, **kwargs):
        loads.append(threading.get_ident())
        time.sleep(0.2)  # widen the window in which an unguarded cache would load again
        return real(*args, **kwargs)

    def clear_caches():
        for name in ("_load", "_load_once", "_embedder"):
            getattr(getattr(embeddings, name, None), "cache_clear", lambda: None)()

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", slow_counting_load)
    clear_caches()
    got = []
    threads = [threading.Thread(target=lambda: got.append(embeddings._load("packaged"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    clear_caches()  # later tests load the real model again, whatever this test saw
    assert len(loads) == 1 and len(got) == 4 and all(m is got[0] for m in got)


def test_records_sharing_page_text_keep_their_own_page_names_and_dates(settings):
    """The per-record cache is keyed by every field a chunk carries, not only the page text: a chunk
    must report the date and name of the record it was asked for (the freshness check reads them)."""
    from agentic_rag.datasets.crag import CragRecord

    text = "<html><body><p>" + "The harbour bridge opened to traffic in the spring of that year. " * 4 + "</p></body></html>"

    def record(name: str, date: str) -> CragRecord:
        return CragRecord(interaction_id=name, query="when did the bridge open?", search_results=[
            {"page_name": name, "page_url": "https://example.org/bridge", "page_snippet": "",
             "page_result": text, "page_last_modified": date}])

    old = index_for_record(record("old page", "Mon, 01 Jan 2001 00:00:00 GMT"), settings)
    new = index_for_record(record("new page", "Tue, 02 Feb 2024 00:00:00 GMT"), settings)
    assert {c.page_name for c in old.chunks} == {"old page"} and {c.page_name for c in new.chunks} == {"new page"}
    assert {c.page_last_modified for c in new.chunks} == {"Tue, 02 Feb 2024 00:00:00 GMT"}
