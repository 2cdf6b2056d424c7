"""Multi-hop questions and their pages (HotpotQA's, by hand), for the evidence chain's tests."""

from __future__ import annotations

from studies.chain_report import question_plan

BRIDGE_Q = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"


FILM = ("Kiss and Tell (1945 film)", "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley "
        "Temple as Corliss Archer. In the film, two teenage girls cause their respective parents much concern.")


PERSON = ("Shirley Temple", "Shirley Temple Black was an American actress, singer, dancer and diplomat. As an adult, "
          "she was named United States ambassador to Ghana and to Czechoslovakia and also served as Chief of Protocol "
          "of the United States.")


OTHER = ("Meet Corliss Archer", "Meet Corliss Archer is an American radio sitcom. The program was an adaptation of "
         "the radio series of the same name.")


COMPARE_Q = "Who is older, Annie Morton or Terry Richardson?"


MORTON = ("Annie Morton", "Annie Morton (born October 8, 1970) is an American model born in Pennsylvania. She has been "
          "photographed by Terry Richardson and Peter Lindbergh.")


RICHARDSON = ("Terry Richardson", "Terrence Richardson (born August 14, 1965) is an American fashion and portrait "
              "photographer.")


def chain_passages(*pages: tuple[str, str]) -> list[dict]:
    return [{"n": i, "page_name": name, "text": text, "chunk_id": f"c{i}"} for i, (name, text) in enumerate(pages, 1)]


def hop_plan_of(question: str):
    return question_plan(question)[0]  # as the agent's anchor step plans it
