"""A tiny reader of the WordNet 3.x database files: lemmas, antonyms and base forms.

Only what the spurious-correlation measures need (:mod:`aflite_core.measures.spurious`): which lemmas are antonyms of
which, and the base forms of an inflected word. It reads the plain-text database that Debian's
``wordnet-base`` package installs (``data.*``, ``index.*``, ``*.exc``), never downloads anything and does not
need nltk.

Where the files are: the directory named by the ``AFLITE_WORDNET_DIR`` environment variable, else
``/usr/share/wordnet`` (Debian and Ubuntu: ``apt-get install wordnet-base``).

How antonyms are read: in a ``data.<pos>`` file every line is one synset::

    offset lex_filenum ss_type w_cnt word lex_id [word lex_id ...] p_cnt [ptr ...] [frames] | gloss
    ptr = pointer_symbol target_offset target_pos source/target

Antonymy (pointer symbol ``!``) is a *lexical* pointer: ``source/target`` holds two 2-digit hexadecimal word
numbers, the word of this synset and the word of the target synset it is the antonym of (``0000`` would mean
every word of the synset; WordNet does not use it for ``!``). ``target_offset`` is the byte offset of the target
synset's line in the target part of speech's data file. Lemmas are lowercased; adjective markers such as
``(a)``, ``(p)``, ``(ip)`` are dropped; multi-word lemmas keep their underscores (``ice_cold``) and so never
match a single token. The relation is stored symmetrically and without part of speech (``hot`` ↔ ``cold``
whatever the synsets).

Base forms (a minimal version of WordNet's ``morphy``): a word's base forms are the word itself when it is a
lemma, the bases listed for it in the exception lists (``noun.exc``, ``verb.exc``, ``adj.exc``, ``adv.exc``:
``went`` → ``go``), and the results of WordNet's suffix-detachment rules that are lemmas of that part of speech
(nouns: -s, -ses→-s, -xes→-x, -zes→-z, -ches→-ch, -shes→-sh, -men→-man, -ies→-y; verbs: -s, -ies→-y, -es→-e,
-es, -ed→-e, -ed, -ing→-e, -ing; adjectives: -er, -est, -er→-e, -est→-e). Unlike ``morphy`` every part of
speech is tried and every candidate kept.

The parsed database is cached per directory (:func:`functools.lru_cache`), so it is read once per process
(about one second).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

__all__ = [
    "DEFAULT_WORDNET_DIR",
    "WORDNET_DIR_ENV",
    "WordNet",
    "antonyms",
    "base_forms",
    "find_wordnet_dir",
    "load_wordnet",
]

#: environment variable naming the WordNet database directory
WORDNET_DIR_ENV = "AFLITE_WORDNET_DIR"
#: where Debian's ``wordnet-base`` installs the database
DEFAULT_WORDNET_DIR = "/usr/share/wordnet"

_POS_FILE = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
_PARTS = ("noun", "verb", "adj", "adv")
_DETACHMENT = {
    "noun": (
        ("s", ""),
        ("ses", "s"),
        ("xes", "x"),
        ("zes", "z"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("men", "man"),
        ("ies", "y"),
    ),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}
_MARKER = re.compile(rb"\([a-z]+\)$")


def find_wordnet_dir(path: str | os.PathLike | None = None) -> Path:
    """Locate the WordNet database directory.

    Parameters
    ----------
    path : str or path-like, optional
        The directory. Default: the ``AFLITE_WORDNET_DIR`` environment variable, else ``/usr/share/wordnet``.

    Returns
    -------
    Path
        The directory, which holds ``data.noun``, ``data.verb``, ``data.adj`` and ``data.adv``.

    Raises
    ------
    ValueError
        When the directory or one of its data files is missing (with the install hint).
    """
    if path is None:
        path = os.environ.get(WORDNET_DIR_ENV) or DEFAULT_WORDNET_DIR
    directory = Path(path)
    missing = [f"data.{part}" for part in _PARTS if not (directory / f"data.{part}").is_file()]
    if missing:
        where = "does not exist" if not directory.is_dir() else f"has no {', '.join(missing)}"
        raise ValueError(
            f"The WordNet database directory '{directory}' {where}. Install it with "
            f"`apt-get install wordnet-base` (Debian/Ubuntu), or point the {WORDNET_DIR_ENV} environment variable "
            "at a directory holding WordNet 3's data.* and index.* files."
        )
    return directory


@dataclass(frozen=True, eq=False)
class WordNet:
    """The parts of WordNet the spurious-correlation measures use (build it with :func:`load_wordnet`).

    Attributes
    ----------
    directory : Path
        Where the database was read from.
    lemmas : dict of str to frozenset of str
        Lemmas per part of speech (``"noun"``, ``"verb"``, ``"adj"``, ``"adv"``), lowercased.
    antonym_table : dict of str to frozenset of str
        Lemma → its antonym lemmas (symmetric, any part of speech).
    exceptions : dict of str to dict of str to tuple of str
        Per part of speech, inflected form → base forms (the ``*.exc`` lists).
    """

    directory: Path
    lemmas: dict[str, frozenset[str]]
    antonym_table: dict[str, frozenset[str]]
    exceptions: dict[str, dict[str, tuple[str, ...]]]
    _forms_cache: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False)

    def base_forms(self, word: str) -> tuple[str, ...]:
        """Base forms of ``word`` found in WordNet (see the module notes); empty when there are none."""
        word = word.lower()
        cached = self._forms_cache.get(word)
        if cached is not None:
            return cached
        found: dict[str, None] = {}
        for part in _PARTS:
            lemmas = self.lemmas[part]
            if word in lemmas:
                found[word] = None
            for base in self.exceptions[part].get(word, ()):
                found[base] = None
            for suffix, ending in _DETACHMENT[part]:
                if len(word) > len(suffix) and word.endswith(suffix):
                    candidate = word[: len(word) - len(suffix)] + ending
                    if candidate in lemmas:
                        found[candidate] = None
        forms = tuple(found)
        if len(self._forms_cache) < 200_000:
            self._forms_cache[word] = forms
        return forms

    def antonyms(self, word: str) -> frozenset[str]:
        """Antonym lemmas of ``word`` and of its base forms (empty when WordNet has none)."""
        forms = self.base_forms(word) or (word.lower(),)
        out: set[str] = set()
        for form in forms:
            out.update(self.antonym_table.get(form, ()))
        return frozenset(out)

    def are_antonyms(self, word_a: str, word_b: str) -> bool:
        """Whether a base form of ``word_b`` is an antonym of a base form of ``word_a``."""
        targets = self.antonyms(word_a)
        return any(form in targets for form in (self.base_forms(word_b) or (word_b.lower(),)))


def _data_lines(raw: bytes) -> Iterable[bytes]:
    for line in raw.split(b"\n"):
        if line and not line.startswith(b"  "):  # the licence header lines start with two spaces
            yield line


def _synset_words(fields: list[bytes]) -> list[str]:
    w_cnt = int(fields[3], 16)
    return [_MARKER.sub(b"", w).decode("utf-8").lower() for w in fields[4 : 4 + 2 * w_cnt : 2]]


def _line_at(raw: bytes, offset: int) -> list[bytes]:
    end = raw.find(b"\n", offset)
    return raw[offset : end if end >= 0 else len(raw)].split(b" | ", 1)[0].split()


@lru_cache(maxsize=4)
def _load(directory: str) -> WordNet:
    root = Path(directory)
    data: dict[str, bytes] = {part: (root / f"data.{part}").read_bytes() for part in _PARTS}
    table: dict[str, set[str]] = {}
    try:
        for raw in data.values():
            for line in _data_lines(raw):
                if b" ! " not in line:
                    continue
                fields = line.split(b" | ", 1)[0].split()
                words = _synset_words(fields)
                at = 4 + 2 * int(fields[3], 16)
                for k in range(int(fields[at])):
                    symbol, target, pos, src_tgt = fields[at + 1 + 4 * k : at + 5 + 4 * k]
                    if symbol != b"!":
                        continue
                    target_words = _synset_words(_line_at(data[_POS_FILE[pos.decode()]], int(target)))
                    src, tgt = int(src_tgt[:2], 16), int(src_tgt[2:], 16)
                    sources = words if src == 0 else [words[src - 1]]
                    targets = target_words if tgt == 0 else [target_words[tgt - 1]]
                    for a in sources:
                        for b in targets:
                            table.setdefault(a, set()).add(b)
                            table.setdefault(b, set()).add(a)
    except (IndexError, ValueError, KeyError) as exc:
        raise ValueError(
            f"The WordNet database in '{root}' could not be parsed ({type(exc).__name__}: {exc}); "
            "expected WordNet 3 data.* files (apt-get install wordnet-base)."
        ) from None
    lemmas: dict[str, frozenset[str]] = {}
    exceptions: dict[str, dict[str, tuple[str, ...]]] = {}
    for part in _PARTS:
        index = root / f"index.{part}"
        if index.is_file():
            names = {line.split(b" ", 1)[0] for line in _data_lines(index.read_bytes())}
            lemmas[part] = frozenset(n.decode("utf-8").lower() for n in names)
        else:  # fall back to the lemmas of the data file
            names_set: set[str] = set()
            for line in _data_lines(data[part]):
                names_set.update(_synset_words(line.split(b" | ", 1)[0].split()))
            lemmas[part] = frozenset(names_set)
        exc_file = root / f"{part}.exc"
        rules: dict[str, tuple[str, ...]] = {}
        if exc_file.is_file():
            for line in exc_file.read_text(encoding="utf-8", errors="replace").splitlines():
                parts = line.split()
                if len(parts) >= 2:
                    rules[parts[0].lower()] = tuple(p.lower() for p in parts[1:])
        exceptions[part] = rules
    return WordNet(
        directory=root,
        lemmas=lemmas,
        antonym_table={k: frozenset(v) for k, v in table.items()},
        exceptions=exceptions,
    )


def load_wordnet(directory: str | os.PathLike | None = None) -> WordNet:
    """Read (once per process and directory) the WordNet database.

    Parameters
    ----------
    directory : str or path-like, optional
        The database directory; default as in :func:`find_wordnet_dir`.

    Returns
    -------
    WordNet
        Lemmas, antonyms and exception lists.

    Raises
    ------
    ValueError
        When the database is missing or unreadable (the message says how to install it).

    Examples
    --------
    >>> wn = load_wordnet()
    >>> sorted(wn.antonyms("happy"))
    ['unhappy']
    >>> wn.base_forms("taller")
    ('tall',)
    """
    return _load(str(find_wordnet_dir(directory).resolve()))


def antonyms(word: str, *, wordnet_dir: str | os.PathLike | None = None) -> frozenset[str]:
    """Antonym lemmas of ``word`` (of any of its base forms) in WordNet.

    Parameters
    ----------
    word : str
        A word, in any case and inflection.
    wordnet_dir : str or path-like, optional
        The database directory; default as in :func:`find_wordnet_dir`.

    Returns
    -------
    frozenset of str
        Lowercased antonym lemmas; empty when WordNet lists none.

    Examples
    --------
    >>> sorted(antonyms("Hot"))
    ['cold']
    """
    if not isinstance(word, str):
        raise TypeError(f"The 'word' parameter of antonyms must be a str. Got {word!r} instead.")
    return load_wordnet(wordnet_dir).antonyms(word)


def base_forms(word: str, *, wordnet_dir: str | os.PathLike | None = None) -> tuple[str, ...]:
    """Base forms of ``word`` that are WordNet lemmas (exception lists, then suffix rules).

    Parameters
    ----------
    word : str
        A word, in any case and inflection.
    wordnet_dir : str or path-like, optional
        The database directory; default as in :func:`find_wordnet_dir`.

    Returns
    -------
    tuple of str
        The forms found (the word itself first when it is a lemma); empty when there are none.

    Examples
    --------
    >>> base_forms("went")
    ('go',)
    """
    if not isinstance(word, str):
        raise TypeError(f"The 'word' parameter of base_forms must be a str. Got {word!r} instead.")
    return load_wordnet(wordnet_dir).base_forms(word)
