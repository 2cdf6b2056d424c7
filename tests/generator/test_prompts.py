"""Prompt files are checked against the placeholders their callers fill, when they are read."""

from __future__ import annotations

import shutil

import pytest

from agentic_rag import prompts
from agentic_rag.prompts import TEMPLATE_FIELDS, PromptTemplateError, load_prompt, render


@pytest.fixture
def edited_prompts(tmp_path, monkeypatch):
    """A copy of the shipped prompt files that a test may edit, read instead of the shipped ones."""
    folder = tmp_path / "prompts"
    shutil.copytree(prompts.prompts_dir(), folder)
    monkeypatch.setattr(prompts, "prompts_dir", lambda: folder)
    load_prompt.cache_clear()
    yield folder
    load_prompt.cache_clear()


def test_every_shipped_template_holds_exactly_its_placeholders():
    shipped = {p.stem for p in prompts.prompts_dir().glob("*.txt")}
    assert shipped == set(TEMPLATE_FIELDS)  # no template file without its declared fields, and none missing
    for name in TEMPLATE_FIELDS:
        load_prompt(name)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("{sources}", "the sources"), r"missing \{sources\}"),
    (lambda t: t + "\nContext: {context}", r"unknown \{context\}"),
    (lambda t: t + "\nA lone { brace", r"literal brace"),
    (lambda t: t + "\nJSON like {0}", r"\{0\} is not a name"),
])
def test_an_edited_template_with_other_placeholders_is_one_clear_error(edited_prompts, edit, message):
    path = edited_prompts / "answer_user.txt"
    path.write_text(edit(path.read_text()))
    with pytest.raises(PromptTemplateError, match=message) as info:
        prompts.answer_messages("q?", {"passages": []})
    assert "answer_user.txt" in str(info.value)


def test_literal_braces_are_kept_and_a_caller_out_of_step_is_a_bug(edited_prompts):
    path = edited_prompts / "grade_user.txt"
    path.write_text(path.read_text() + '\nReply as {{"relevant": true}}.')
    assert '{"relevant": true}' in render("grade_user", question="q", passage="p")
    with pytest.raises(TypeError, match="grade_user takes"):
        render("grade_user", question="q")
