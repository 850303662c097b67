"""BM25 from a held copy of an FTS5 index's postings: a few array operations a query.

FTS5 reads every posting list of a query's words from its B-tree pages and decodes
them on each query; for MetaQA's 129k relationships that is most of a lexical leg's
time. :class:`Postings` holds one FTS5 index (one kind's ``{table}_fts``, every project)
as compressed sparse rows: per index token its rows (ascending rowid) and, per posting,
the part of FTS5's BM25 that does not depend on the query,
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * D / avgdl))``, computed as FTS5's ``bm25()``
computes it (``fts5_aux.c``). The postings come from the index itself (``fts5vocab``
``instance`` rows, counted per row and token), the row lengths from ``{table}_fts_docsize``
and the row count and average length from FTS5's averages record: the same tokens,
document frequencies and lengths as FTS5's. A query's score is then, word by word in
the query's order, ``idf * part`` summed per row (:func:`numpy.bincount` adds in that
order, as FTS5 does), so each score is the very double ``-bm25()`` returns for an OR
of the words (or an AND: :meth:`Postings.matches`); ties are broken by rowid, as the
FTS5 path orders them. Only the best rows are ordered (:meth:`Matches.best`: a score
that ``stop`` rows reach is read off each word's best postings, ``order``, and only
the rows at or above it are sorted).

The best rows are then checked as the FTS5 path joins them (:func:`checked`): the
project's, live, passing the filters. With no filter but "valid now" the held
:class:`Owners` answer (each indexed row's project and id, and the relationships'
validity bounds); with any other, one statement on the table.

Freshness: the postings are stamped with FTS5's structure and averages records
(``{table}_fts_data`` rows 10 and 1), which every committed write to the index
changes (a new segment, its delete markers included). A search reads both, with the
kind's epoch and whether a write run defers index upkeep (one statement,
:func:`state`), and uses the postings only when the stamp is equal; otherwise FTS5
answers as before while a background thread reads the postings again (no sooner than
:data:`_REBUILD_SPACING` times the last read's duration after it). The owners answer
only while no row waits in ``fts_stale`` (a row deleted in a write run keeps its index
entry until the run ends) and, for relationships, while the epoch is the one they
were read at (a new ``valid_to`` leaves the text, so the index, as it was); else the
table checks the rows, and the postings are read again. Inside a write transaction
FTS5 answers (only it sees the transaction's own pending writes). Each read is one
read transaction, so the postings, owners and stamp are of one snapshot, read a few
aggregates a table (:mod:`kgsearch.store.sqlite.fts5_read`: 0.3 s + 0.9 s of CPU on MetaQA
instead of 0.85 s + 2.0 s row by row).

Measured and not kept (2026-11-29, in-process alternation, load 7-9): scoring an OR's
rows only among each word's ``stop`` (then 8x, 64x) best postings, when a bound on every
other row's score stays below their cut, instead of a ``bincount`` over every row. Exact
(``scripts/dump_responses.py``: 2,600 responses, 0 differ) and the whole scoring was
left to 3 % of the sample graph's queries and under 1 % of MetaQA's, yet process CPU a
search rose: MetaQA 6.91 -> 7.15 ms, the REST sample graph 3.22 -> 3.39 ms (300 and
500 questions x 2 passes): a dozen numpy calls a level cost more than one
``bincount`` over the postings of a query's words.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from kgsearch.errors import StoreError
from kgsearch.model import Filters, Kind
from kgsearch.store.sqlite.connection import Connection
from kgsearch.store.sqlite.freshness import marks
from kgsearch.store.sqlite.fts5_read import instance_rows, owner_columns, row_lengths, varints
from kgsearch.store.sqlite.sql import chunked, filter_sql, iso, placeholders
from kgsearch.store.tracing import active, note

__all__ = ["HeldPostings", "Matches", "Postings", "checked", "read_postings", "varints"]

_log = logging.getLogger(__name__)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Stamp = tuple[bytes, ...]

# FTS5's bm25() constants.
K1 = 1.2
B = 0.75
_REBUILD_SPACING = 4.0
"""A background read of the postings starts no sooner than this many times the last
read's duration after it ended (a store written to all the time spends at most a fifth
of a core reading them, and FTS5 answers meanwhile)."""
# After a failed read, how long FTS5 answers alone before it is tried again.
_RETRY_SECONDS = 30.0


def stamp(db: Connection, kind: Kind) -> Stamp:
    """FTS5's averages and structure records of the kind's index (changed by every
    committed write to it)."""
    return state(db, kind)[0]


def state(db: Connection, kind: Kind, *, deferrable: bool = False) -> tuple[Stamp, str, bool]:
    """The index's :func:`stamp`, the kind's epoch (moved by every write to the kind)
    and, with ``deferrable``, whether rows wait in ``fts_stale`` for their index entries
    (a write run's deferral: a row deleted meanwhile is still indexed), in one
    statement (the search's marks, when it has read them: ``freshness.py``)."""
    found = marks(db)
    if found is not None and kind in found.stamps:
        waits = deferrable and found.waiting[kind]
        return found.stamps[kind], str(found.meta[f"epoch:{kind.value}"]), waits
    table = kind.table
    waiting = f"EXISTS (SELECT 1 FROM fts_stale WHERE tbl = '{table}')" if deferrable else "0"
    row = db.one(
        f"SELECT (SELECT block FROM {table}_fts_data WHERE id = 1), "
        f"(SELECT block FROM {table}_fts_data WHERE id = 10), "
        f"(SELECT value FROM meta WHERE key = 'epoch:{kind.value}'), {waiting}"
    )
    assert row is not None
    stamped = tuple(bytes(v) for v in (row[0], row[1]) if v is not None)
    return stamped, str(row[2]), bool(row[3])


@dataclass(frozen=True)
class Owners:
    """Whose each indexed row is: its project and id (fixed for a rowid while the index
    is unchanged) and, for relationships, the validity bounds of the rows that have
    any, as of the kind's epoch ``epoch``. Read from the table's (project, id) index,
    the bounds from the rows.

    Attributes:
        rowids: Rowids, ascending.
        codes: Each row's project number (``projects``).
        ids: The rows' ids, UTF-8, one after the other (``offsets`` delimit them).
        bounds: rowid → (valid_from, valid_to), as stored (ISO-8601 text).
    """

    rowids: IntArray
    codes: npt.NDArray[np.int32]
    projects: dict[str, int]
    ids: bytes
    offsets: IntArray
    bounds: dict[int, tuple[str | None, str | None]]
    epoch: str

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays and ids."""
        return self.rowids.nbytes + self.codes.nbytes + len(self.ids) + self.offsets.nbytes

    def owned(self, project: str, rowids: list[int]) -> list[str | None]:
        """Each row's id when it is the project's and valid now; else None."""
        code = self.projects.get(project)
        if code is None or not rowids:
            return [None] * len(rowids)
        wanted = np.asarray(rowids, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.rowids, wanted), len(self.rowids) - 1)
        ok = ((self.rowids[at] == wanted) & (self.codes[at] == code)).tolist()
        # each id's bytes, its bounds as Python ints (not a numpy scalar per row)
        starts, ends = self.offsets[at].tolist(), self.offsets[at + 1].tolist()
        ids, bounds = self.ids, self.bounds
        if not bounds:
            return [
                ids[lo:hi].decode() if mine else None
                for lo, hi, mine in zip(starts, ends, ok, strict=True)
            ]
        now = iso(datetime.now(UTC)) or ""
        out: list[str | None] = []
        for rowid, lo, hi, mine in zip(rowids, starts, ends, ok, strict=True):
            bound = bounds.get(rowid) if mine else None
            if bound is not None:  # as filter_sql words "valid now"
                start, end = bound
                mine = (start is None or start <= now) and (end is None or end > now)
            out.append(ids[lo:hi].decode() if mine else None)
        return out


def _read_owners(db: Connection, kind: Kind, epoch: str) -> Owners | None:
    """The kind's :class:`Owners` (inside the caller's read transaction); None when a
    bound is not text (then the table checks every row).

    Raises:
        StoreError: A row has no id.
    """
    rowids, codes, projects, ids, offsets = owner_columns(db, kind.table)
    bounds: dict[int, tuple[str | None, str | None]] = {}
    if kind is Kind.RELATIONSHIP:
        for batch in db.batches(
            "SELECT rowid, valid_from, valid_to FROM relationships "
            "WHERE valid_from IS NOT NULL OR valid_to IS NOT NULL"
        ):
            for r in batch:
                if not all(v is None or isinstance(v, str) for v in (r[1], r[2])):
                    return None
                bounds[int(r[0])] = (r[1], r[2])
    return Owners(
        rowids=rowids,
        codes=codes,
        projects=projects,
        ids=ids,
        offsets=offsets,
        bounds=bounds,
        epoch=epoch,
    )


@dataclass(frozen=True)
class Postings:
    """One FTS5 index held as arrays (see the module docstring).

    Attributes:
        stamp: The index's averages and structure records when it was read.
        terms: Index token → its number.
        starts: Where each token's postings begin (one more entry than tokens).
        rows: Each posting's row, as a position in ``rowids``.
        parts: Each posting's query-independent BM25 part.
        order: Each token's postings (their indexes into ``rows``) by part descending,
            then row, token after token.
        rowids: Each position's rowid, ascending.
        n_rows: FTS5's row count (what its idf counts against).
        avgdl: FTS5's average row length in tokens.
        owners: The rows' projects and ids (None: the table checks every row).
        deferrable: Whether the kind's index upkeep can be deferred (``fts_stale``).
        seconds: How long reading and building took.
    """

    stamp: Stamp
    terms: dict[str, int]
    starts: IntArray
    rows: npt.NDArray[np.int32]
    parts: FloatArray
    order: npt.NDArray[np.int32]
    rowids: IntArray
    n_rows: int
    avgdl: float
    owners: Owners | None = None
    deferrable: bool = False
    seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (the token dictionary adds about 100 per token)."""
        arrays = (self.starts, self.rows, self.parts, self.order, self.rowids)
        return sum(a.nbytes for a in arrays) + (self.owners.nbytes if self.owners else 0)

    def df(self, token: str) -> int:
        """How many rows hold the token."""
        number = self.terms.get(token)
        return 0 if number is None else int(self.starts[number + 1] - self.starts[number])

    def matches(
        self, tokens: Sequence[str], idfs: Sequence[float], *, conjunction: bool = False
    ) -> Matches:
        """The rows holding any of the tokens (all of them with ``conjunction``), each
        scored by summing ``idf * part`` in token order (FTS5's sum, to the bit)."""
        slices: list[tuple[int, int, float]] = []
        for token, idf in zip(tokens, idfs, strict=True):
            number = self.terms.get(token)
            if number is not None:
                slices.append((int(self.starts[number]), int(self.starts[number + 1]), idf))
            elif conjunction:
                return Matches(self, [], None, None)
        if len(slices) == 1 and not conjunction:
            return Matches(self, slices, None, None)
        if not slices:
            return Matches(self, [], None, None)
        rows = np.concatenate([self.rows[lo:hi] for lo, hi, _ in slices])
        weights = np.concatenate([idf * self.parts[lo:hi] for lo, hi, idf in slices])
        totals = np.bincount(rows, weights=weights, minlength=len(self.rowids)).astype(
            np.float64, copy=False
        )
        if not conjunction:
            return Matches(self, slices, totals, None)
        # every row holding all the tokens is among the rarest token's rows
        lo, hi, _ = min(slices, key=lambda s: s[1] - s[0])
        rarest = self.rows[lo:hi]
        counts = np.bincount(rows, minlength=len(self.rowids))
        return Matches(self, slices, totals, rarest[counts[rarest] == len(tokens)])


class Matches:
    """One query's matching rows, ranked as far as asked (:meth:`best`)."""

    def __init__(
        self,
        postings: Postings,
        slices: list[tuple[int, int, float]],
        totals: FloatArray | None,
        only: npt.NDArray[np.int32] | None,
    ) -> None:
        self.postings = postings
        # the rows' owners, when they answer for now (else the table checks the rows)
        self.owners: Owners | None = None
        self._slices = slices  # (first posting, end, idf) of each token found
        self._totals = totals  # scores by position (0: not matched); None for one token
        self._only = only  # with an AND: the matching positions (ascending)

    def best(self, stop: int) -> tuple[IntArray, FloatArray]:
        """(positions, scores) of the best ``stop`` rows (fewer when fewer match), by
        score descending then position: a longer cut starts with a shorter one."""
        held = self.postings
        if not self._slices:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        if self._totals is None:  # one token: its rows (ascending) and scores
            lo, hi, idf = self._slices[0]
            scores = idf * held.parts[lo:hi]
            if stop >= hi - lo:
                return _first(held.rows[lo:hi].astype(np.int64), scores, stop)
            # idf * part keeps the order of the parts: the stop-th best part's score is
            # the stop-th best score
            kth = idf * held.parts[held.order[lo + stop - 1]]
            picked = np.flatnonzero(scores >= kth)
            return _first(held.rows[lo:hi][picked].astype(np.int64), scores[picked], stop, kth)
        if self._only is not None:  # an AND: the few rows holding every token
            positions = self._only.astype(np.int64)
            return _first(positions, self._totals[positions], stop)
        # a score any stop rows reach: the stop-th best among each token's best rows
        heads = np.unique(
            np.concatenate(
                [held.rows[held.order[lo : min(hi, lo + stop)]] for lo, hi, _ in self._slices]
            )
        )
        if len(heads) < stop:  # every matching row is among them
            return _first(heads.astype(np.int64), self._totals[heads], stop)
        cut = np.sort(self._totals[heads])[len(heads) - stop]
        positions = np.flatnonzero(self._totals >= cut)
        return _first(positions, self._totals[positions], stop)


def _first(
    positions: IntArray, scores: FloatArray, stop: int, kth: float | None = None
) -> tuple[IntArray, FloatArray]:
    """The best ``stop`` of these rows (``positions`` ascending), by score descending
    then position: of the rows tied with the stop-th best score (``kth`` when known),
    only the first are sorted (a frequent word's rows tie by thousands)."""
    if len(scores) > 4 * stop:
        if kth is None:  # a sort, not np.partition: slow on many equal values
            kth = float(np.sort(scores)[len(scores) - stop])
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: stop - len(above)]
        keep = np.concatenate([above, tied])
        positions, scores = positions[keep], scores[keep]
    order = np.lexsort((positions, -scores))[:stop]
    return positions[order], scores[order]


def checked(
    db: Connection,
    project: str,
    kind: Kind,
    matches: Matches,
    limit: int,
    filters: Filters | None,
) -> list[tuple[int, str, float]]:
    """(rowid, id, score) of the best ``limit`` matching rows that are the project's,
    live and pass the filters, best first: the best rows are checked (by the held
    owners when nothing but "valid now" filters them, else on the table, as the FTS5
    path joins them), then four times as many, until enough pass or no row is left."""
    owners = None if filter_sql(kind, filters, current_only=False)[0] else matches.owners
    where, params = filter_sql(kind, filters) if owners is None else ("", [])
    if active():
        note("best rows checked " + ("in memory" if owners is not None else "on the table"))
    out: list[tuple[int, str, float]] = []
    done, stop = 0, limit
    while len(out) < limit:
        positions, scores = matches.best(stop)
        rowids = matches.postings.rowids[positions[done:]].tolist()
        ids: dict[int, str] = {}
        if owners is not None:  # no filter but "valid now": the held owners answer
            found = owners.owned(project, rowids)
            ids = {r: i for r, i in zip(rowids, found, strict=True) if i is not None}
        for part in chunked(rowids) if owners is None else ():
            ids.update(
                (int(r[0]), str(r[1]))
                for r in db.all(
                    f"SELECT t.rowid, t.id FROM {kind.table} t WHERE t.rowid IN "
                    f"({placeholders(len(part))}) AND t.project = ? AND t.deleted_at IS NULL"
                    f"{where}",
                    (*part, project, *params),
                )
            )
        values = scores[done:].tolist()
        out.extend((r, ids[r], s) for r, s in zip(rowids, values, strict=True) if r in ids)
        if len(positions) < stop:
            break  # every matching row was checked
        done, stop = stop, stop * 4
    return out[:limit]


def read_postings(db: Connection, kind: Kind) -> Postings:
    """Read one kind's FTS5 index into :class:`Postings` (in one read transaction).

    Raises:
        StoreError: The index could not be read, or its vocabulary tables disagree.
    """
    started = time.perf_counter()
    table = f"{kind.table}_fts"
    if f"{table}_i" not in db.temp_tables:
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_i USING "
            f"fts5vocab(main, {table}, instance)"
        )
        db.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_r USING fts5vocab(main, {table}, row)"
        )
        if not db.in_transaction:
            db.temp_tables.add(f"{table}_i")
    deferrable = db.one("SELECT 1 FROM sqlite_master WHERE name = 'fts_stale'") is not None
    with db.transaction(immediate=False):
        marks, epoch, _ = state(db, kind)
        owners = _read_owners(db, kind, epoch)
        vocab = db.all(f"SELECT term, doc, cnt FROM temp.{table}_r")
        counts = np.fromiter((int(r[2]) for r in vocab), dtype=np.int64, count=len(vocab))
        instances = instance_rows(db, f"temp.{table}_i", [str(r[0]) for r in vocab], counts)
        rowids, lengths = row_lengths(db, f"{table}_docsize")
    docs = np.fromiter((int(r[1]) for r in vocab), dtype=np.int64, count=len(vocab))
    if int(counts.sum()) != len(instances):
        raise StoreError(f"{table}: its vocabulary and its instances disagree")
    # one posting per run of equal rowids inside a token's instances
    term_of = np.repeat(np.arange(len(vocab), dtype=np.int64), counts)
    new = np.ones(len(instances), dtype=np.bool_)
    new[1:] = (instances[1:] != instances[:-1]) | (term_of[1:] != term_of[:-1])
    heads = np.flatnonzero(new)
    tf = np.diff(np.append(heads, len(instances))).astype(np.float64)
    posting_rowids = instances[heads]
    per_term = np.bincount(term_of[heads], minlength=len(vocab))
    if not np.array_equal(per_term, docs):
        raise StoreError(f"{table}: its vocabulary and its instances disagree")
    averages = varints(marks[0] if marks else b"") or [0]
    n_rows, total = averages[0], sum(averages[1:])
    avgdl = total / n_rows if n_rows and total else 1.0
    rows = np.searchsorted(rowids, posting_rowids)
    if len(rows) and (
        rows.max() >= len(rowids) or not np.array_equal(rowids[rows], posting_rowids)
    ):
        raise StoreError(f"{table}: a posting's row has no size")
    length = lengths[rows]
    # as fts5_aux.c: (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))
    parts = (tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * length / avgdl))
    starts = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(docs, out=starts[1:])
    order = np.lexsort((rows, -parts, term_of[heads])).astype(np.int32)
    return Postings(
        stamp=marks,
        terms={str(r[0]): i for i, r in enumerate(vocab)},
        starts=starts,
        rows=rows.astype(np.int32),
        parts=parts,
        order=order,
        rowids=rowids,
        n_rows=int(n_rows),
        avgdl=float(avgdl),
        owners=owners,
        deferrable=deferrable,
        seconds=time.perf_counter() - started,
    )


@dataclass
class _Held:
    postings: Postings | None = None
    building: bool = False
    ready_at: float = float("-inf")


class HeldPostings:
    """A store's held postings per kind, read in the background when first needed and
    again when stale (module docstring).

    Args:
        background: Whether reads run in a background thread (False: the asking
            search reads them and answers with them; tests).
    """

    def __init__(self, background: bool = True) -> None:
        self.background = background
        self._held: dict[Kind, _Held] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        """Drop every held index."""
        with self._lock:
            self._held.clear()

    def fresh(
        self, db: Connection, kind: Kind, reader: Callable[[], Connection]
    ) -> tuple[Postings, Owners | None] | None:
        """The kind's postings if they match its index now, with their owners if those
        answer for now too; None when stale. A read starts (when none runs and the
        last ended long enough ago) when either is stale; ``reader`` gives the reading
        thread its connection."""
        if db.in_transaction:
            return None
        with self._lock:
            held = self._held.setdefault(kind, _Held())
        found, current = self._usable(db, kind, held.postings)
        if current:
            return found
        with self._lock:
            due = not held.building and time.monotonic() >= held.ready_at
            held.building = held.building or due
        if due and self.background:
            threading.Thread(
                target=self._read, args=(held, kind, reader), name="kgsearch-held-bm25", daemon=True
            ).start()
        elif due:
            self._read(held, kind, reader)
            return self._usable(db, kind, held.postings)[0]
        return found

    @staticmethod
    def _usable(
        db: Connection, kind: Kind, postings: Postings | None
    ) -> tuple[tuple[Postings, Owners | None] | None, bool]:
        """(the postings and the owners that answer now, or None; whether reading
        them again would change nothing)."""
        if postings is None:
            return None, False
        marks, epoch, waiting = state(db, kind, deferrable=postings.deferrable)
        if marks != postings.stamp:
            return None, False
        owners = postings.owners
        if owners is not None and kind is Kind.RELATIONSHIP and epoch != owners.epoch:
            return (postings, None), False  # bounds may have moved: the table checks
        return (postings, None if waiting else owners), True

    def warm(self, db: Connection, kind: Kind) -> Postings | None:
        """Read the kind's postings here and now unless fresh ones are held (warm-up:
        benchmarks, ``wait_for_index``); None inside a write transaction or when the
        read failed."""
        if db.in_transaction:
            return None
        with self._lock:
            held = self._held.setdefault(kind, _Held())
        found, current = self._usable(db, kind, held.postings)
        if found is not None and current:
            return found[0]
        with self._lock:
            held.building = True
        self._read(held, kind, lambda: db)
        return held.postings

    def _read(self, held: _Held, kind: Kind, reader: Callable[[], Connection]) -> None:
        # a background thread has no caller to raise to: a failure (a store closed
        # under it included) leaves the kind to FTS5 for a while, and is logged
        try:
            postings = read_postings(reader(), kind)
        except Exception as exc:
            _log.warning("BM25 on %s answered by FTS5: postings not held: %s", kind.table, exc)
            with self._lock:
                held.building, held.ready_at = False, time.monotonic() + _RETRY_SECONDS
            return
        with self._lock:
            held.postings, held.building = postings, False
            held.ready_at = time.monotonic() + _REBUILD_SPACING * postings.seconds
