"""Finding English on a page meant to be in Chinese: the visible words a reader sees, not the data
(code, logs, configs, inputs, and what a page marks `translate="no"`: names, paths, what an engine
said), checked against the catalog's English and a list of common English words, so texts that
never went through the catalog (scripts' chart legends, third-party pages, Django's own) are
found too."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from tests.web.test_translations import po_entries

# Common English words of a UI and of sentences: any of them in a visible text is English left
# untranslated. Identifiers (GPU, CPU, MB, VC, SSH, API, YAML, JSON, Docker, Slurm, exit phrases)
# are none of them.
ENGLISH_WORDS = frozenset(
    """
    a about above add added after all already an and any are as ask asks at available back be
    been before below by can cancel cannot change changed choose clear click close could count
    create created current data day days delete details did do does done down each edit
    empty enter error errors every exit exited failed file files filter find first for found free
    from go has have here history home hour hours if in into is it its job jobs last later least
    less limit line lines list log logged login logout more most must name never new next no node
    nodes none not nothing now of off on one only open or other out over page password per please
    recent remove required reset results running save search see select selected show sign since
    some start started state status still stop stopped submit such task tasks than that the their
    them then there these this time to today total try type up update upload use used user users
    using view waiting was were what when where which while who why will with yes you your
    """.split()  # noqa: SIM905 (a list of words reads best as words)
)

# The text a reader sees: text nodes, and the titles, placeholders and labels of visible elements,
# outside code, logs, inputs' values and whatever is marked translate="no".
VISIBLE_TEXTS = """() => {
    const skip = "code, pre:not(.diagnostics), textarea, script, style, noscript, [translate=no], [hidden]";
    const seen = (element) => element && element.getClientRects().length > 0 && !element.closest(skip);
    const texts = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode;
        const text = node.textContent.trim();
        if (text && seen(node.parentElement)) texts.push(text);
    }
    const labelled = "[title], [placeholder], [aria-label], input[type=submit], input[type=button]";
    document.querySelectorAll(labelled).forEach((e) => {
        if (!seen(e)) return;
        for (const name of ["title", "placeholder", "aria-label"]) {
            if (e.getAttribute(name)) texts.push(e.getAttribute(name));
        }
        if (e.matches("input[type=submit], input[type=button]") && e.value) texts.push(e.value);
    });
    return texts;
}"""

# A word of prose: letters only, between spaces, CJK text or punctuation. A token holding a path,
# a setting or a placeholder (code/my-job, name=value, <% $secrets.name %>) is data, and a word in
# capitals an identifier (STOPPED, GPU).
TOKEN = re.compile(r"[^\s\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")
WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019]*")


def english_words(text: str) -> list[str]:
    words = []
    for token in TOKEN.findall(text):
        token = token.strip(".,;:!?()[]\"'\u201c\u201d\u2018\u2019\u2026")
        if WORD.fullmatch(token) and not token.isupper() and token.lower() in ENGLISH_WORDS:
            words.append(token)
    return words


def english_texts(page: Any) -> list[str]:
    """The visible texts of the page holding a common English word."""
    return sorted({text for text in page.evaluate(VISIBLE_TEXTS) if english_words(text)})


def visible_prose(page: Any) -> str:
    """The page's visible text, without what is data rather than words (code, logs, configs, inputs)."""
    return str(
        page.evaluate(
            """() => {
                const copy = document.body.cloneNode(true);
                const data = "code, pre, textarea, script, input, [hidden], [translate=no]";
                copy.querySelectorAll(data).forEach((e) => e.remove());
                document.body.append(copy);
                copy.style.position = "absolute";
                const text = copy.innerText;
                copy.remove();
                return text;
            }"""
        )
    )


PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w+\}|<[^>]+>")


@cache
def english_fragments() -> list[str]:
    """Each translated message's English text between its placeholders and markup."""
    fragments = set()
    for msgid, msgstr in po_entries():
        if msgstr == msgid:
            continue  # the same in both languages (IP, SSH, API...)
        for fragment in PLACEHOLDER.split(msgid.replace('\\"', '"')):
            fragment = fragment.strip(" .,:;()“”\"'…·-")
            # What the translation keeps as it is (GPU, CPU, OpenPAI) is an identifier, not English.
            if re.search(r"[A-Za-z]{3}", fragment) and fragment not in msgstr:
                fragments.add(fragment)
    return sorted(fragments, key=len, reverse=True)


def english_on(page: Any) -> list[str]:
    """The catalog's English strings and the texts holding a common English word the page shows."""
    text = visible_prose(page)
    catalog = [f for f in english_fragments() if re.search(rf"(?<![A-Za-z]){re.escape(f)}(?![A-Za-z])", text)]
    return catalog + english_texts(page)
