"""Offline WordNet 3.0 through NLTK, from a location the caller names: argent's one WordNet loader
(used by the hard-negative miner and by ``argent taxonomy``, the hiershapes taxonomy generator).

NLTK reads WordNet from ``<folder>/corpora/wordnet.zip`` (or an unzipped ``corpora/wordnet/``) for
any folder on ``nltk.data.path``. Recent NLTK refuses symbolic links and paths outside that list,
so the zip must be a real file inside the folder; ``stage_wordnet`` copies one there.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import warnings
import zipfile
import zlib
from pathlib import Path
from typing import Any

from argent.io import ArgentError

HOW_TO_GET = (
    "Get WordNet 3.0 in NLTK layout with `python -m nltk.downloader -d <folder> wordnet` (needs network "
    "once), or copy an existing wordnet.zip to <folder>/corpora/wordnet.zip "
    "(argent.wordnet.stage_wordnet does this); then pass --nltk-data <folder> "
    "(config key `nltk_data`) or set NLTK_DATA=<folder>."
)


class WordNetNotFound(ArgentError, RuntimeError):
    """WordNet is not at the named location (or nowhere NLTK looks, when none is named)."""


def _has_wordnet(folder: Path) -> bool:
    corpora = folder / "corpora"
    return (corpora / "wordnet.zip").is_file() or (corpora / "wordnet" / "index.noun").is_file()


def wordnet_folder(location: str | Path | None = None) -> Path | None:
    """The NLTK data folder to use: ``location``, else the first NLTK_DATA entry holding WordNet.

    Returns None when neither is given (NLTK's own default folders are then searched).
    Raises ``WordNetNotFound`` when a named folder does not hold WordNet.
    """
    if location:
        folder = Path(location).expanduser()
        if not _has_wordnet(folder):
            raise WordNetNotFound(f"no WordNet under {folder} (looked for corpora/wordnet.zip or corpora/wordnet/). {HOW_TO_GET}")
        return folder
    for entry in filter(None, os.environ.get("NLTK_DATA", "").split(os.pathsep)):
        if _has_wordnet(Path(entry).expanduser()):
            return Path(entry).expanduser()
    return None


_LOADED: dict[str, Any] = {}


def load_wordnet(location: str | Path | None = None) -> Any:
    """The NLTK WordNet reader (``nltk.corpus.wordnet``), loaded from ``location``.

    ``location``: a folder holding ``corpora/wordnet.zip``; None -> NLTK_DATA, then NLTK's defaults.
    The folder is put first on ``nltk.data.path`` (process-wide: NLTK has one search path).
    Raises ``WordNetNotFound`` with the way to get it when WordNet cannot be found.
    """
    folder = wordnet_folder(location)
    cache_key = str(folder.resolve()) if folder else ""
    if cache_key in _LOADED:
        return _LOADED[cache_key]
    import nltk

    inserted = folder is not None and str(folder) not in nltk.data.path
    if inserted:
        nltk.data.path.insert(0, str(folder))
    try:
        return _load(nltk, folder, cache_key)
    except WordNetNotFound:
        if inserted:  # a folder that failed must not stay on the process-wide search path
            nltk.data.path.remove(str(folder))
        raise


def _load(nltk: Any, folder: Path | None, cache_key: str) -> Any:
    where = folder / "corpora" / "wordnet.zip" if folder else "WordNet in NLTK_DATA or NLTK's default folders"
    try:
        for resource in ("corpora/wordnet.zip/wordnet/", "corpora/wordnet"):  # NLTK's own search order
            try:
                nltk.data.find(resource)
                break
            except LookupError:
                continue
        else:
            found = f"under {folder}" if folder else "in NLTK_DATA or NLTK's default folders"
            raise WordNetNotFound(f"no WordNet {found}. {HOW_TO_GET}") from None
        from nltk.corpus import wordnet

        with warnings.catch_warnings():
            # Without the multilingual OMW corpus NLTK warns once; argent uses English only.
            warnings.filterwarnings("ignore", message="The multilingual functions are not available")
            wordnet.ensure_loaded()
    except (zipfile.BadZipFile, zlib.error, EOFError, LookupError, UnicodeDecodeError) as err:
        # A truncated or corrupt zip fails inside NLTK's reader (no central directory, a bad CRC, a
        # short member); LookupError: a zip without the wordnet/ members NLTK reads.
        raise WordNetNotFound(f"{where}: not a readable WordNet ({type(err).__name__}: {err}); replace it with an "
                              f"intact copy. {HOW_TO_GET}") from None
    if wordnet.get_version() != "3.0":
        warnings.warn(f"WordNet {wordnet.get_version()} loaded; argent's design assumes 3.0", stacklevel=2)
    _LOADED[cache_key] = wordnet
    return wordnet


def stage_wordnet(zip_path: str | Path, folder: str | Path) -> Path:
    """Copy ``zip_path`` (WordNet in NLTK's ``wordnet/...`` zip layout) to ``folder/corpora/wordnet.zip``.

    Returns ``folder``. Atomic; a no-op when a file of the same size is already there.
    """
    zip_path, folder = Path(zip_path), Path(folder)
    if not zip_path.is_file():
        raise WordNetNotFound(f"{zip_path}: not a file. {HOW_TO_GET}")
    target = folder / "corpora" / "wordnet.zip"
    if target.is_file() and target.stat().st_size == zip_path.stat().st_size:
        return folder
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(zip_path, tmp)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return folder


def open_reader(zip_path: str | Path, folder: str | Path) -> Any:
    """A WordNet reader of its own over ``zip_path`` (staged into ``folder``, which must outlive it), beside
    ``nltk.corpus.wordnet``, which is one reader per process: to read two WordNets in one process (the
    subset generator reads the full database; its test compares the two)."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    stage_wordnet(zip_path, folder)
    if str(folder) not in nltk.data.path:
        nltk.data.path.append(str(folder))  # NLTK reads only under its search path
    root = nltk.data.find(str(Path("corpora") / "wordnet.zip" / "wordnet") + "/", paths=[str(folder)])
    with warnings.catch_warnings():
        # Without the multilingual OMW corpus NLTK warns once; argent uses English only.
        warnings.filterwarnings("ignore", message="The multilingual functions are not available")
        return WordNetCorpusReader(root, None)


SUBSET_FILE = "argent-subset.json"


def subset_info(reader: Any) -> dict[str, Any] | None:
    """What a WordNet subset covers (its ``argent-subset.json``: ``words``, ``noun_senses``, ``adj_senses``;
    the subset argent ships, argent/negatives/wordnet_subset.py); None for a full WordNet, which has none."""
    try:
        with reader.open(SUBSET_FILE) as fh:
            return json.loads(fh.read())
    except OSError:
        return None
