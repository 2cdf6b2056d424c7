"""Hand-made lexicon of anchor phrases: units and measures, awards, categories, tournaments, leagues.

Each entry maps a canonical lower-case phrase to its anchor type, a prior score and the lower-case
variants to look for in evidence text (the canonical phrase is always the first variant). Matching
in questions is case-insensitive and whole-phrase; every variant of an entry is also a trigger, so
"academy awards" and "oscars" both propose the award anchor, each with its own surface text.

Also here: the generic words that must never become anchors on their own ("company", "movie",
"today", question words) and the few words that are never title-cased before NER.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LexEntry:
    canonical: str
    type: str
    score: float
    variants: tuple[str, ...]


def _entries(type_: str, score: float, rows: list[tuple[str, ...] | str]) -> list[LexEntry]:
    out = []
    for row in rows:
        forms = (row,) if isinstance(row, str) else row
        out.append(LexEntry(canonical=forms[0], type=type_, score=score, variants=tuple(dict.fromkeys(forms))))
    return out


TOURNAMENTS = _entries("tournament", 0.92, [
    ("u.s. open", "us open", "united states open"),
    ("australian open", "aus open"),
    ("french open", "roland garros", "roland-garros"),
    ("wimbledon", "wimbledon championships"),
    ("masters tournament", "the masters", "masters", "augusta masters"),
    ("pga championship",),
    ("open championship", "british open", "the open championship"),
    ("ryder cup",),
    ("presidents cup",),
    ("super bowl",),
    ("fifa world cup", "world cup"),
    ("world cup", "fifa world cup"),
    ("women's world cup", "fifa women's world cup"),
    ("nba finals",),
    ("wnba finals",),
    ("nba championship", "nba finals", "nba title"),
    ("world series",),
    ("stanley cup", "stanley cup final", "stanley cup finals"),
    ("uefa champions league", "champions league"),
    ("champions league", "uefa champions league"),
    ("europa league", "uefa europa league"),
    ("olympics", "olympic games", "olympic"),
    ("olympic games", "olympics", "olympic"),
    ("summer olympics", "summer olympic games", "summer games"),
    ("winter olympics", "winter olympic games", "winter games"),
    ("paralympics", "paralympic games"),
    ("grand slam", "grand slams", "grand slam tournament"),
    ("tour de france",),
    ("indianapolis 500", "indy 500"),
    ("daytona 500",),
    ("kentucky derby",),
    ("march madness", "ncaa tournament", "ncaa division i men's basketball tournament"),
    ("ncaa tournament", "march madness"),
    ("final four",),
    ("copa america", "copa américa"),
    ("euro championship", "european championship", "uefa euro"),
    ("fa cup",),
    ("mls cup",),
    ("davis cup",),
    ("billie jean king cup", "fed cup"),
    ("atp finals",),
    ("wta finals",),
    ("drivers' championship", "drivers championship", "world drivers' championship", "formula one world championship"),
    ("constructors' championship", "constructors championship"),
    ("grand prix", "gp"),
    ("all-star game", "all star game"),
    ("nba draft",),
    ("nfl draft",),
])

AWARDS = _entries("award", 0.9, [
    ("oscar", "oscars", "academy award", "academy awards"),
    ("oscars", "oscar", "academy awards", "academy award"),
    ("academy award", "academy awards", "oscar", "oscars"),
    ("academy awards", "academy award", "oscars", "oscar"),
    ("grammy", "grammys", "grammy award", "grammy awards"),
    ("grammys", "grammy", "grammy awards", "grammy award"),
    ("emmy", "emmys", "emmy award", "emmy awards", "primetime emmy"),
    ("emmys", "emmy", "emmy awards", "emmy award"),
    ("golden globe", "golden globes", "golden globe award", "golden globe awards"),
    ("golden globes", "golden globe", "golden globe awards"),
    ("tony award", "tony awards", "tonys", "tony"),
    ("bafta", "baftas", "bafta award", "british academy film award"),
    ("nobel prize", "nobel", "nobel prizes", "nobel laureate"),
    ("pulitzer prize", "pulitzer"),
    ("booker prize", "man booker prize", "booker"),
    ("ballon d'or", "ballon d’or", "ballon dor"),
    ("palme d'or", "palme d’or"),
    ("mvp", "most valuable player"),
    ("finals mvp", "finals most valuable player"),
    ("most valuable player", "mvp"),
    ("heisman trophy", "heisman"),
    ("hart trophy", "hart memorial trophy"),
    ("vezina trophy",),
    ("norris trophy", "james norris memorial trophy"),
    ("art ross trophy",),
    ("conn smythe trophy",),
    ("cy young award", "cy young"),
    ("rookie of the year", "roy"),
    ("defensive player of the year", "dpoy"),
    ("sixth man of the year", "sixth man award"),
    ("coach of the year",),
    ("golden boot",),
    ("golden ball",),
    ("golden glove", "gold glove"),
    ("silver slugger",),
    ("sag award", "screen actors guild award", "sag awards"),
    ("critics' choice award", "critics choice award", "critics' choice"),
    ("mtv video music award", "mtv video music awards", "vma", "vmas"),
    ("billboard music award", "billboard music awards", "bbma"),
    ("american music award", "american music awards", "ama"),
    ("brit award", "brit awards", "brits"),
    ("hall of fame",),
    ("kennedy center honors",),
    ("fields medal",),
    ("turing award",),
    ("all-star", "all star", "all-stars"),
    ("all-nba", "all nba", "all-nba team"),
    ("best actor award", "best actor"),
    ("best actress award", "best actress"),
])

CATEGORIES = _entries("category", 0.88, [
    ("best picture",),
    ("best director",),
    ("best actor", "best actor in a leading role", "best performance by an actor"),
    ("best actress", "best actress in a leading role", "best performance by an actress"),
    ("best supporting actor", "best actor in a supporting role"),
    ("best supporting actress", "best actress in a supporting role"),
    ("best animated feature", "best animated feature film", "best animated film"),
    ("best animated feature film", "best animated feature", "best animated film"),
    ("best animated short film", "best animated short"),
    ("best visual effects", "best effects, visual effects", "visual effects"),
    ("best original screenplay",),
    ("best adapted screenplay",),
    ("best original song",),
    ("best original score",),
    ("best cinematography",),
    ("best film editing",),
    ("best costume design",),
    ("best makeup and hairstyling", "best makeup"),
    ("best production design",),
    ("best sound", "best sound mixing", "best sound editing"),
    ("best documentary feature", "best documentary"),
    ("best international feature film", "best international feature", "best foreign language film"),
    ("best foreign language film", "best international feature film"),
    ("best new artist",),
    ("album of the year",),
    ("record of the year",),
    ("song of the year",),
    ("best rap album",),
    ("best pop vocal album",),
    ("best country album",),
    ("best rock album",),
    ("outstanding drama series", "best drama series"),
    ("outstanding comedy series", "best comedy series"),
    ("best drama series", "outstanding drama series"),
    ("best comedy series", "outstanding comedy series"),
    ("50-40-90 club", "50–40–90 club", "50/40/90 club", "50-40-90"),
    ("triple-double", "triple double", "triple-doubles"),
    ("quadruple-double", "quadruple double"),
    ("double-double", "double double", "double-doubles"),
    ("number one hit", "number one", "number-one", "no. 1", "#1"),
    ("number one hits", "number one", "number-one", "no. 1", "#1"),
    ("#1", "number one", "number-one", "no. 1"),
    ("billboard hot 100", "hot 100"),
    ("billboard 200",),
])

GENRES = _entries("topic", 0.45, [
    ("r&b", "rhythm and blues"), ("hip hop", "hip-hop"), ("hip-hop", "hip hop"), "k-pop", "heavy metal",
    "country music", "jazz", "blues", "reggae", "reggaeton", "edm", "electronic music", "classical music",
    ("sci-fi", "science fiction"), ("science fiction", "sci-fi"), "film noir", "anime", "documentary",
])

LEAGUES = _entries("org", 0.86, [
    "nba", "nfl", "nhl", "mlb", "wnba", "mls", "ncaa", "fifa", "uefa", "atp", "wta", "pga", "lpga",
    "nascar", ("formula 1", "formula one", "f1"), ("f1", "formula 1", "formula one"),
    ("premier league", "english premier league", "epl"), "la liga", "serie a", "bundesliga", "ligue 1",
    ("dow jones", "dow jones industrial average", "djia", "the dow"),
    ("s&p 500", "s&p500", "s&p", "standard & poor's 500"),
    ("nasdaq", "nasdaq composite", "nasdaq-100"), "nyse", ("ftse 100", "ftse"), "nikkei 225", "russell 2000",
    ("imdb",), ("rotten tomatoes",),
])

UNITS = _entries("unit", 0.85, [
    ("per game", "per-game", "/game"),
    ("points per game", "ppg", "pts/g", "points a game"),
    ("rebounds per game", "rpg", "rebounds a game"),
    ("assists per game", "apg", "assists a game"),
    ("per season", "per-season"),
    ("per match",),
    ("per 36 minutes", "per 36"),
    ("per minute",),
    ("per capita",),
    ("3-point", "three-point", "3-pt", "3pt", "3 point", "three point", "3-pointers", "three-pointers", "3p"),
    ("3-pointers", "three-pointers", "3-point", "three-point", "3pt"),
    ("three-point", "3-point", "3-pt", "3pt", "three point", "3 point"),
    ("field goal percentage", "fg%", "field goal %", "field-goal percentage"),
    ("free throw percentage", "ft%", "free-throw percentage"),
    ("free throws", "free throw", "free-throw", "free-throws", "ft"),
    ("free throw", "free throws", "free-throw", "ft"),
    ("field goals", "field goal", "fg"),
    ("career high", "career-high"),
    ("regular season", "regular-season"),
    ("rookie season", "rookie year"),
    ("playoffs", "postseason", "play-offs", "playoff"),
    ("postseason", "playoffs", "post-season"),
    ("points", "point", "pts"),
    ("rebounds", "rebound", "reb"),
    ("assists", "assist", "ast"),
    ("steals", "steal", "stl"),
    ("blocks", "block", "blk"),
    ("turnovers", "turnover", "tov"),
    ("goals", "goal"),
    ("touchdowns", "touchdown", "td", "tds"),
    ("touchdown passes", "passing touchdowns", "td passes"),
    ("home runs", "home run", "hr", "homers"),
    ("rbi", "rbis", "runs batted in"),
    ("batting average", "avg"),
    ("passing yards", "pass yards", "yards passing"),
    ("rushing yards", "rush yards", "yards rushing"),
    ("receiving yards", "yards receiving"),
    ("yards", "yard", "yds"),
    ("interceptions", "interception", "int"),
    ("sacks", "sack"),
    ("saves", "save"),
    ("strikeouts", "strikeout"),
    ("career wins", "wins"),
    ("hat tricks", "hat trick", "hat-tricks", "hat-trick"),
    ("hat trick", "hat tricks", "hat-trick", "hat-tricks"),
    ("grand slam titles", "grand slam singles titles", "major titles", "majors"),
    ("ex-dividend", "ex dividend", "ex-div", "exdividend"),
    ("ex-dividend date", "ex dividend date", "ex-date", "ex-div date"),
    ("dividend yield", "yield"),
    ("dividends per share", "dividend per share", "dps"),
    ("dividend", "dividends"),
    ("dividends", "dividend"),
    ("payout ratio",),
    ("market cap", "market capitalization", "market capitalisation", "mkt cap"),
    ("market capitalization", "market cap", "market capitalisation", "mkt cap"),
    ("market capitalizations", "market cap", "market capitalization"),
    ("eps", "earnings per share"),
    ("earnings per share", "eps"),
    ("p/e ratio", "p/e", "pe ratio", "price-to-earnings", "price/earnings", "price to earnings"),
    ("pe ratio", "p/e ratio", "p/e", "price-to-earnings", "price/earnings"),
    ("price-to-book", "p/b", "price/book", "price to book"),
    ("debt-to-equity ratio", "debt-to-equity", "debt to equity", "d/e ratio"),
    ("return on equity", "roe"),
    ("net income", "net earnings", "net profit"),
    ("operating income", "operating profit"),
    ("gross margin", "gross profit margin"),
    ("free cash flow", "fcf"),
    ("closing price", "close price", "closed at", "close"),
    ("opening price", "open price", "opened at"),
    ("trading volume", "volume"),
    ("52-week high", "52 week high"),
    ("52-week low", "52 week low"),
    ("all-time high", "all time high", "record high"),
    ("stock price", "share price", "price per share"),
    ("share price", "stock price", "price per share"),
    ("shares outstanding", "outstanding shares"),
    ("stock split", "split"),
    ("ipo", "initial public offering"),
    ("quarterly earnings", "earnings"),
    ("revenue", "revenues", "sales", "net sales", "total revenue"),
    ("annual revenue", "revenue", "revenues"),
    ("net worth",),
    ("gdp", "gross domestic product"),
    ("inflation rate", "inflation"),
    ("interest rate", "interest rates"),
    ("unemployment rate", "unemployment"),
    ("box office", "box-office", "gross"),
    ("box office revenue", "box office", "box-office", "gross"),
    ("opening weekend",),
    ("domestic", "domestically", "north america", "north american", "u.s. and canada"),
    ("worldwide", "global", "globally", "world-wide"),
    ("international", "internationally", "overseas"),
    ("budget", "production budget"),
    ("runtime", "running time", "minutes"),
    ("feet", "foot", "ft"),
    ("miles", "mile", "mi"),
    ("kilometers", "kilometres", "kilometer", "kilometre", "km"),
    ("meters", "metres", "meter", "metre"),
    ("centimeters", "centimetres", "centimeter", "cm"),
    ("inches", "inch"),
    ("pounds", "pound", "lbs", "lb"),
    ("kilograms", "kilogram", "kg", "kilos"),
    ("tons", "ton", "tonnes", "tonne"),
    ("square miles", "sq mi", "square mile"),
    ("square kilometers", "km2", "km²", "sq km", "square kilometres"),
    ("acres", "acre"),
    ("mph", "miles per hour"),
    ("km/h", "kph", "kilometers per hour"),
    ("degrees", "degree", "°"),
    ("celsius", "°c"),
    ("fahrenheit", "°f"),
    ("percent", "%", "per cent", "percentage"),
    ("percentage", "%", "percent", "per cent"),
    ("years old", "year-old", "age"),
    ("population", "inhabitants", "residents"),
    ("height", "tall"),
    ("elevation", "altitude"),
])

# every written form of a unit of measure, to the measure it names ("km" -> kilometers): the judge reads a
# gold "8 km" as met by "8 kilometers"
MEASURE_VARIANTS: dict[str, str] = {
    variant: e.canonical for e in UNITS
    if e.canonical in {"feet", "miles", "kilometers", "meters", "centimeters", "inches", "pounds", "kilograms", "tons",
                       "square miles", "square kilometers", "acres", "mph", "km/h", "degrees", "celsius", "fahrenheit", "percent"}
    for variant in e.variants
}

# Measures that only count as anchors next to a number or a measuring cue ("in meters", "how many
# miles"): "darius miles" and "the feet of" are no units.
MEASURE_UNITS = frozenset("""
feet miles kilometers meters centimeters inches pounds kilograms tons acres degrees
""".split()) | frozenset({"square miles", "square kilometers"})

# Measures that are often incidental in a question get a lower prior than the scoping units
# ("per game", "ex-dividend", "domestic"), which decide whether evidence is about the right number.
_WEAK_UNITS = frozenset("""
points rebounds assists steals blocks turnovers goals touchdowns yards interceptions sacks saves
strikeouts revenue budget runtime height elevation population international percentage stock
dividend dividends
""".split()) | frozenset({
    "career wins", "annual revenue", "years old", "stock price", "share price", "trading volume",
    "closing price", "opening price", "degrees", "net worth", "free throws", "free throw", "field goals",
    "home runs", "quarterly earnings", "playoffs", "regular season", "rookie season", "grand prix",
    "number one hit", "number one hits", "#1", "all-star", "hall of fame", "stock split", "feet", "miles",
    "kilometers", "meters", "centimeters", "inches", "pounds", "kilograms", "tons", "acres",
})
_WEAK_SCORE = 0.72


def _reweigh(entries: list[LexEntry]) -> list[LexEntry]:
    return [
        LexEntry(e.canonical, e.type, _WEAK_SCORE, e.variants) if e.canonical in _WEAK_UNITS else e
        for e in entries
    ]


LEXICON: tuple[LexEntry, ...] = tuple(_reweigh(TOURNAMENTS + AWARDS + CATEGORIES + LEAGUES + UNITS + GENRES))

# Words that never become anchors on their own (after lemmatising plurals away).
GENERIC_WORDS = frozenset("""
a an the what which who whom whose when where why how whats what's is are was were be been being
company companies corporation firm business movie movies film films show shows series episode episodes
stock stocks share shares ticker price prices value values player players team teams club clubs
season seasons game games match matches sport sports league leagues today yesterday tomorrow tonight
now currently current recent recently latest last next past this that these those week weeks month
months day days year years time times decade decades century people person persons man woman men
women thing things one ones kind type types example examples number numbers amount total average
name names list lot lots many much more most less least few several some any all each every other
others another way ways part place places country countries city cities state states town world
album albums song songs track tracks book books author character characters record records title
titles date dates information info detail details fact facts question answer data result results
ceo coach director producer producers actor actress singer band member members founder founders
owner owners age height weight career win wins record
artist artists musician musicians rating ratings award awards winner winners role roles hero heroes
industry sector sectors market markets exchange exchanges investment investments listing listings
unit units child children kid kids wife husband son daughter parents father mother sibling siblings
inc corp corporation co ltd plc llc holdings group president vice king queen prince princess senator
governor mayor pope sir dr mr mrs ms miss lord lady brand brands product products version versions
abbreviation acronym term terms word words language languages genre genres style category categories
fan fans audience viewers listener listeners opponent opponents rival rivals partner partners
tell me please know give find show can could would will should does do did has have had
top best worst highest lowest largest biggest smallest longest shortest oldest youngest first second
third final end start beginning history
""".split())

# Question openers / interrogatives (never anchors, also cues for question_kind).
QUESTION_WORDS = frozenset("what which who whom whose when where why how whats".split())

# Generic words that often sit inside names ("Time Warner", "Manchester City", "Golden State
# Warriors"): not anchors alone, but the title-casing pass may capitalise them.
NAME_PART_WORDS = frozenset("time city state world club house united national royal".split())

# Words the title-casing pass leaves in lower case (verbs that parse as nouns in lower-case
# questions, measures, and words that only confuse NER when capitalised).
NEVER_TITLECASE = (GENERIC_WORDS - NAME_PART_WORDS) | frozenset("""
release released releases play played plays score scored scores miss missed drive drove rise rose
fall fell close closed open opened win won lose lost beat trade traded debut directed direct
located based born die died married divorced founded created made make average averaged took take
volume trading traded earnings dividend dividends performance performer ratio rate index usage
source length height distance size population capital level ranking rankings activity production
members founding overall percentage percent revenue profit income sales value worth gross budget
quarterly annual yearly monthly weekly daily reported highest lowest most least home
earn earned earns sell sold sells buy bought pay paid cost costs grow grew hit hits end ended begin
began start started perform performed sing sang write wrote act acted star starred go went come came
get got become became""".split())


def lexicon_index() -> dict[str, LexEntry]:
    """Every trigger phrase (canonical and variants, lower case) -> its entry; first entry wins."""
    index: dict[str, LexEntry] = {}
    for entry in LEXICON:
        index.setdefault(entry.canonical, entry)
    for entry in LEXICON:
        for v in entry.variants:
            # Short abbreviations such as "m", "ft", "in." are variants to find in evidence, never
            # triggers in a question (they collide with ordinary words).
            if len(v) <= 2 or v in {"in.", "avg", "int", "age", "gross", "close", "split", "yield",
                                    "volume", "sales", "earnings", "minutes", "tall", "save", "goal",
                                    "point", "block", "steal", "assist", "major", "majors",
                                    "olympic", "wins", "roy", "ama", "brits", "tony", "booker", "nobel",
                                    "ast", "reb", "blk", "stl", "tov", "tds", "pts", "yds", "mi", "lb",
                                    "lbs", "kg", "km", "cm", "sack", "overseas", "residents", "altitude",
                                    "inflation", "unemployment", "split", "the dow", "s&p", "gp", "ft",
                                    "inhabitants", "degree", "mile", "foot", "meter", "metre", "inch",
                                    "pound", "ton", "tonne", "acre", "yard", "interception",
                                    "strikeout", "turnover", "rebound", "goal", "touchdown", "°"}:
                continue
            index.setdefault(v, entry)
    # A leading article is no trigger of its own ("the masters tournament" -> "masters tournament").
    for phrase in [p for p in index if p.startswith("the ")]:
        entry = index.pop(phrase)
        index.setdefault(phrase[4:], entry)
    return index
