import bz2
import json
import os

import pytest

from agentic_rag.datasets.crag import DataError, ReadReport, find_record, iter_records, write_records


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_bundled_example_streams_with_normalised_fields():
    records = list(iter_records("example"))
    assert len(records) == 10
    assert all(len(r.search_results) == 5 for r in records)
    first = records[0]
    assert first.alternative_answers == []  # CRAG ships the string "[]"
    assert first.search_results[0].page_result.lstrip().lower().startswith("<!doctype html")


def test_numbers_and_list_strings_are_normalised(tmp_path):
    rows = [
        {"interaction_id": "a", "query": "q1", "answer": 12, "alternative_answers": "['twelve', 12.0]"},
        {"interaction_id": 7, "query": "q2", "answer": 2.5, "alternative_answers": ["x"]},
    ]
    path = _write(tmp_path / "d.jsonl", [json.dumps(r) for r in rows])
    a, b = iter_records(path)
    assert a.answer == "12" and a.alternative_answers == ["twelve", "12"]
    assert b.interaction_id == "7" and b.answer == "2.5"


def test_bad_records_are_reported_with_line_numbers_and_skipped(tmp_path):
    path = _write(
        tmp_path / "d.jsonl",
        [
            json.dumps({"interaction_id": "ok1", "query": "fine"}),
            "{not json",
            json.dumps({"interaction_id": "noq", "query": "  "}),
            json.dumps({"interaction_id": "ok2", "query": "also fine"}),
        ],
    )
    report = ReadReport(str(path))
    ids = [r.interaction_id for r in iter_records(path, report=report)]
    assert ids == ["ok1", "ok2"]
    assert [b.line for b in report.bad] == [2, 3]
    assert "bad JSON" in report.bad[0].reason and "query" in report.bad[1].reason
    assert str(report.bad[0]).startswith(f"{path}:2:")


def test_fail_mode_raises_at_the_bad_line(tmp_path):
    path = _write(tmp_path / "d.jsonl", [json.dumps({"interaction_id": "x", "query": "q"}), "[1, 2]"])
    with pytest.raises(DataError, match=r"d.jsonl:2"):
        list(iter_records(path, on_bad="fail"))


def test_bz2_roundtrip_and_find(tmp_path):
    records = list(iter_records("example"))[:3]
    out = tmp_path / "sub" / "three.jsonl.bz2"
    assert write_records(records, out) == 3
    with bz2.open(out, "rt") as fh:
        assert len(fh.readlines()) == 3
    again = list(iter_records(out))
    assert [r.query for r in again] == [r.query for r in records]
    assert find_record(out, records[1].interaction_id).query == records[1].query
    assert find_record(out, "@2").query == records[2].query
    with pytest.raises(DataError, match="no record"):
        find_record(out, "missing-id")


def test_missing_dataset_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        list(iter_records(tmp_path / "nope.jsonl"))


def test_a_dataset_from_a_pipe_is_refused_not_read_in_part(tmp_path):
    from testkit.records import toy_dataset

    data = toy_dataset(tmp_path, n=3).read_bytes()
    read, write = os.pipe()
    os.write(write, data)  # a few kB: the pipe holds it all
    os.close(write)
    try:
        with pytest.raises(DataError, match="is a pipe or a device, not a file"):
            list(iter_records(f"/dev/fd/{read}"))
    finally:
        os.close(read)


def test_a_field_that_exhausts_the_parser_is_one_bad_record(tmp_path):
    from testkit.bad_inputs import UNPARSABLE_LIST

    rows = [{"interaction_id": i, "query": "q", "alternative_answers": alt} for i, alt in
            (("a", "['x']"), ("b", UNPARSABLE_LIST), ("c", "[]"))]
    report = ReadReport("")
    ids = [r.interaction_id for r in iter_records(_write(tmp_path / "d.jsonl", [json.dumps(r) for r in rows]),
                                                  report=report)]
    assert ids == ["a", "c"]
    assert [(b.line, b.reason) for b in report.bad] == [(2, "alternative_answers: too deeply nested to read as a list")]


def test_an_exact_id_wins_and_a_position_is_asked_for_with_at(tmp_path):
    path = _write(tmp_path / "d.jsonl", [json.dumps({"interaction_id": i, "query": f"q{i}"}) for i in ("1", "0", "x")])
    assert find_record(path, "0").query == "q0" and find_record(path, "1").query == "q1"
    assert find_record(path, "@0").query == "q1" and find_record(path, "@2").query == "qx"
    with pytest.raises(DataError, match="no record with id '2' .*; for the one at 0-based position 2, give --id @2$"):
        find_record(path, "2")
    with pytest.raises(DataError, match="no record with id '@3' .*; there are 3, at positions @0 to @2$"):
        find_record(path, "@3")
