"""Text a reader sees in forms a main-text extractor drops: CSS ``::before`` / ``::after`` content, SVG
text, a frame's ``srcdoc``, a figure's caption, an article's header, an open dialog, a marquee, a button, a
text area, an input's value and a drop-down's selected option. Each kind with the sentence a reader sees;
read by tests/ingest/test_ingest_retrieval.py and the silent_loss reliability case."""

from __future__ import annotations

from testkit.hostile import article

SHOWN: dict[str, tuple[str, str]] = {  # kind: (markup, the sentence it shows)
    "css_before": ('<style>.fact::before{content:"The Amberly lighthouse was lit in 1874. "}</style>'
                   '<p class="fact">Harbour notes.</p>', "The Amberly lighthouse was lit in 1874."),
    "css_after": ('<style>.note:after{content:" The Brindlecombe mill closed in 1921."}</style>'
                  '<p class="note">Mill notes.</p>', "The Brindlecombe mill closed in 1921."),
    "svg_text": ('<svg width="600" height="40"><text x="0" y="20">The Corvantis dam holds forty million cubic '
                 'metres.</text></svg>', "The Corvantis dam holds forty million cubic metres."),
    "iframe_srcdoc": ('<iframe srcdoc="&lt;p&gt;The Dunmarrow tunnel is three kilometres long.&lt;/p&gt;"></iframe>',
                      "The Dunmarrow tunnel is three kilometres long."),
    "figcaption": ('<figure><img src="ferry.png" alt=""><figcaption>The Elsworth ferry carries two hundred cars.'
                   '</figcaption></figure>', "The Elsworth ferry carries two hundred cars."),
    "article_header": ("<header>The Fenwick canal opened in 1805.</header>", "The Fenwick canal opened in 1805."),
    "open_dialog": ("<dialog open><p>The Galloway viaduct has twenty-one arches.</p></dialog>",
                    "The Galloway viaduct has twenty-one arches."),
    "marquee": ("<marquee>The Harrowgate market opens at dawn on Saturdays.</marquee>",
                "The Harrowgate market opens at dawn on Saturdays."),
    "button": ("<button>The Islay distillery tour costs fifteen pounds.</button>",
               "The Islay distillery tour costs fifteen pounds."),
    "textarea": ("<textarea readonly>The Jorvik museum holds forty thousand objects.</textarea>",
                 "The Jorvik museum holds forty thousand objects."),
    "input_value": ('<input type="text" readonly value="The Kestrel pass is closed in winter.">',
                    "The Kestrel pass is closed in winter."),
    "selected_option": ("<select><option>The Lockwood line runs hourly.</option><option selected>The Merriwether line "
                        "runs every ten minutes.</option></select>", "The Merriwether line runs every ten minutes."),
}


def shown_page() -> str:
    """One article holding every kind."""
    return article("".join(markup for markup, _ in SHOWN.values()))
